import { isTerminal, type TaskSummary, type TaskStatus } from '../lib/types';

export type StatusFilter = 'all' | 'active' | 'needs_input' | TaskStatus;

export const STATUS_FILTERS: { value: StatusFilter; label: string }[] = [
  { value: 'all', label: 'All statuses' },
  { value: 'active', label: 'Running' },
  { value: 'needs_input', label: 'Needs input' },
  { value: 'completed', label: 'Completed' },
  { value: 'failed', label: 'Failed' },
  { value: 'cancelled', label: 'Cancelled' },
];

export type TaskFilter = { status: StatusFilter; server: string | null; query: string };

function statusMatches(t: TaskSummary, f: StatusFilter): boolean {
  if (f === 'all') return true;
  if (f === 'active') return !isTerminal(t.status);
  if (f === 'needs_input') return t.status === 'input_required';
  return t.status === f;
}

/** Case-insensitive; every word must appear in the tool, server, message or id. */
export function matchesQuery(t: TaskSummary, query: string): boolean {
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  if (words.length === 0) return true;
  const hay = [t.tool, t.server, t.status_message ?? '', t.progress?.message ?? '', t.id].join('\n').toLowerCase();
  return words.every((w) => hay.includes(w));
}

export function filterTasks(list: readonly TaskSummary[], f: TaskFilter): TaskSummary[] {
  if (f.status === 'all' && f.server === null && f.query.trim() === '') return list as TaskSummary[];
  return list.filter((t) => statusMatches(t, f.status) && (f.server === null || t.server === f.server) && matchesQuery(t, f.query));
}

/** Running tasks count up to `now`; finished ones show how long they took. */
export function elapsedMs(t: TaskSummary, now: number): number {
  const start = Date.parse(t.created_at);
  const end = isTerminal(t.status) ? Date.parse(t.updated_at) : now;
  return end - start;
}

/** 0..100 when the server gave a total, null for an indeterminate bar. */
export function progressPercent(t: TaskSummary): number | null {
  const p = t.progress;
  if (!p || p.total === null || !(p.total > 0)) return null;
  return Math.max(0, Math.min(100, (p.progress / p.total) * 100));
}

/**
 * The one line that says what is happening: the server's message, else the progress message.
 * A completed task says nothing: its last status message ("Waiting for you to pick…") is stale.
 */
export function taskMessage(t: TaskSummary): string {
  if (t.status === 'failed' && t.error) return t.error.message;
  if (t.status === 'completed') return '';
  return t.status_message ?? t.progress?.message ?? '';
}
