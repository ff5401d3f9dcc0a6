/**
 * The task list as pages from the store (`task_page`), and how live changes patch what is loaded:
 * pure functions, so the bookkeeping is tested without a webview. The list's order is the store's:
 * newest first, and under a filter the pinned tasks before the others (`history.rs` in src-tauri).
 */
import type { MatchRange, PageCursor, Purged, StatusCounts, TaskFilter, TaskStatus, TaskSummary } from '../lib/types';
import { isTerminal } from '../lib/types';
import type { StatusFilter } from './taskList';

export const ALL_TASKS: TaskFilter = {
  statuses: [],
  server: null,
  tool: null,
  created_from: null,
  created_until: null,
  waiting: false,
  search: null,
};

/** The filter the toolbar's choices mean. */
export function filterOf(status: StatusFilter, server: string | null, search: string): TaskFilter {
  const statuses: TaskStatus[] =
    status === 'all' ? [] : status === 'active' ? ['working', 'input_required'] : status === 'needs_input' ? ['input_required'] : [status];
  const words = search.trim();
  return { ...ALL_TASKS, statuses, server, search: words === '' ? null : words };
}

export function hasSearch(f: TaskFilter): boolean {
  return f.search !== null && f.search.trim() !== '';
}

/** Mirrors `TaskFilter::pinned_first`: any narrowing puts the pinned tasks first. */
export function pinnedFirst(f: TaskFilter): boolean {
  return (
    f.statuses.length > 0 || f.server !== null || f.tool !== null || f.created_from !== null || f.created_until !== null || f.waiting || hasSearch(f)
  );
}

/** Whether the task is in the filter's list, or `null` when only the store can tell (a search). */
export function matchesFilter(t: TaskSummary, f: TaskFilter): boolean | null {
  if (f.statuses.length > 0 && !f.statuses.includes(t.status)) return false;
  if (f.server !== null && t.server !== f.server) return false;
  if (f.tool !== null && t.tool !== f.tool) return false;
  if (f.created_from !== null && Date.parse(t.created_at) < Date.parse(f.created_from)) return false;
  if (f.created_until !== null && Date.parse(t.created_at) >= Date.parse(f.created_until)) return false;
  if (f.waiting && !(t.status === 'input_required' && t.question !== null)) return false;
  return hasSearch(f) ? null : true;
}

/** The list's order; ties in the same millisecond fall back to the id, so the order never flickers. */
export function listOrder(pinned: boolean): (a: TaskSummary, b: TaskSummary) => number {
  return (a, b) => {
    if (pinned && a.pinned !== b.pinned) return a.pinned ? -1 : 1;
    if (a.created_at !== b.created_at) return a.created_at < b.created_at ? 1 : -1;
    return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
  };
}

/** How many tasks the filter's list holds, from the store's counts under it. */
export function totalOf(c: StatusCounts, f: TaskFilter): number {
  if (f.waiting) return c.waiting;
  if (f.statuses.length === 0) return c.total;
  return f.statuses.reduce((n, s) => n + c[s], 0);
}

export const NO_COUNTS: StatusCounts = { working: 0, input_required: 0, completed: 0, failed: 0, cancelled: 0, waiting: 0, total: 0 };

/** Waiting for the user; a deleted task (`Purged`) has ended, so never. */
function waits(t: TaskSummary | Purged | undefined): boolean {
  return t !== undefined && 'question' in t && t.status === 'input_required' && t.question !== null;
}

/** The counts after a task moved from `before` (absent: it is new) to `after` (absent: it is gone). */
export function patchCounts(c: StatusCounts, before: TaskSummary | Purged | undefined, after: TaskSummary | undefined): StatusCounts {
  if (before === undefined && after === undefined) return c;
  if (before !== undefined && after !== undefined && before.status === after.status && waits(before) === waits(after)) return c;
  const next = { ...c };
  if (before !== undefined) {
    next[before.status] = Math.max(0, next[before.status] - 1);
    if (waits(before)) next.waiting = Math.max(0, next.waiting - 1);
    next.total = Math.max(0, next.total - 1);
  }
  if (after !== undefined) {
    next[after.status] += 1;
    if (waits(after)) next.waiting += 1;
    next.total += 1;
  }
  return next;
}

/** What the list has loaded: a prefix of the filter's list, and whether it is the whole list. */
export type Loaded = {
  readonly items: readonly TaskSummary[];
  /** Every task of the list is loaded. */
  readonly done: boolean;
  /** How many tasks the list holds, loaded or not. */
  readonly total: number;
};

/** A change the engine store saw: the task before (absent when it is new or was never loaded). */
export type Change = { task: TaskSummary; before: TaskSummary | undefined; isNew: boolean };

/** Where the page after the loaded prefix starts: after its last task. */
export function cursorOf(items: readonly TaskSummary[], f: TaskFilter): PageCursor | null {
  const last = items[items.length - 1];
  if (last === undefined) return null;
  return { pinned: pinnedFirst(f) ? last.pinned : null, before: last.id };
}

/**
 * Applies live changes to the loaded prefix. A task joins where the order puts it when that is
 * within the prefix (or the prefix is the whole list); one beyond it comes with a later page. A
 * task that left the filter (a status filter, and it moved on) leaves the list; a deleted one goes.
 * `total` follows wherever the filter can be told here; under a search `exact` is false and the
 * caller asks the store for the counts again.
 */
export function patchLoaded(
  loaded: Loaded,
  changes: readonly Change[],
  deleted: readonly Purged[],
  f: TaskFilter,
): { loaded: Loaded; exact: boolean } {
  if (changes.length === 0 && deleted.length === 0) return { loaded, exact: true };
  const order = listOrder(pinnedFirst(f));
  let items = loaded.items.slice();
  let total = loaded.total;
  let exact = true;
  const at = new Map(items.map((t, i) => [t.id, i]));
  let removed = false;
  const gone = new Set<string>();
  for (const p of deleted) {
    gone.add(p.id);
    if (at.has(p.id)) {
      total -= 1;
      removed = true;
    } else if (!loaded.done) {
      // Not in a whole list means not in this filter; beyond a prefix, it may be.
      const m = purgedIn(p, f);
      if (m === null) exact = false;
      else if (m) total -= 1;
    }
  }
  if (removed) {
    items = items.filter((t) => !gone.has(t.id));
    at.clear();
    items.forEach((t, i) => at.set(t.id, i));
  }

  for (const { task, before, isNew } of changes) {
    if (gone.has(task.id)) continue;
    const isIn = matchesFilter(task, f);
    const i = at.get(task.id);
    const current = i === undefined ? undefined : items[i];
    if (current !== undefined && task.updated_at < current.updated_at) continue;
    let wasIn: boolean | null;
    if (current !== undefined) wasIn = true;
    else if (isNew) wasIn = false;
    else if (before !== undefined) wasIn = matchesFilter(before, f);
    // An old task nobody here held (pinned from another window): its membership did not change.
    else wasIn = isIn;
    if (isIn === null || wasIn === null) exact = false;
    else total += Number(isIn) - Number(wasIn);
    if (isIn === false) {
      if (i !== undefined) {
        items.splice(i, 1);
        at.clear();
        items.forEach((t, k) => at.set(t.id, k));
      }
      continue;
    }
    if (i !== undefined && current !== undefined && order(current, task) === 0 && current.pinned === task.pinned) {
      items[i] = task;
      continue;
    }
    // Under a search only tasks already found are shown: whether another one matches is the store's to say.
    if (i === undefined && isIn === null) continue;
    if (i !== undefined) items.splice(i, 1);
    const pos = insertionPoint(items, task, order);
    if (pos < items.length || loaded.done) items.splice(pos, 0, task);
    at.clear();
    items.forEach((t, k) => at.set(t.id, k));
  }
  return { loaded: { items, done: loaded.done, total: Math.max(total, items.length) }, exact };
}

/**
 * Whether a change can have moved a task into or out of a search: the store indexes a task's words
 * when it is made, asks, is answered and ends (`crates/store/src/search.rs`), so progress, a
 * message while it works or a pin leaves it where it was, and the store need not be asked.
 */
export function searchMayMove(c: Change): boolean {
  const { task, before } = c;
  if (c.isNew || before === undefined) return true;
  return before.status !== task.status || (before.question?.key ?? null) !== (task.question?.key ?? null);
}

/**
 * Applies the store's word on changed tasks under a search (`task_matches`): each of `matched` is
 * in the list now and joins where the order puts it (within the prefix, or anywhere in a whole
 * list), or, already there, keeps whichever record is newer; each of `unmatched` is not, and
 * leaves. `total` follows the rows that came and went; the caller has the store count again.
 */
export function admitMatches(loaded: Loaded, matched: readonly TaskSummary[], unmatched: readonly string[], f: TaskFilter): Loaded {
  if (matched.length === 0 && unmatched.length === 0) return loaded;
  const order = listOrder(pinnedFirst(f));
  const out = new Set(unmatched);
  const items = loaded.items.filter((t) => !out.has(t.id));
  let total = loaded.total - (loaded.items.length - items.length);
  for (const task of matched) {
    const i = items.findIndex((t) => t.id === task.id);
    const current = i < 0 ? undefined : items[i];
    if (current !== undefined && task.updated_at < current.updated_at) continue;
    if (current !== undefined && order(current, task) === 0 && current.pinned === task.pinned) {
      items[i] = task;
      continue;
    }
    if (current !== undefined) items.splice(i, 1);
    const pos = insertionPoint(items, task, order);
    // Beyond a prefix it comes with a later page (one it left by moving there is still counted).
    if (pos >= items.length && !loaded.done) continue;
    items.splice(pos, 0, task);
    if (current === undefined) total += 1;
  }
  if (items.length === loaded.items.length && items.every((t, k) => t === loaded.items[k])) return loaded;
  return { items, done: loaded.done, total: loaded.done ? items.length : Math.max(total, items.length) };
}

function purgedIn(p: Purged, f: TaskFilter): boolean | null {
  if (f.statuses.length > 0 && !f.statuses.includes(p.status)) return false;
  if (f.server !== null && p.server !== f.server) return false;
  if (f.tool !== null && p.tool !== f.tool) return false;
  if (f.waiting) return false;
  if (hasSearch(f) || f.created_from !== null || f.created_until !== null) return null;
  return true;
}

/** Where `t` goes among `items`, which are in `order`: after every row that sorts with it or before. */
export function insertionPoint(items: readonly TaskSummary[], t: TaskSummary, order: (a: TaskSummary, b: TaskSummary) => number): number {
  let lo = 0;
  let hi = items.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (order(items[mid]!, t) <= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Appends a page to the loaded prefix, skipping tasks a live change already put there. */
export function appendPage(loaded: Loaded, page: readonly TaskSummary[], done: boolean): Loaded {
  // A set of the page's ids (a few hundred) looked up from the loaded rows, not a set of every
  // loaded row: at 100,000 rows that set took 13 ms of each page's frame in a long scroll (4 ms so).
  const incoming = new Set(page.map((t) => t.id));
  const have = new Set<string>();
  for (const t of loaded.items) if (incoming.has(t.id)) have.add(t.id);
  const fresh = have.size === 0 ? page : page.filter((t) => !have.has(t.id));
  const items = loaded.items.concat(fresh);
  return { items, done, total: done ? items.length : Math.max(loaded.total, items.length) };
}

/** A snippet's text cut into plain and matched parts, for components to render as text. */
export type Part = { text: string; hit: boolean };

export function highlightParts(text: string, matches: readonly MatchRange[]): Part[] {
  const parts: Part[] = [];
  let at = 0;
  const sorted = [...matches].sort((a, b) => a.start - b.start);
  for (const m of sorted) {
    const start = Math.max(at, Math.min(m.start, text.length));
    const end = Math.max(start, Math.min(m.end, text.length));
    if (end === start) continue;
    if (start > at) parts.push({ text: text.slice(at, start), hit: false });
    parts.push({ text: text.slice(start, end), hit: true });
    at = end;
  }
  if (at < text.length) parts.push({ text: text.slice(at), hit: false });
  return parts;
}

/** Whether any of the tasks is still running (a delete would refuse it unless forced). */
export function anyLive(tasks: readonly (TaskSummary | undefined)[]): boolean {
  return tasks.some((t) => t !== undefined && !isTerminal(t.status));
}

/** Local midnight of a `yyyy-mm-dd` date input, as the RFC 3339 moment the store compares with. */
export function startOfDay(date: string): string | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(date);
  if (!m) return null;
  const d = new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  return Number.isNaN(d.getTime()) ? null : d.toISOString();
}
