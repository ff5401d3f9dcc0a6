/**
 * The one place the UI keeps what the engine said: the tasks it has seen (the running ones and
 * the newest, read at start; every task a batch or a command brought since), the counts per
 * status, servers, server logs. It loads once, reading summaries only, and then patches itself
 * from `engine-batch` events; views read it and never write to it, so what is on screen is always
 * the engine's latest word. The task list pages the store itself (`tasks/pager.svelte.ts`) and
 * follows the changes this store passes on (`onChanges`).
 */
import { errorText, inApp, listServers, onEngineBatch, serverLog, taskCounts, taskPage } from './ipc';
import type { EngineBatch, LogLine, PageCursor, Purged, ServerStatus, StatusCounts, TaskSummary } from './types';
import { isTerminal } from './types';
import { nextFrame, type Schedule } from './paint';
import { appendBounded, applyByName, applyTasks, EMPTY_TABLE, removeTasks, type TaskTable } from './engineTable';
import { ALL_TASKS, NO_COUNTS, patchCounts, type Change } from '../tasks/history';

/** The newest tasks read at start, beside the running ones: what the recent tools and a first screen need. */
const RECENT = 100;
/** Running tasks read per request at start (all of them are read). */
const LIVE = 2000;

export type ChangeListener = (changes: readonly Change[], deleted: readonly Purged[]) => void;

/** Matches the engine's own bound, so the UI never shows more than it keeps. */
const LOG_LINES = 2000;

export class EngineStore {
  #table: TaskTable = $state.raw(EMPTY_TABLE);
  /** Task updates received but not yet shown: at most one frame's worth. Not reactive. */
  #pending: TaskTable | null = null;
  #schedule: Schedule;
  servers: ServerStatus[] = $state.raw([]);
  logs: Record<string, LogLine[]> = $state.raw({});
  /** Bumped per server when its tool list changed, so the Tools view knows to ask again. */
  toolsVersion: Record<string, number> = $state.raw({});
  loaded = $state(false);
  error: string | null = $state(null);

  /** Every task, newest first. */
  get tasks(): readonly TaskSummary[] {
    return this.#table.list;
  }
  /** How many tasks have a question waiting for the user. */
  get waiting(): number {
    return this.counts.waiting;
  }
  /** Tasks per status in the whole store, patched by every batch. */
  counts: StatusCounts = $state.raw(NO_COUNTS);
  #listeners = new Set<ChangeListener>();
  /** When the start-up read began: a finished task first seen after it, created before it, is no new task. */
  #loadedAt = '';
  /** What the start-up read of the newest tasks covered: down to `boundary`, or the whole store. */
  #recent: { boundary: string; done: boolean } | null = null;

  /** Hears every change to a task and every delete, as it arrives; returns the unsubscribe. */
  onChanges(listener: ChangeListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #start: Promise<void> | null = null;
  #loadedLogs = new Set<string>();

  constructor(schedule: Schedule = nextFrame) {
    this.#schedule = schedule;
  }

  /**
   * Loads once: every call returns that one load, so main.ts can start it before the UI mounts and
   * App still learns when it is done. Subscribes before loading, so no batch falls between the two.
   */
  start(): Promise<void> {
    if (!inApp) return Promise.resolve();
    this.#start ??= this.#load();
    return this.#start;
  }

  async #load(): Promise<void> {
    const early: EngineBatch[] = [];
    let ready = false;
    await onEngineBatch((b) => (ready ? this.apply(b) : early.push(b)));
    try {
      this.#loadedAt = new Date().toISOString();
      const [live, recent, counts, servers] = await Promise.all([
        this.#running(),
        taskPage(ALL_TASKS, null, RECENT),
        taskCounts(ALL_TASKS),
        listServers(),
      ]);
      this.#table = applyTasks(EMPTY_TABLE, [...live, ...recent.items]);
      this.#recent = { boundary: recent.items[recent.items.length - 1]?.created_at ?? '', done: recent.next === null };
      this.counts = counts;
      this.servers = servers;
      for (const b of early) this.apply(b);
      ready = true;
      this.loaded = true;
    } catch (e) {
      ready = true;
      this.error = `Could not load tasks: ${errorText(e)}`;
    }
  }

  /**
   * The top of the whole list as this store holds it now, for the list's first screen without a
   * second read: every task down to the oldest of the newest read at start (all of them were
   * read, and every task since came in a batch), or the whole store when it was read whole.
   * `null` before the start-up read.
   */
  firstPage(): { items: TaskSummary[]; done: boolean } | null {
    if (this.#recent === null) return null;
    const { boundary, done } = this.#recent;
    const list = (this.#pending ?? this.#table).list;
    return { items: done ? list.slice() : list.filter((t) => t.created_at >= boundary), done };
  }

  /** Every running task (the counts are patched from what each was), a page at a time. */
  async #running(): Promise<TaskSummary[]> {
    const filter = { ...ALL_TASKS, statuses: ['working', 'input_required'] as TaskSummary['status'][] };
    const all: TaskSummary[] = [];
    let cursor: PageCursor | null = null;
    for (;;) {
      const page = await taskPage(filter, cursor, LIVE);
      all.push(...page.items);
      if (page.next === null) return all;
      cursor = page.next;
    }
  }

  apply(b: EngineBatch): void {
    if (b.tasks.length || b.deleted.length) this.#stage(b.tasks, b.deleted);
    if (b.servers.length) this.servers = applyByName(this.servers, b.servers);
    if (b.logs.length) {
      const next = { ...this.logs };
      for (const { server, line } of b.logs) next[server] = appendBounded(next[server] ?? [], [line], LOG_LINES);
      this.logs = next;
    }
    if (b.tools_changed.length) {
      const next = { ...this.toolsVersion };
      for (const s of b.tools_changed) next[s] = (next[s] ?? 0) + 1;
      this.toolsVersion = next;
    }
  }

  /**
   * Replaces one task with a record a command returned (the batch will say the same, later).
   * Shown at once, with whatever batches were waiting for the frame: the user just acted.
   */
  put(t: TaskSummary): void {
    this.#pending = this.#follow(this.#pending ?? this.#table, [t], []);
    this.#commit();
  }

  /** Task updates join the table at once (so memory stays one table) but reach the views per frame. */
  #stage(tasks: readonly TaskSummary[], deleted: readonly Purged[]): void {
    const scheduled = this.#pending !== null;
    this.#pending = this.#follow(this.#pending ?? this.#table, tasks, deleted);
    if (!scheduled) this.#schedule(() => this.#commit());
  }

  /** Applies changes to the table and the counts, and passes them on with what each task was before. */
  #follow(table: TaskTable, tasks: readonly TaskSummary[], deleted: readonly Purged[]): TaskTable {
    const changes: Change[] = [];
    let counts = this.counts;
    for (const task of tasks) {
      const i = table.index.get(task.id);
      const before = i === undefined ? undefined : table.list[i];
      if (before !== undefined && task.updated_at < before.updated_at) continue;
      const isNew = before === undefined && (!isTerminal(task.status) || (this.#loadedAt !== '' && task.created_at > this.#loadedAt));
      if (before !== undefined || isNew) counts = patchCounts(counts, before, task);
      changes.push({ task, before, isNew });
    }
    for (const p of deleted) counts = patchCounts(counts, p, undefined);
    this.counts = counts;
    let next = applyTasks(table, changes.map((c) => c.task));
    if (deleted.length) next = removeTasks(next, deleted.map((p) => p.id));
    for (const listener of this.#listeners) listener(changes, deleted);
    return next;
  }

  #commit(): void {
    if (this.#pending === null) return;
    this.#table = this.#pending;
    this.#pending = null;
  }

  setServers(list: ServerStatus[]): void {
    this.servers = list;
  }

  /** Fetches a server's log once; live lines arrive in batches after that. */
  async loadLog(name: string): Promise<void> {
    if (this.#loadedLogs.has(name) || !inApp) return;
    this.#loadedLogs.add(name);
    const lines = await serverLog(name);
    // Lines that arrived in batches while this was in flight are newer than the snapshot.
    const live = this.logs[name] ?? [];
    const seen = new Set(lines.map((l) => `${l.at}\u0000${l.text}`));
    const newer = live.filter((l) => !seen.has(`${l.at}\u0000${l.text}`));
    this.logs = { ...this.logs, [name]: appendBounded(lines, newer, LOG_LINES) };
  }

  byId(id: string | null): TaskSummary | undefined {
    if (id === null) return undefined;
    const i = this.#table.index.get(id);
    return i === undefined ? undefined : this.#table.list[i];
  }
}

export const engine = new EngineStore();
