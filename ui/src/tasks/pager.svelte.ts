/**
 * The task list under the toolbar's filter, read from the store a page at a time as the list
 * scrolls (`want`), patched by the engine store's changes (`patchLoaded`), with the counts under
 * the filter and, for a search, where each row on screen matched.
 */
import { engine, type EngineStore } from '../lib/engine.svelte';
import { errorText, inApp, isIpcError, searchSnippets, taskCounts, taskPage } from '../lib/ipc';
import type { Purged, Snippet, StatusCounts, TaskFilter, TaskSummary } from '../lib/types';
import { ALL_TASKS, appendPage, cursorOf, NO_COUNTS, patchLoaded, pinnedFirst, totalOf, type Change, type Loaded } from './history';

/** Tasks asked for beyond the last row wanted, so a scroll rarely waits. */
const PAGE = 200;
/** The most one request asks for (the command's own bound). */
const MAX_PAGE = 2000;
/** How long after a change the store is asked for counts it alone can tell (under a search). */
const RECOUNT_MS = 400;

const EMPTY: Loaded = { items: [], done: false, total: 0 };

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
  /** The whole list's first screen was taken from the engine store's start-up read. */
  #seeded = false;
  /**
   * Changes that came while a page was on its way. The page may have been read before them or
   * between them (a task made and finished in one breath), and a change to a task beyond the
   * loaded rows is dropped: they are applied once the page is in, newer writes winning.
   */
  #queued: { changes: Change[]; deleted: Purged[] } | null = null;

  constructor(source: EngineStore = engine) {
    this.#source = source;
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
    // The new first page is read after them.
    this.#queued = null;
    if (!inApp) return;
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
    if (!inApp || done || this.#inflight === generation || (this.ready && items.length >= this.#want)) return;
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
    taskPage(this.filter, cursorOf(items, this.filter), limit).then(
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
      const counts = await taskCounts(this.filter);
      if (generation !== this.#generation) return;
      this.counts = counts;
      const total = totalOf(counts, this.filter);
      this.loaded = { ...this.loaded, total: this.loaded.done ? this.loaded.items.length : Math.max(total, this.loaded.items.length) };
    } catch (e) {
      if (generation === this.#generation) this.error = `Could not count tasks: ${errorText(e)}`;
    }
  }

  #follow(changes: readonly Change[], deleted: readonly Purged[]): void {
    if (this.#inflight === this.#generation) {
      const q = (this.#queued ??= { changes: [], deleted: [] });
      q.changes.push(...changes);
      q.deleted.push(...deleted);
      return;
    }
    this.#apply(changes, deleted);
  }

  #flush(): void {
    const q = this.#queued;
    this.#queued = null;
    if (q !== null) this.#apply(q.changes, q.deleted);
  }

  #apply(changes: readonly Change[], deleted: readonly Purged[]): void {
    const { loaded, exact } = patchLoaded(this.loaded, changes, deleted, this.filter);
    this.loaded = loaded;
    const moved = changes.some((c) => c.isNew || (c.before !== undefined && c.before.status !== c.task.status));
    if (!exact || moved || deleted.length > 0) this.#scheduleRecount();
  }

  #scheduleRecount(): void {
    if (this.#recount !== null || !inApp) return;
    this.#recount = setTimeout(() => {
      this.#recount = null;
      void this.#counts();
    }, RECOUNT_MS);
  }

  /** Fetches where the search matched for the rows shown that have no snippet yet. */
  snippetsFor(ids: readonly string[]): void {
    const search = this.filter.search;
    if (!inApp || search === null || ids.length === 0) return;
    const missing = ids.filter((id) => !(id in this.snippets));
    if (missing.length === 0) return;
    const generation = this.#generation;
    const asked: Record<string, Snippet | null> = { ...this.snippets };
    for (const id of missing) asked[id] = null;
    this.snippets = asked;
    searchSnippets(missing, search).then(
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
