/**
 * The task list as stretches loaded by position (`task_window`): a few runs of rows, each at its
 * place in the filter's list, and the list's length. The rest of the list is not held, so a list
 * scrolled anywhere in 100,000 tasks holds the rows near the viewport and no more. Live changes
 * patch the runs: a row that joins or leaves moves every row after it by one, which is exact when
 * the task's place in the order falls inside a run (or before a run at the top, or after one at
 * the end); when it falls in a gap between runs, the runs after the gap move and the row itself
 * comes with the page that reads it. When not even that can be told (a task deleted that no run
 * held, under a filter whose order it cannot be placed in), the runs are `lost`: still shown,
 * and read again where the list is looked at. Pure functions, so the bookkeeping is tested without a
 * webview.
 */
import type { Purged, TaskFilter, TaskSummary } from '../lib/types';
import { hasSearch, insertionPoint, listOrder, matchesFilter, pinnedFirst, type Change } from './history';

export type Run = { readonly start: number; readonly items: readonly TaskSummary[] };

export type Rows = {
  /** Sorted by `start`, apart (never touching: touching runs are one). */
  readonly runs: readonly Run[];
  /** How many rows the whole list has, loaded or not. */
  readonly total: number;
};

export const NO_ROWS: Rows = { runs: [], total: 0 };

const endOf = (r: Run) => r.start + r.items.length;

/** The run holding row `i`, by bisection. */
function runAt(rows: Rows, i: number): number {
  const { runs } = rows;
  let lo = 0;
  let hi = runs.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (endOf(runs[mid]!) <= i) lo = mid + 1;
    else hi = mid;
  }
  return lo < runs.length && runs[lo]!.start <= i ? lo : -1;
}

/** Row `i`, when it is loaded. */
export function rowAt(rows: Rows, i: number): TaskSummary | undefined {
  const k = runAt(rows, i);
  return k < 0 ? undefined : rows.runs[k]!.items[i - rows.runs[k]!.start];
}

/** Where the task is in the list, when its row is loaded; -1 otherwise. */
export function indexOf(rows: Rows, id: string | null): number {
  if (id === null) return -1;
  for (const r of rows.runs) {
    const i = r.items.findIndex((t) => t.id === id);
    if (i >= 0) return r.start + i;
  }
  return -1;
}

export function byId(rows: Rows, id: string | null): TaskSummary | undefined {
  const i = indexOf(rows, id);
  return i < 0 ? undefined : rowAt(rows, i);
}

/** The rows loaded in `start..end`, in order (those not loaded left out). */
export function loadedIn(rows: Rows, start: number, end: number): TaskSummary[] {
  const out: TaskSummary[] = [];
  for (const r of rows.runs) {
    const from = Math.max(start, r.start);
    const to = Math.min(end, endOf(r));
    for (let i = from; i < to; i++) out.push(r.items[i - r.start]!);
  }
  return out;
}

/** The loaded rows from the list's top, up to its first gap. */
export function prefix(rows: Rows): readonly TaskSummary[] {
  const first = rows.runs[0];
  return first !== undefined && first.start === 0 ? first.items : [];
}

export function loadedCount(rows: Rows): number {
  return rows.runs.reduce((n, r) => n + r.items.length, 0);
}

/** The first stretch of `start..end` (within the list) with no row loaded, or null. */
export function firstGap(rows: Rows, start: number, end: number): { start: number; end: number } | null {
  let at = Math.max(0, start);
  const stop = Math.min(end, rows.total);
  for (const r of rows.runs) {
    if (at >= stop) return null;
    if (endOf(r) <= at) continue;
    if (r.start > at) return { start: at, end: Math.min(r.start, stop) };
    at = endOf(r);
  }
  return at < stop ? { start: at, end: stop } : null;
}

/** Builds sorted, apart runs from runs that may touch (none overlap). */
function merged(runs: readonly Run[]): Run[] {
  const out: Run[] = [];
  for (const r of runs) {
    if (r.items.length === 0) continue;
    const last = out[out.length - 1];
    if (last !== undefined && endOf(last) === r.start) out[out.length - 1] = { start: last.start, items: last.items.concat(r.items) };
    else out.push(r);
  }
  return out;
}

/**
 * A page read at `start` put in place: its rows replace whatever was held at those positions.
 * `ended`: the page was shorter than asked, so the list ends where it does. A row of the page
 * that a run already holds elsewhere (the list moved between the reads) keeps the page's place.
 */
export function putPage(rows: Rows, start: number, items: readonly TaskSummary[], ended: boolean): Rows {
  const end = start + items.length;
  const ids = new Set(items.map((t) => t.id));
  const kept: Run[] = [];
  for (const r of rows.runs) {
    if (ended && r.start >= end) continue;
    const before = r.items.slice(0, Math.max(0, Math.min(r.items.length, start - r.start)));
    const after = r.items.slice(Math.max(0, end - r.start));
    if (before.length > 0) kept.push({ start: r.start, items: before });
    if (after.length > 0 && !ended) kept.push({ start: Math.max(r.start, end), items: after });
  }
  const clean = kept.map((r) => (r.items.some((t) => ids.has(t.id)) ? null : r)).filter((r): r is Run => r !== null);
  const runs = merged([...clean, { start, items }].sort((a, b) => a.start - b.start));
  const total = ended ? end : Math.max(rows.total, end);
  return { runs, total };
}

/** Forgets the rows outside `start..end`: what bounds what the list holds. */
export function keepOnly(rows: Rows, start: number, end: number): Rows {
  const runs: Run[] = [];
  let changed = false;
  for (const r of rows.runs) {
    const from = Math.max(start, r.start);
    const to = Math.min(end, endOf(r));
    if (from >= to) {
      changed = true;
      continue;
    }
    if (from === r.start && to === endOf(r)) runs.push(r);
    else {
      changed = true;
      runs.push({ start: from, items: r.items.slice(from - r.start, to - r.start) });
    }
  }
  return changed ? { runs, total: rows.total } : rows;
}

/** Where a task not held goes: inside a run (exact), or in the gap before run `gap` (`runs.length`: after the last). */
type Place = { run: number; at: number } | { gap: number };

function place(rows: Rows, t: TaskSummary, order: (a: TaskSummary, b: TaskSummary) => number): Place {
  const { runs } = rows;
  for (let k = 0; k < runs.length; k++) {
    const r = runs[k]!;
    if (order(t, r.items[0]!) < 0) return k === 0 && r.start === 0 ? { run: 0, at: 0 } : { gap: k };
    if (order(t, r.items[r.items.length - 1]!) < 0) return { run: k, at: insertionPoint(r.items, t, order) };
  }
  const last = runs[runs.length - 1];
  if (last !== undefined && endOf(last) >= rows.total) return { run: runs.length - 1, at: last.items.length };
  if (last === undefined && rows.total === 0) return { run: -1, at: 0 };
  return { gap: runs.length };
}

/** Runs from `k` on moved by `by` rows. */
function shiftFrom(runs: Run[], k: number, by: number): void {
  for (let j = k; j < runs.length; j++) runs[j] = { start: runs[j]!.start + by, items: runs[j]!.items };
}

/** A working copy: runs and the length, changed in place by the steps below. */
class Draft {
  runs: Run[];
  total: number;
  /** Some run may be off by a row or more: read again. */
  lost = false;
  /** A row joined or left: positions after it moved. */
  moved = false;
  /**
   * Where each held task is, built on the first look-up and dropped when rows join or leave: a
   * batch of a hundred progress reports against a thousand held rows looks each up at once
   * instead of searching every run for each.
   */
  #where: Map<string, { k: number; i: number }> | null = null;
  /** Item arrays this draft made, so changed in place: a batch copies each run once, not per change. */
  #own = new Set<readonly TaskSummary[]>();
  constructor(
    rows: Rows,
    readonly order: (a: TaskSummary, b: TaskSummary) => number,
  ) {
    this.runs = rows.runs.slice();
    this.total = rows.total;
  }
  get rows(): Rows {
    return { runs: merged(this.runs), total: this.total };
  }
  find(id: string): { k: number; i: number } | null {
    if (this.#where === null) {
      const where = new Map<string, { k: number; i: number }>();
      this.runs.forEach((r, k) =>
        r.items.forEach((t, i) => {
          // The first place, as a search from the top would find.
          if (!where.has(t.id)) where.set(t.id, { k, i });
        }),
      );
      this.#where = where;
    }
    return this.#where.get(id) ?? null;
  }
  /** Run `k`'s items, as an array of this draft's own to change. */
  #items(k: number): TaskSummary[] {
    const r = this.runs[k]!;
    if (this.#own.has(r.items)) return r.items as TaskSummary[];
    const items = r.items.slice();
    this.#own.add(items);
    this.runs[k] = { start: r.start, items };
    return items;
  }
  /** The whole list is held: a task not held is not in it. */
  whole(): boolean {
    if (this.runs.length === 0) return this.total === 0;
    return this.runs.length === 1 && this.runs[0]!.start === 0 && endOf(this.runs[0]!) >= this.total;
  }
  /** Only the top is held, so a task not held is below it, where nothing is held to move. */
  topOnly(): boolean {
    return this.runs.length === 0 || (this.runs.length === 1 && this.runs[0]!.start === 0);
  }
  removeAt(k: number, i: number): void {
    this.#where = null;
    const items = this.#items(k);
    items.splice(i, 1);
    if (items.length === 0) this.runs.splice(k, 1);
    else k += 1;
    shiftFrom(this.runs, k, -1);
    this.total = Math.max(0, this.total - 1);
    this.moved = true;
  }
  /** A row not held left the list, from where `t` places it. */
  removeUnheld(t: TaskSummary): void {
    const p = place({ runs: this.runs, total: this.total }, t, this.order);
    this.total = Math.max(0, this.total - 1);
    this.moved = true;
    // Inside a run it would be held: it was in the gap that run's place falls in, or after it.
    const k = 'gap' in p ? p.gap : p.run + 1;
    shiftFrom(this.runs, k, -1);
  }
  /** A row joins the list where the order puts it. */
  insert(t: TaskSummary): void {
    this.#where = null;
    const p = place({ runs: this.runs, total: this.total }, t, this.order);
    this.total += 1;
    this.moved = true;
    if ('gap' in p) {
      shiftFrom(this.runs, p.gap, 1);
      return;
    }
    if (p.run < 0) {
      this.runs = [{ start: 0, items: [t] }];
      return;
    }
    this.#items(p.run).splice(p.at, 0, t);
    shiftFrom(this.runs, p.run + 1, 1);
  }
  replace(k: number, i: number, t: TaskSummary): void {
    this.#items(k)[i] = t;
  }
  /** The length moved by a change nobody could place: positions after it are not known. */
  unknown(): void {
    if (!this.topOnly()) this.lost = true;
  }
}

function purgedIn(p: Purged, f: TaskFilter): boolean | null {
  if (f.statuses.length > 0 && !f.statuses.includes(p.status)) return false;
  if (f.server !== null && p.server !== f.server) return false;
  if (f.tool !== null && p.tool !== f.tool) return false;
  if (f.waiting) return false;
  if (hasSearch(f) || f.created_from !== null || f.created_until !== null) return null;
  return true;
}

export type Patched = {
  rows: Rows;
  /** `total` follows the changes exactly (false under a search: the store is to count). */
  exact: boolean;
  /** A row joined or left somewhere: what a page read meanwhile may or may not have seen. */
  moved: boolean;
  /** Some runs may be off: read the shown rows again. */
  lost: boolean;
};

/**
 * Applies live changes to the loaded runs, as `patchLoaded` does to a prefix: a task that joins
 * the filter goes where the order puts it, one that leaves goes, a deleted one goes; under a
 * search only tasks already held are patched (whether another one matches is the store's to say).
 */
export function patchRows(rows: Rows, changes: readonly Change[], deleted: readonly Purged[], f: TaskFilter): Patched {
  if (changes.length === 0 && deleted.length === 0) return { rows, exact: true, moved: false, lost: false };
  const d = new Draft(rows, listOrder(pinnedFirst(f)));
  let exact = true;
  const gone = new Set<string>();
  for (const p of deleted) {
    gone.add(p.id);
    const held = d.find(p.id);
    if (held !== null) {
      d.removeAt(held.k, held.i);
      continue;
    }
    // Not in a whole list means not in this filter.
    if (d.whole()) continue;
    const m = purgedIn(p, f);
    if (m === null) exact = false;
    if (m === false) continue;
    // In the list (or maybe, under a search or a time range) but not held: which rows moved is not known.
    if (m === true) d.total = Math.max(0, d.total - 1);
    d.moved = true;
    d.unknown();
  }
  for (const { task, before, isNew } of changes) {
    if (gone.has(task.id)) continue;
    const isIn = matchesFilter(task, f);
    const held = d.find(task.id);
    const current = held === null ? undefined : d.runs[held.k]!.items[held.i]!;
    if (current !== undefined && task.updated_at < current.updated_at) continue;
    let wasIn: boolean | null;
    if (current !== undefined) wasIn = true;
    else if (isNew) wasIn = false;
    else if (before !== undefined) wasIn = matchesFilter(before, f);
    // An old task nobody here held (pinned from another window): its membership did not change.
    else wasIn = isIn;
    if (isIn === null || wasIn === null) exact = false;
    if (held !== null && current !== undefined) {
      if (isIn === false) {
        d.removeAt(held.k, held.i);
      } else if (d.order(current, task) === 0 && current.pinned === task.pinned) {
        d.replace(held.k, held.i, task);
      } else {
        // Its place moved (a pin under a filter): out, and in where it goes now.
        d.removeAt(held.k, held.i);
        d.insert(task);
      }
      continue;
    }
    // Under a search a task not held is the store's to place (`admitRows`).
    if (isIn === null) continue;
    // A whole list not holding it means it was not in it.
    if (d.whole()) {
      if (isIn) d.insert(task);
      continue;
    }
    if (wasIn === true && isIn === false) {
      if (before !== undefined) d.removeUnheld(before);
      else {
        d.total = Math.max(0, d.total - 1);
        d.moved = true;
        d.unknown();
      }
    } else if (wasIn !== true && isIn) {
      d.insert(task);
    } else if (wasIn === true && isIn && before !== undefined && before.pinned !== task.pinned && pinnedFirst(f)) {
      d.removeUnheld(before);
      d.insert(task);
    } else if (wasIn === true && isIn && before === undefined && !isNew && pinnedFirst(f)) {
      // A pin of a task nobody here held: it moved between the segments, from where is not known.
      d.moved = true;
      d.unknown();
    }
  }
  const out = d.rows;
  return { rows: { runs: out.runs, total: Math.max(out.total, lastEnd(out)) }, exact, moved: d.moved, lost: d.lost };
}

/**
 * Applies the store's word on changed tasks under a search (`task_matches`): each of `matched` is
 * in the list now, each of `unmatched` is not (their records as last seen, to place them). A task
 * held is patched, moved or taken out; one not held joins when its place falls inside a run (it
 * would be held, were it in the list already) and otherwise comes with the page that reads it,
 * which leaves the runs after that place unsure: `lost`.
 */
export function admitRows(rows: Rows, matched: readonly TaskSummary[], unmatched: readonly TaskSummary[], f: TaskFilter): Patched {
  if (matched.length === 0 && unmatched.length === 0) return { rows, exact: true, moved: false, lost: false };
  const d = new Draft(rows, listOrder(pinnedFirst(f)));
  for (const t of unmatched) {
    const held = d.find(t.id);
    if (held !== null) d.removeAt(held.k, held.i);
    else if (!d.whole()) {
      // Inside a run it would be held, were it in: it was not. In a gap, maybe.
      const p = place({ runs: d.runs, total: d.total }, t, d.order);
      if ('gap' in p) settle(d, p);
    }
  }
  for (const t of matched) {
    const held = d.find(t.id);
    const current = held === null ? undefined : d.runs[held.k]!.items[held.i]!;
    if (held !== null && current !== undefined) {
      if (t.updated_at < current.updated_at) continue;
      if (d.order(current, t) === 0 && current.pinned === t.pinned) d.replace(held.k, held.i, t);
      else {
        d.removeAt(held.k, held.i);
        d.insert(t);
      }
      continue;
    }
    const p = place({ runs: d.runs, total: d.total }, t, d.order);
    if ('gap' in p) settle(d, p);
    else d.insert(t);
  }
  const out = d.rows;
  return { rows: { runs: out.runs, total: Math.max(out.total, lastEnd(out)) }, exact: false, moved: d.moved, lost: d.lost };
}

/** A row that may or may not be in the gap before run `gap`: the runs after it are unsure. */
function settle(d: Draft, p: { gap: number }): void {
  d.moved = true;
  if (p.gap < d.runs.length) d.lost = true;
}

function lastEnd(rows: Rows): number {
  const last = rows.runs[rows.runs.length - 1];
  return last === undefined ? 0 : endOf(last);
}
