// Generated from src-tauri/src/registry.in by src-tauri/tests/bindings.rs (`make bindings`). Do not edit.
import type { AnswerPayload } from "./AnswerPayload";
import type { AppInfo } from "./AppInfo";
import type { DeleteScope } from "./DeleteScope";
import type { ExportScope } from "./ExportScope";
import type { JsonValue } from "./serde_json/JsonValue";
import type { LogLine } from "./LogLine";
import type { OfferedUrl } from "./OfferedUrl";
import type { PageCursor } from "./PageCursor";
import type { PurgeLine } from "./PurgeLine";
import type { ServerStatus } from "./ServerStatus";
import type { Snippet } from "./Snippet";
import type { StatusCounts } from "./StatusCounts";
import type { TaskDetail } from "./TaskDetail";
import type { TaskEvent } from "./TaskEvent";
import type { TaskFilter } from "./TaskFilter";
import type { TaskPage } from "./TaskPage";
import type { TaskSummary } from "./TaskSummary";
import type { ToolInfo } from "./ToolInfo";

/** Every command the webview may call: what it sends, and what it receives on success. */
export type Commands = {
  app_info: { args: Record<string, never>; response: AppInfo };
  list_servers: { args: Record<string, never>; response: Array<ServerStatus> };
  restart_server: { args: { name: string }; response: null };
  server_log: { args: { name: string }; response: Array<LogLine> };
  reload_config: { args: Record<string, never>; response: Array<ServerStatus> };
  edit_config: { args: Record<string, never>; response: null };
  open_log_folder: { args: Record<string, never>; response: null };
  list_tools: { args: { server: string }; response: Array<ToolInfo> };
  run_tool: { args: { server: string; tool: string; arguments: JsonValue }; response: TaskSummary };
  rerun_task: { args: { id: string }; response: TaskSummary };
  export_result: { args: { id: string }; response: string | null };
  task_detail: { args: { id: string }; response: TaskDetail };
  task_events: { args: { id: string; after: number }; response: Array<TaskEvent> };
  answer_task: { args: { id: string; answer: AnswerPayload }; response: TaskSummary };
  cancel_task: { args: { id: string }; response: TaskSummary };
  open_url: { args: { taskId: string; which: OfferedUrl; url: string }; response: null };
  set_notifications_muted: { args: { muted: boolean }; response: null };
  set_viewing_task: { args: { id: string | null }; response: null };
  ui_ready: { args: Record<string, never>; response: null };
  task_page: { args: { filter: TaskFilter; cursor: PageCursor | null; limit: number }; response: TaskPage };
  task_counts: { args: { filter: TaskFilter }; response: StatusCounts };
  search_snippets: { args: { ids: Array<string>; search: string }; response: Array<Snippet> };
  delete_tasks: { args: { scope: DeleteScope; force: boolean; dryRun: boolean }; response: number };
  purge_log: { args: { before: number | null; limit: number }; response: Array<PurgeLine> };
  pin_task: { args: { id: string; pinned: boolean }; response: TaskSummary };
  export_tasks: { args: { scope: ExportScope; format: string }; response: string | null };
};
