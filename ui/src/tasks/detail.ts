/**
 * What the detail pane keeps of a task beyond its summary: the whole record (arguments, result, the
 * question with its form) and the timeline. The record is fetched again only when something it holds
 * can have changed; the timeline grows by the events newer than the last one held.
 */
import type { TaskEvent, TaskSummary } from '../lib/types';

/**
 * Changes exactly when the record holds something new: another task, a result stored, a question
 * asked or answered. Progress and status messages are in the summary already.
 */
export function recordKey(t: TaskSummary): string {
  return JSON.stringify([t.id, t.has_result, t.question?.key ?? null]);
}

/** The id to ask `task_events` for events after: the newest held, 0 when none is. */
export function eventsCursor(held: readonly TaskEvent[]): number {
  return held.length ? held[held.length - 1]!.id : 0;
}

/**
 * The held timeline with the newer events added, oldest first. Answers can arrive out of order and
 * overlap (two fetches in flight, or a full fetch racing an incremental one), so events are merged
 * by id: one held is kept, never duplicated. Returns `held` itself when nothing is new, so the
 * timeline does not re-render.
 */
export function mergeEvents(held: readonly TaskEvent[], newer: readonly TaskEvent[]): readonly TaskEvent[] {
  const last = eventsCursor(held);
  const fresh = newer.filter((e) => e.id > last);
  if (fresh.length === newer.length && fresh.every((e, i) => i === 0 || fresh[i - 1]!.id < e.id)) {
    return fresh.length ? [...held, ...fresh] : held;
  }
  // Overlapping or unordered: rebuild by id (rare; a race between fetches).
  const byId = new Map<number, TaskEvent>();
  for (const e of held) byId.set(e.id, e);
  let added = false;
  for (const e of newer) {
    if (!byId.has(e.id)) {
      byId.set(e.id, e);
      added = true;
    }
  }
  if (!added) return held;
  return [...byId.values()].sort((a, b) => a.id - b.id);
}
