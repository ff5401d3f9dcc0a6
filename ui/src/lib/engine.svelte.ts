/**
 * The one place the UI keeps what the engine said: tasks, servers, server logs. It loads once and
 * then patches itself from `engine-batch` events; views read it and never write to it, so what is
 * on screen is always the engine's latest word.
 */
import { errorText, inApp, listServers, listTasks, onEngineBatch, serverLog } from './ipc';
import type { EngineBatch, LogLine, ServerStatus, TaskSummary } from './types';
import { nextFrame, type Schedule } from './paint';
import { appendBounded, applyByName, applyTasks, EMPTY_TABLE, type TaskTable } from './engineTable';

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
    return this.#table.waiting;
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
      const [tasks, servers] = await Promise.all([listTasks(), listServers()]);
      this.#table = applyTasks(EMPTY_TABLE, tasks);
      this.servers = servers;
      for (const b of early) this.apply(b);
      ready = true;
      this.loaded = true;
    } catch (e) {
      ready = true;
      this.error = `Could not load tasks: ${errorText(e)}`;
    }
  }

  apply(b: EngineBatch): void {
    if (b.tasks.length) this.#stage(b.tasks);
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
    this.#pending = applyTasks(this.#pending ?? this.#table, [t]);
    this.#commit();
  }

  /** Task updates join the table at once (so memory stays one table) but reach the views per frame. */
  #stage(tasks: readonly TaskSummary[]): void {
    const scheduled = this.#pending !== null;
    this.#pending = applyTasks(this.#pending ?? this.#table, tasks);
    if (!scheduled) this.#schedule(() => this.#commit());
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
