/**
 * The task list under the toolbar's filter, read from the store a page at a time as the list
 * scrolls (`want`), patched by the engine store's changes (`patchLoaded`), with the counts under
 * the filter and, for a search, where each row on screen matched. Under a search only the store
 * can tell whether a changed task is in the list: it is asked (`task_matches`), and its answer
 * patches the list in turn (`admitMatches`), so a task that came to match joins and one that no
 * longer does leaves without searching again.
 */
import { engine, type EngineStore } from '../lib/engine.svelte';
import { call, errorText, inApp, isIpcError, searchSnippets, taskCounts, taskPage } from '../lib/ipc';
import type { PageCursor, Purged, Snippet, StatusCounts, TaskFilter, TaskPage, TaskSummary } from '../lib/types';
import {
  admitMatches,
  ALL_TASKS,
  appendPage,
  cursorOf,
  hasSearch,
  matchesFilter,
  NO_COUNTS,
  patchLoaded,
  pinnedFirst,
  searchMayMove,
  totalOf,
  type Change,
  type Loaded,
} from './history';

/** Tasks asked for beyond the last row wanted, so a scroll rarely waits. */
const PAGE = 200;
/** The most one request asks for (the command's own bound). */
const MAX_PAGE = 2000;
/** How long after a change the store is asked for counts it alone can tell (under a search). */
const RECOUNT_MS = 400;
/** The most changed tasks one membership question names (the command's own bound). */
const MAX_MATCHES = 2000;

const EMPTY: Loaded = { items: [], done: false, total: 0 };

/** What the pager reads from the store: the app's commands, or a test's stand-in. */
export type HistoryReads = {
  /** Whether there is a store to read at all (in the app). */
  readonly live: boolean;
  page(filter: TaskFilter, cursor: PageCursor | null, limit: number): Promise<TaskPage>;
  counts(filter: TaskFilter): Promise<StatusCounts>;
  snippets(ids: string[], search: string): Promise<Snippet[]>;
  /** Which of `ids` are in the list under `filter` now. */
  matches(filter: TaskFilter, ids: string[]): Promise<string[]>;
};

export const APP_READS: HistoryReads = {
  live: inApp,
  page: taskPage,
  counts: taskCounts,
  snippets: searchSnippets,
  matches: (filter, ids) => call('task_matches', { filter, ids }),
};

/** What waits for a page on its way: the engine store's changes, and the store's word on a search. */
type Queued = { changes: readonly Change[]; deleted: readonly Purged[] } | { matched: TaskSummary[]; unmatched: string[] };

export class TaskPager {
  loaded: Loaded = $state.raw(EMPTY);
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
  #want = 0;
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
   * a task stopped matching would bring its row back.
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
  }

  /** Shows the list under `filter`, from its first page. The same filter again changes nothing. */
  setFilter(filter: TaskFilter): void {
    if (this.#generation > 0 && JSON.stringify(filter) === JSON.stringify(this.filter)) return;
    this.#restart(filter);
  }

  #restart(filter: TaskFilter): void {
    this.#generation += 1;
    this.filter = filter;
    this.loaded = EMPTY;
    this.snippets = {};
    this.ready = false;
    this.error = null;
    this.#inflight = -1;
    // The new first page is read after them, and a question about the old filter means nothing.
    this.#queued = null;
    this.#toAsk = new Map();
    this.#asking = null;
    this.#stale = new Set();
    if (!this.#reads.live) return;
    void this.#counts();
    this.#fill();
  }

  /** The list shows rows up to `end`: have them loaded. */
  want(end: number): void {
    this.#want = Math.max(end, 1);
    this.#fill();
  }

  byId(id: string | null): TaskSummary | undefined {
    if (id === null) return undefined;
    return this.loaded.items.find((t) => t.id === id);
  }

  #fill(): void {
    const generation = this.#generation;
    const { items, done } = this.loaded;
    if (!this.#reads.live || done || this.#inflight === generation || (this.ready && items.length >= this.#want)) return;
    this.#inflight = generation;
    if (!this.#seeded && items.length === 0 && !pinnedFirst(this.filter)) {
      // At start the whole list's top is what the engine store just read: shown with it, in the
      // same frame the start-up mark waits for, and not read twice.
      this.#seeded = true;
      void this.#source.start().then(() => {
        if (generation !== this.#generation) return;
        this.#inflight = -1;
        const first = this.#source.firstPage();
        if (first !== null && this.loaded.items.length === 0) {
          this.loaded = appendPage(this.loaded, first.items, first.done);
          this.ready = true;
        }
        this.#flush();
        this.#fill();
      });
      return;
    }
    const limit = Math.min(MAX_PAGE, Math.max(PAGE, this.#want - items.length + PAGE));
    this.#reads.page(this.filter, cursorOf(items, this.filter), limit).then(
      (page) => {
        if (generation !== this.#generation) return;
        this.#inflight = -1;
        this.loaded = appendPage(this.loaded, page.items, page.next === null);
        this.ready = true;
        this.#flush();
        this.#fill();
      },
      (e) => {
        if (generation !== this.#generation) return;
        this.#inflight = -1;
        // The task a page was to start after was deleted meanwhile: start again.
        if (isIpcError(e) && e.code === 'not_found') return this.#restart(this.filter);
        this.error = `Could not load tasks: ${errorText(e)}`;
        this.ready = true;
        this.#flush();
      },
    );
  }

  async #counts(): Promise<void> {
    const generation = this.#generation;
    try {
      const counts = await this.#reads.counts(this.filter);
      if (generation !== this.#generation) return;
      this.counts = counts;
      const total = totalOf(counts, this.filter);
      this.loaded = { ...this.loaded, total: this.loaded.done ? this.loaded.items.length : Math.max(total, this.loaded.items.length) };
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
    else this.#run(q);
  }

  #run(q: Queued): void {
    if ('changes' in q) this.#apply(q.changes, q.deleted);
    else this.#admit(q.matched, q.unmatched);
  }

  #flush(): void {
    const q = this.#queued;
    this.#queued = null;
    if (q !== null) for (const item of q) this.#run(item);
  }

  #apply(changes: readonly Change[], deleted: readonly Purged[]): void {
    const search = hasSearch(this.filter);
    // What the list showed of a task the engine store did not hold (a row a page brought).
    const shown = search ? new Map(this.loaded.items.map((t) => [t.id, t])) : null;
    const { loaded, exact } = patchLoaded(this.loaded, changes, deleted, this.filter);
    this.loaded = loaded;
    const moved = changes.some((c) => c.isNew || (c.before !== undefined && c.before.status !== c.task.status));
    if (!exact || moved || deleted.length > 0) this.#scheduleRecount();
    if (shown !== null) this.#ask(changes.map((c) => (c.before === undefined && !c.isNew ? { ...c, before: shown.get(c.task.id) } : c)), deleted);
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
        const unmatched: string[] = [];
        for (const [id, task] of asking) {
          // Asked about again (it changed since) or gone: the next answer, or the delete, says.
          if (stale.has(id)) continue;
          if (yes.has(id)) matched.push(task);
          else unmatched.push(id);
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

  #admit(matched: readonly TaskSummary[], unmatched: readonly string[]): void {
    const next = admitMatches(this.loaded, matched, unmatched, this.filter);
    if (next === this.loaded) return;
    this.loaded = next;
    this.#scheduleRecount();
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
