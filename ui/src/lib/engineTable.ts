/**
 * The tables the engine store keeps (`engine.svelte.ts`): the task list newest first with its index
 * and waiting count, the servers by name, bounded log lines. Pure functions, so the store's
 * bookkeeping is tested without a webview.
 */
import type { TaskSummary } from './types';

/** Newest first; equal times (same millisecond) fall back to the id so the order never flickers. */
export function newerFirst(a: TaskSummary, b: TaskSummary): number {
  if (a.created_at !== b.created_at) return a.created_at < b.created_at ? 1 : -1;
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}

/**
 * The task list as the UI keeps it: newest first, with each task's position and the number of
 * questions waiting for an answer kept alongside, so applying a batch looks at the batch's tasks
 * only (plus one copy of the list's references). With 10,000 tasks and a batch every few frames,
 * anything that visits every task per batch shows up as dropped frames.
 */
export type TaskTable = {
  readonly list: readonly TaskSummary[];
  readonly index: ReadonlyMap<string, number>;
  /** Tasks whose question has arrived (`needsAnswer`). */
  readonly waiting: number;
};

export const EMPTY_TABLE: TaskTable = { list: [], index: new Map(), waiting: 0 };

function indexOf(list: readonly TaskSummary[]): Map<string, number> {
  const index = new Map<string, number>();
  list.forEach((t, i) => index.set(t.id, i));
  return index;
}

/**
 * Applies a batch of whole records: a known id is replaced where it stands (unless the record the
 * table holds is newer: a command's reply can arrive after the batch that already carried a later
 * state of the same task), an unknown one is inserted in order. Returns the same table when nothing
 * changed, so views that compare by identity do not re-render.
 */
export function applyTasks(table: TaskTable, updates: readonly TaskSummary[]): TaskTable {
  let list: TaskSummary[] | null = null;
  let waiting = table.waiting;
  const fresh = new Map<string, TaskSummary>();
  for (const u of updates) {
    const i = table.index.get(u.id);
    if (i === undefined) {
      fresh.set(u.id, u); // the last record for an id wins
      continue;
    }
    const current = (list ?? table.list)[i]!;
    if (u === current || u.updated_at < current.updated_at) continue;
    list ??= table.list.slice();
    list[i] = u;
    waiting += Number(needsAnswer(u)) - Number(needsAnswer(current));
  }
  if (fresh.size === 0) return list ? { list, index: table.index, waiting } : table;
  const added = [...fresh.values()].sort(newerFirst);
  for (const t of added) waiting += Number(needsAnswer(t));
  // New tasks are rare next to updates (one per run), so rebuilding the index is fine here.
  const merged = mergeSorted(list ?? table.list, added);
  return { list: merged, index: indexOf(merged), waiting };
}

/** Removes tasks (deleted from the store); the same table when none of them is in it. */
export function removeTasks(table: TaskTable, ids: readonly string[]): TaskTable {
  const gone = new Set(ids.filter((id) => table.index.has(id)));
  if (gone.size === 0) return table;
  const list = table.list.filter((t) => !gone.has(t.id));
  return { list, index: indexOf(list), waiting: list.reduce((n, t) => n + Number(needsAnswer(t)), 0) };
}

function mergeSorted(a: readonly TaskSummary[], b: readonly TaskSummary[]): TaskSummary[] {
  const out: TaskSummary[] = new Array(a.length + b.length);
  let i = 0;
  let j = 0;
  let k = 0;
  while (i < a.length && j < b.length) out[k++] = newerFirst(a[i]!, b[j]!) <= 0 ? a[i++]! : b[j++]!;
  while (i < a.length) out[k++] = a[i++]!;
  while (j < b.length) out[k++] = b[j++]!;
  return out;
}

/** Replaces or appends by name, keeping the engine's order for known servers. */
export function applyByName<T extends { name: string }>(list: readonly T[], updates: readonly T[]): T[] {
  if (updates.length === 0) return list as T[];
  const pending = new Map(updates.map((u) => [u.name, u]));
  const next = list.map((s) => {
    const u = pending.get(s.name);
    if (!u) return s;
    pending.delete(s.name);
    return u;
  });
  return [...next, ...pending.values()];
}

/** Appends lines, keeping only the newest `max`: a chatty server must not grow the page without bound. */
export function appendBounded<T>(lines: readonly T[], more: readonly T[], max: number): T[] {
  const all = lines.concat(more);
  return all.length > max ? all.slice(all.length - max) : all;
}

/** The user can act on it now: the server asked, and the question has arrived. */
export function needsAnswer(t: TaskSummary): boolean {
  return t.status === 'input_required' && t.question !== null;
}
