/**
 * The task list under the toolbar's filter, read from the store by position as the list scrolls
 * (`show`): only the stretch on screen and a margin around it are asked for (`task_window`), so a
 * drag to the middle of 100,000 tasks reads that stretch and nothing before it, and only the rows
 * near the viewport are held (`rows.ts`; the rest are placeholders of a row's height). Live
 * changes patch the held rows and the counts (`patchRows`), with the counts under the filter and,
 * for a search, where each row on screen matched. Under a search only the store can tell whether a
 * changed task is in the list: it is asked (`task_matches`), and its answer patches the list in
 * turn (`admitRows`), so a task that came to match joins and one that no longer does leaves
 * without searching again.
 */
import { engine, type EngineStore } from '../lib/engine.svelte';
import { call, errorText, inApp, searchSnippets, taskCounts } from '../lib/ipc';
import type { Purged, Snippet, StatusCounts, TaskFilter, TaskSummary } from '../lib/types';
import { ALL_TASKS, hasSearch, matchesFilter, NO_COUNTS, pinnedFirst, searchMayMove, totalOf, type Change } from './history';
import { admitRows, byId, firstGap, keepOnly, NO_ROWS, patchRows, prefix, putPage, type Patched, type Rows } from './rows';

/** Rows read beyond the shown ones in the direction of the scroll, so a scroll rarely waits. */
const LEAD = 200;
/** How far around the shown rows the pager reads ahead once they are in. */
const AHEAD = 400;
/** Rows held on each side of the shown ones; farther ones are dropped (what bounds memory). */
const KEEP = 1000;
/** The most one request asks for (the command's own bound). */
const MAX_PAGE = 2000;
/** How long after a change the store is asked for counts it alone can tell (under a search). */
const RECOUNT_MS = 400;
/** The most changed tasks one membership question names (the command's own bound). */
const MAX_MATCHES = 2000;
/** How long after the view last jumped the list counts as dragged (reading only what is shown). */
const DRAGGING_MS = 150;
/** The least time between two reads while the list is dragged. */
const DRAG_READ_MS = 100;
/** Two far jumps this close are one fast drag (a frame is 16.7 ms; a slow one, more). */
const RACING_MS = 50;
const now = () => performance.now();
/** Tasks looked up by id kept after their rows went (selected and checked ones). */
const SEEN = 10_000;

/** What the pager reads from the store: the app's commands, or a test's stand-in. */
export type HistoryReads = {
  /** Whether there is a store to read at all (in the app). */
  readonly live: boolean;
  /** The rows at positions `offset..offset + limit` of the list (fewer at its end). */
  window(filter: TaskFilter, offset: number, limit: number): Promise<TaskSummary[]>;
  counts(filter: TaskFilter): Promise<StatusCounts>;
  snippets(ids: string[], search: string): Promise<Snippet[]>;
  /** Which of `ids` are in the list under `filter` now. */
  matches(filter: TaskFilter, ids: string[]): Promise<string[]>;
};

export const APP_READS: HistoryReads = {
  live: inApp,
  window: (filter, offset, limit) => call('task_window', { filter, offset, limit }),
  counts: taskCounts,
  snippets: searchSnippets,
  matches: (filter, ids) => call('task_matches', { filter, ids }),
};

/** What waits for a page on its way: the engine store's changes, and the store's word on a search. */
type Queued = { changes: readonly Change[]; deleted: readonly Purged[] } | { matched: TaskSummary[]; unmatched: TaskSummary[] };

export class TaskPager {
  /** The rows held, each at its place in the list, and the list's length. */
  rows: Rows = $state.raw(NO_ROWS);
  filter: TaskFilter = $state.raw(ALL_TASKS);
  /** Counts per status under the filter (its statuses aside), for the status choices. */
  counts: StatusCounts = $state.raw(NO_COUNTS);
  /** The first page under the current filter has arrived. */
  ready = $state(false);
  error: string | null = $state(null);
  /** Where the search matched, per task on screen; `null` when it matched where no snippet shows. */
  snippets: Readonly<Record<string, Snippet | null>> = $state.raw({});

  #generation = 0;
  #inflight = -1;
  /** The rows on screen (with the list's overscan). */
  #view = { start: 0, end: 1 };
  /** Tasks looked up by id (`byId`), as last seen: selected or checked ones whose rows went. */
  #seen = new Map<string, TaskSummary>();
  /** When the view last jumped by more than it shows (a drag): while it does, only what is shown is read. */
  #jumpedAt = -Infinity;
  #settle: ReturnType<typeof setTimeout> | null = null;
  /** The view jumped far again right after a jump: a drag faster than any read can keep up with. */
  #racing = false;
  /** When the last read was sent. */
  #readAt = -Infinity;
  /** The list was last scrolled up: what is read beyond the shown rows is above them. */
  #up = false;
  /** `rows.total` is the store's word (its counts, or a page that reached the end). */
  #known = false;
  /** Some held rows may be off by a row or more (a change nobody could place): read again. */
  #lost = false;
  #recount: ReturnType<typeof setTimeout> | null = null;
  #unsubscribe: () => void;
  #source: EngineStore;
  #reads: HistoryReads;
  /** The whole list's first screen was taken from the engine store's start-up read. */
  #seeded = false;
  /**
   * Changes that came while a page was on its way. The page may have been read before them or
   * between them (a task made and finished in one breath), and a change to a task beyond the
   * loaded rows is dropped: they are applied once the page is in, in the order they came, newer
   * writes winning. The store's answers on a search wait the same way, since a page read before
   * a task stopped matching would bring its row back. When one of them moved rows, the page's
   * own place may already count it or not: the rows are read again.
   */
  #queued: Queued[] | null = null;
  /** Changed tasks under a search whose membership the store is to be asked about, latest record each. */
  #toAsk = new Map<string, TaskSummary>();
  /** The question on its way (one at a time, so a burst of changes makes few of them). */
  #asking: Map<string, TaskSummary> | null = null;
  /** Tasks of the question on its way that changed or went since it was sent: its answer on them is old. */
  #stale = new Set<string>();

  constructor(source: EngineStore = engine, reads: HistoryReads = APP_READS) {
    this.#source = source;
    this.#reads = reads;
    this.#unsubscribe = source.onChanges((changes, deleted) => this.#follow(changes, deleted));
  }

  dispose(): void {
    this.#unsubscribe();
    if (this.#recount !== null) clearTimeout(this.#recount);
    if (this.#settle !== null) clearTimeout(this.#settle);
  }

  /** The rows held from the top (up to the first not held) and the list's length. */
  get loaded(): { items: readonly TaskSummary[]; total: number } {
    return { items: prefix(this.rows), total: this.rows.total };
  }

  /** Shows the list under `filter`, from its first page. The same filter again changes nothing. */
  setFilter(filter: TaskFilter): void {
    if (this.#generation > 0 && JSON.stringify(filter) === JSON.stringify(this.filter)) return;
    this.#restart(filter);
  }

  #restart(filter: TaskFilter): void {
    this.#generation += 1;
    this.filter = filter;
    this.rows = NO_ROWS;
    this.snippets = {};
    this.ready = false;
    this.error = null;
    this.#inflight = -1;
    this.#known = false;
    this.#lost = false;
    // A new list is shown from its top.
    this.#view = { start: 0, end: Math.max(1, this.#view.end - this.#view.start) };
    // The new first page is read after them, and a question about the old filter means nothing.
    this.#queued = null;
    this.#toAsk = new Map();
    this.#asking = null;
    this.#stale = new Set();
    if (!this.#reads.live) return;
    void this.#counts();
    this.#fill();
  }

  /** The list shows rows `start..end`: have them loaded, and forget the ones far from them. */
  show(start: number, end: number): void {
    const from = Math.max(0, start);
    if (from !== this.#view.start) this.#up = from < this.#view.start;
    const moved = Math.abs(from - this.#view.start);
    const shown = Math.max(1, end - start);
    // Moved by more than it shows: a drag or a jump, not a scroll by rows.
    if (moved > shown) {
      // Past a page of what is shown and a screen more within a frame of the last jump: a read
      // sent now would land after the view moved past its rows.
      this.#racing = moved > 2 * shown && now() - this.#jumpedAt < RACING_MS;
      this.#jumpedAt = now();
    } else if (moved > 0) this.#racing = false;
    this.#view = { start: from, end: Math.max(end, start + 1, 1) };
    this.#fill();
  }

  /** The list shows rows up to `end` from its top. */
  want(end: number): void {
    this.show(0, end);
  }

  /**
   * A task of the list by id: held, or last seen held. The selected and checked tasks are looked
   * up here, and the list may have dropped their rows since (scrolled far away): the detail pane
   * and a delete of the checked tasks still have them.
   */
  byId(id: string | null): TaskSummary | undefined {
    if (id === null) return undefined;
    const held = byId(this.rows, id);
    if (held === undefined) return this.#seen.get(id);
    if (this.#seen.get(id) !== held) {
      this.#seen.delete(id);
      this.#seen.set(id, held);
      // Bounded: the oldest lookups go first.
      if (this.#seen.size > SEEN) this.#seen.delete(this.#seen.keys().next().value!);
    }
    return held;
  }

  /** What to read next: the shown rows not held, then the margin ahead of them, then behind. */
  #next(): { offset: number; limit: number; lost: boolean } | null {
    const { start, end } = this.#view;
    if (this.#lost) return { offset: start, limit: Math.min(MAX_PAGE, end - start + LEAD), lost: true };
    // Until the store has said how long the list is, it may go on past what is held.
    const bounded: Rows = this.#known ? this.rows : { runs: this.rows.runs, total: Number.MAX_SAFE_INTEGER };
    if (!this.ready) return { offset: start, limit: Math.min(MAX_PAGE, end - start + LEAD), lost: false };
    const shown = firstGap(bounded, start, end);
    const since = now() - this.#jumpedAt;
    if (since < DRAGGING_MS) {
      // A read costs the page's thread its request and its answer, and one made every frame of a
      // drag took frames past a refresh: while dragged, a read at most every DRAG_READ_MS; once
      // the drag stops, the rows around are read.
      const wait = Math.max(DRAGGING_MS - since, DRAG_READ_MS - (now() - this.#readAt));
      if (this.#settle === null) {
        this.#settle = setTimeout(() => {
          this.#settle = null;
          this.#fill();
        }, wait + 1);
      }
      if (now() - this.#readAt < DRAG_READ_MS) return null;
      // Each read costs the page's thread its answer and a frame its time; the rows come once the
      // drag slows or stops (the timer above).
      if (this.#racing) return null;
      // Dragged far each frame: rows read ahead would be passed over before they are shown, and
      // each page costs the page's thread its parsing; what is shown now, and a screen more.
      if (shown === null) return null;
      const more = end - start;
      const from = this.#up ? Math.max(0, shown.start - more) : shown.start;
      return { offset: from, limit: Math.min(MAX_PAGE, shown.end - from + (this.#up ? 0 : more)), lost: false };
    }
    if (shown !== null && this.#up) {
      // The last gap on screen, and the rows above it, where the scroll goes.
      let last = shown;
      for (let g: typeof shown | null = shown; g !== null; g = firstGap(bounded, g.end, end)) last = g;
      const from = Math.max(0, last.start - LEAD, last.end - MAX_PAGE);
      return { offset: from, limit: last.end - from, lost: false };
    }
    if (shown !== null) return { offset: shown.start, limit: Math.min(MAX_PAGE, shown.end - shown.start + LEAD), lost: false };
    const ahead = firstGap(bounded, end, end + AHEAD);
    if (ahead !== null) return { offset: ahead.start, limit: Math.min(MAX_PAGE, Math.max(LEAD, ahead.end - ahead.start)), lost: false };
    const behind = firstGap(bounded, Math.max(0, start - AHEAD), start);
    if (behind !== null) {
      const from = Math.max(behind.start, behind.end - LEAD);
      return { offset: from, limit: behind.end - from, lost: false };
    }
    return null;
  }

  #fill(): void {
    const generation = this.#generation;
    if (!this.#reads.live || this.#inflight === generation) return;
    if (!this.#seeded && this.rows.runs.length === 0 && !pinnedFirst(this.filter)) {
      // At start the whole list's top is what the engine store just read: shown with it, in the
      // same frame the start-up mark waits for, and not read twice.
      this.#seeded = true;
      this.#inflight = generation;
      void this.#source.start().then(() => {
        if (generation !== this.#generation) return;
        this.#inflight = -1;
        const first = this.#source.firstPage();
        if (first !== null && this.rows.runs.length === 0) {
          this.rows = putPage(this.rows, 0, first.items, first.done);
          if (first.done) this.#known = true;
          this.ready = true;
        }
        this.#afterPage();
      });
      return;
    }
    const next = this.#next();
    if (next === null) return;
    this.#inflight = generation;
    if (next.lost) this.#lost = false;
    const { offset, limit } = next;
    this.#readAt = now();
    this.#reads.window(this.filter, offset, limit).then(
      (items) => {
        if (generation !== this.#generation) return;
        this.#inflight = -1;
        const ended = items.length < limit;
        // Read again because the held rows were unsure: only this page is sure now.
        const base: Rows = next.lost ? { runs: [], total: this.rows.total } : this.rows;
        const { start, end } = this.#view;
        if (!next.lost && !ended && (offset + items.length < start - AHEAD || offset > end + AHEAD)) {
          // Dragged past it meanwhile: holding it would only cost the page's thread an update.
          this.#afterPage();
          return;
        }
        if (ended && items.length === 0 && offset > 0) {
          // The list is shorter than it was thought to be: how much, the counts say.
          this.rows = keepOnly({ runs: base.runs, total: Math.min(base.total, offset) }, 0, offset);
          void this.#counts();
        } else {
          this.rows = putPage(base, offset, items, ended);
        }
        if (ended) this.#known = true;
        this.ready = true;
        this.#afterPage();
      },
      (e) => {
        if (generation !== this.#generation) return;
        this.#inflight = -1;
        this.error = `Could not load tasks: ${errorText(e)}`;
        this.ready = true;
        // Not read again by itself: the next scroll asks.
        this.#flush();
      },
    );
  }

  /** A page is in: the changes that waited for it, the rows far from view dropped, the next read. */
  #afterPage(): void {
    if (this.#flush()) this.#lost = true;
    const { start, end } = this.#view;
    this.rows = keepOnly(this.rows, Math.max(0, start - KEEP), end + KEEP);
    this.#fill();
  }

  async #counts(): Promise<void> {
    const generation = this.#generation;
    try {
      const counts = await this.#reads.counts(this.filter);
      if (generation !== this.#generation) return;
      this.counts = counts;
      const total = totalOf(counts, this.filter);
      // Rows held past the end the store counts went meanwhile.
      this.rows = keepOnly({ runs: this.rows.runs, total }, 0, total);
      this.#known = true;
      this.#fill();
    } catch (e) {
      if (generation === this.#generation) this.error = `Could not count tasks: ${errorText(e)}`;
    }
  }

  #follow(changes: readonly Change[], deleted: readonly Purged[]): void {
    this.#later({ changes: changes.slice(), deleted: deleted.slice() });
  }

  /** Applies now, or once the page on its way is in. */
  #later(q: Queued): void {
    if (this.#inflight === this.#generation) (this.#queued ??= []).push(q);
    else {
      this.#run(q);
      this.#fill();
    }
  }

  /** Whether rows joined or left. */
  #run(q: Queued): boolean {
    const patched = 'changes' in q ? this.#apply(q.changes, q.deleted) : this.#admit(q.matched, q.unmatched);
    if (patched.lost) this.#lost = true;
    return patched.moved;
  }

  /** Whether what waited moved rows. */
  #flush(): boolean {
    const q = this.#queued;
    this.#queued = null;
    let moved = false;
    if (q !== null) for (const item of q) moved = this.#run(item) || moved;
    return moved;
  }

  #apply(changes: readonly Change[], deleted: readonly Purged[]): Patched {
    const search = hasSearch(this.filter);
    // What the list showed of a task the engine store did not hold (a row a page brought).
    const held = search ? new Map(changes.map((c) => [c.task.id, this.byId(c.task.id)])) : null;
    for (const p of deleted) this.#seen.delete(p.id);
    for (const { task } of changes) {
      const seen = this.#seen.get(task.id);
      if (seen !== undefined && seen.updated_at <= task.updated_at) this.#seen.set(task.id, task);
    }
    const patched = patchRows(this.rows, changes, deleted, this.filter);
    this.rows = patched.rows;
    const moved = changes.some((c) => c.isNew || (c.before !== undefined && c.before.status !== c.task.status));
    if (!patched.exact || moved || deleted.length > 0) this.#scheduleRecount();
    if (held !== null) this.#ask(changes.map((c) => (c.before === undefined && !c.isNew ? { ...c, before: held.get(c.task.id) } : c)), deleted);
    return patched;
  }

  /**
   * Under a search, asks the store which of the changed tasks are in the list now. A task the
   * filter's other parts already rule out is out, and was taken out by `patchLoaded`. A task that
   * changed again while asked about is asked about again: the answer on its way is old.
   */
  #ask(changes: readonly Change[], deleted: readonly Purged[]): void {
    for (const change of changes) {
      const { task } = change;
      if (!searchMayMove(change)) {
        // Nothing the search reads changed: a question about it still holds, with this record.
        if (this.#toAsk.has(task.id)) this.#toAsk.set(task.id, task);
        if (this.#asking?.has(task.id)) this.#asking.set(task.id, task);
        continue;
      }
      if (this.#asking?.has(task.id)) this.#stale.add(task.id);
      if (matchesFilter(task, this.filter) === false) this.#toAsk.delete(task.id);
      else this.#toAsk.set(task.id, task);
    }
    for (const p of deleted) {
      if (this.#asking?.has(p.id)) this.#stale.add(p.id);
      this.#toAsk.delete(p.id);
    }
    this.#sendAsk();
  }

  #sendAsk(): void {
    if (this.#asking !== null || this.#toAsk.size === 0 || !this.#reads.live) return;
    const generation = this.#generation;
    const asking = new Map<string, TaskSummary>();
    for (const [id, task] of this.#toAsk) {
      if (asking.size >= MAX_MATCHES) break;
      asking.set(id, task);
    }
    for (const id of asking.keys()) this.#toAsk.delete(id);
    this.#asking = asking;
    this.#stale = new Set();
    this.#reads.matches(this.filter, [...asking.keys()]).then(
      (found) => {
        if (generation !== this.#generation) return;
        const stale = this.#stale;
        this.#asking = null;
        this.#stale = new Set();
        const yes = new Set(found);
        const matched: TaskSummary[] = [];
        const unmatched: TaskSummary[] = [];
        for (const [id, task] of asking) {
          // Asked about again (it changed since) or gone: the next answer, or the delete, says.
          if (stale.has(id)) continue;
          if (yes.has(id)) matched.push(task);
          else unmatched.push(task);
        }
        this.#later({ matched, unmatched });
        this.#sendAsk();
      },
      (e) => {
        if (generation !== this.#generation) return;
        this.#asking = null;
        this.#stale = new Set();
        this.error = `Could not tell whether changed tasks match the search: ${errorText(e)}`;
      },
    );
  }

  #admit(matched: readonly TaskSummary[], unmatched: readonly TaskSummary[]): Patched {
    const patched = admitRows(this.rows, matched, unmatched, this.filter);
    if (patched.rows !== this.rows) {
      this.rows = patched.rows;
      this.#scheduleRecount();
    }
    return patched;
  }

  #scheduleRecount(): void {
    if (this.#recount !== null || !this.#reads.live) return;
    this.#recount = setTimeout(() => {
      this.#recount = null;
      void this.#counts();
    }, RECOUNT_MS);
  }

  /** Fetches where the search matched for the rows shown that have no snippet yet. */
  snippetsFor(ids: readonly string[]): void {
    const search = this.filter.search;
    if (!this.#reads.live || search === null || ids.length === 0) return;
    const missing = ids.filter((id) => !(id in this.snippets));
    if (missing.length === 0) return;
    const generation = this.#generation;
    const asked: Record<string, Snippet | null> = { ...this.snippets };
    for (const id of missing) asked[id] = null;
    this.snippets = asked;
    this.#reads.snippets(missing, search).then(
      (found) => {
        if (generation !== this.#generation) return;
        const next = { ...this.snippets };
        for (const s of found) next[s.task_id] = s;
        this.snippets = next;
      },
      () => {},
    );
  }
}
