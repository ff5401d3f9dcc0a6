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
