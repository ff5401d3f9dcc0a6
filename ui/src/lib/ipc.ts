import { invoke, isTauri } from '@tauri-apps/api/core';
import { listen, type UnlistenFn } from '@tauri-apps/api/event';
import { inertText } from './text';
import type { Commands } from './bindings/Commands';
import type {
  AppInfo,
  CommandError,
  DeleteScope,
  ElicitAnswer,
  EngineBatch,
  ExportScope,
  JsonValue,
  OfferedUrl,
  PageCursor,
  ServerStatus,
  TaskFilter,
} from './types';

export type { AppInfo };

/** True inside the app's webview; false when the UI runs in a plain browser via `npm run dev`. */
export const inApp = isTauri();

/** How every command rejects: a machine-readable code to act on, and a message for people. */
export type IpcError = CommandError;

export function isIpcError(err: unknown): err is IpcError {
  return typeof err === 'object' && err !== null && typeof (err as IpcError).code === 'string';
}

/**
 * Where an `invalid_arguments` or `invalid_answer` rejection points, as a form's dotted field path
 * (`address.city`, `tags.2`): the engine names the value by JSON Pointer (`/address/city`). Null when
 * the rejection names no value, or names the object as a whole.
 */
export function errorFieldPath(err: unknown): string | null {
  if (!isIpcError(err) || !err.path) return null;
  return err.path
    .split('/')
    .slice(1)
    .map((token) => token.replace(/~1/g, '/').replace(/~0/g, '~'))
    .join('.');
}

/** A rejection as one line of inert text, whatever shape it arrived in. */
export function errorText(err: unknown): string {
  if (isIpcError(err)) return inertText(err.message || err.code, 400);
  if (err instanceof Error) return inertText(err.message, 400);
  return inertText(err, 400);
}

type Command = keyof Commands;
type Args<C extends Command> = Commands[C]['args'];

/**
 * Calls a command through the map generated from the registry (`src-tauri/src/registry.in`): a
 * command that does not exist, a missing or mistyped argument, or a wrong response type fails
 * svelte-check instead of failing at run time.
 */
export function call<C extends Command>(
  command: C,
  ...args: Record<string, never> extends Args<C> ? [] : [Args<C>]
): Promise<Commands[C]['response']> {
  return invoke<Commands[C]['response']>(command, args[0]);
}

export const appInfo = () => call('app_info');
export const listServers = () => call('list_servers');
export const restartServer = (name: string) => call('restart_server', { name });
export const serverLog = (name: string) => call('server_log', { name });
export const reloadConfig = () => call('reload_config');
export const editConfig = () => call('edit_config');
/** Opens the folder with the app's, the CLI's and each server's log files in the file manager. */
export const openLogFolder = () => call('open_log_folder');
export const listTools = (server: string) => call('list_tools', { server });
/** `idempotencyKey` names one submission: the engine starts one task per key, whoever asks again. */
export const runTool = (server: string, tool: string, args: JsonValue, idempotencyKey: string | null = null) =>
  call('run_tool', { server, tool, arguments: args, idempotencyKey });
/** A page of the task list under `filter`, after `cursor` (the top when null). */
export const taskPage = (filter: TaskFilter, cursor: PageCursor | null, limit: number) => call('task_page', { filter, cursor, limit });
/** Tasks per status under `filter` (its statuses aside). */
export const taskCounts = (filter: TaskFilter) => call('task_counts', { filter });
/** Where `search` matched in each of these tasks. */
export const searchSnippets = (ids: string[], search: string) => call('search_snippets', { ids, search });
/** Deletes (or, with `dryRun`, counts) what `scope` names; a running task is refused unless `force`. */
export const deleteTasks = (scope: DeleteScope, force: boolean, dryRun: boolean) => call('delete_tasks', { scope, force, dryRun });
/** The newest purge-log lines before line `before`, newest first. */
export const purgeLog = (before: number | null, limit: number) => call('purge_log', { before, limit });
export const pinTask = (id: string, pinned: boolean) => call('pin_task', { id, pinned });
/** Asks where to save and exports `scope` there as `format`; `null` when the user cancelled. */
export const exportTasks = (scope: ExportScope, format: 'jsonl' | 'csv' | 'md') => call('export_tasks', { scope, format });
export const taskDetail = (id: string) => call('task_detail', { id });
/** The task's events newer than event `after` (0 for all of them). */
export const taskEvents = (id: string, after: number) => call('task_events', { id, after });
export const answerTask = (id: string, answer: ElicitAnswer) => call('answer_task', { id, answer });
export const cancelTask = (id: string) => call('cancel_task', { id });
export const rerunTask = (id: string) => call('rerun_task', { id });
/** Asks where to save the task's result and writes it there; `null` when the user cancelled. */
export const exportResult = (id: string) => call('export_result', { id });
/** Opens `url` in the browser: only the link the task offers as `which`, exactly (see `links.rs`). */
export const openUrl = (taskId: string, which: OfferedUrl, url: string) => call('open_url', { taskId, which, url });
export const setNotificationsMuted = (muted: boolean) => call('set_notifications_muted', { muted });
export const setViewingTask = (id: string | null) => call('set_viewing_task', { id });
/** Says the first render with the tasks loaded is on screen (see `afterPaint`). */
export const uiReady = () => call('ui_ready');

export function onEngineBatch(handler: (batch: EngineBatch) => void): Promise<UnlistenFn> {
  return listen<EngineBatch>('engine-batch', (e) => handler(e.payload));
}

export function onFocusTask(handler: (id: string) => void): Promise<UnlistenFn> {
  return listen<{ id: string }>('focus-task', (e) => handler(e.payload.id));
}

/** The config file was edited and applied (or refused: `appInfo` then says why); the servers now. */
export function onConfigReloaded(handler: (servers: ServerStatus[]) => void): Promise<UnlistenFn> {
  return listen<ServerStatus[]>('config-reloaded', (e) => handler(e.payload));
}

/** The tray's "Pause notifications" (or this window's own switch) changed the setting. */
export function onNotificationsMuted(handler: (muted: boolean) => void): Promise<UnlistenFn> {
  return listen<{ muted: boolean }>('notifications-muted', (e) => handler(e.payload.muted));
}
