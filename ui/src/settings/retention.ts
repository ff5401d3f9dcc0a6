/**
 * The retention form: each limit is a whole number or empty (no limit). What the user typed is
 * kept as text until it parses, so a half-typed value is never saved.
 */
import type { RetentionSettings } from '../lib/bindings/RetentionSettings';

export type RetentionField = keyof RetentionSettings;

export const RETENTION_FIELDS: { key: RetentionField; label: string; unit: string; max: number }[] = [
  { key: 'keep_days', label: 'Remove finished tasks older than', unit: 'days', max: 36_600 },
  { key: 'keep_tasks', label: 'Keep at most', unit: 'finished tasks', max: 4_294_967_295 },
  { key: 'max_mb', label: 'Keep finished tasks within', unit: 'MB', max: 1_048_576 },
];

export type Parsed = { ok: true; value: number | null } | { ok: false; error: string };

/** One limit as typed: empty is no limit; otherwise a whole number from 1 to `max`. */
export function parseLimit(text: string, max: number): Parsed {
  const t = text.trim();
  if (t === '') return { ok: true, value: null };
  if (!/^\d+$/.test(t)) return { ok: false, error: 'a whole number, or empty for no limit' };
  const n = Number(t);
  if (n < 1) return { ok: false, error: 'at least 1, or empty for no limit' };
  if (n > max) return { ok: false, error: `at most ${max.toLocaleString('en')}` };
  return { ok: true, value: n };
}

export type RetentionText = Record<RetentionField, string>;

export function retentionText(r: RetentionSettings): RetentionText {
  const text = (v: number | null) => (v === null ? '' : String(v));
  return { keep_days: text(r.keep_days), keep_tasks: text(r.keep_tasks), max_mb: text(r.max_mb) };
}

/** The settings the form says, or the error of each field that does not parse. */
export function parseRetention(
  text: RetentionText,
): { ok: true; value: RetentionSettings } | { ok: false; errors: Partial<Record<RetentionField, string>> } {
  const value: RetentionSettings = { keep_days: null, keep_tasks: null, max_mb: null };
  const errors: Partial<Record<RetentionField, string>> = {};
  for (const f of RETENTION_FIELDS) {
    const p = parseLimit(text[f.key], f.max);
    if (p.ok) value[f.key] = p.value;
    else errors[f.key] = p.error;
  }
  return Object.keys(errors).length > 0 ? { ok: false, errors } : { ok: true, value };
}

/** The policy in one sentence. */
export function describeRetention(r: RetentionSettings): string {
  const parts: string[] = [];
  if (r.keep_days !== null) parts.push(`for ${plural(r.keep_days, 'day')}`);
  if (r.keep_tasks !== null) parts.push(`up to ${r.keep_tasks.toLocaleString('en')} of them`);
  if (r.max_mb !== null) parts.push(`within ${r.max_mb.toLocaleString('en')} MB`);
  if (parts.length === 0) return 'Every task is kept.';
  return `Finished tasks are kept ${parts.join(', ')}; older ones are removed first. Pinned tasks and tasks still running or waiting are always kept.`;
}

function plural(n: number, word: string): string {
  return `${n.toLocaleString('en')} ${word}${n === 1 ? '' : 's'}`;
}
