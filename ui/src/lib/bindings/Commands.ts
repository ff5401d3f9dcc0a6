// Generated from src-tauri/src/registry.in by src-tauri/tests/bindings.rs (`make bindings`). Do not edit.
import type { AnswerPayload } from "./AnswerPayload";
import type { AppInfo } from "./AppInfo";
import type { JsonValue } from "./serde_json/JsonValue";
import type { LogLine } from "./LogLine";
import type { ModelTest } from "./ModelTest";
import type { OfferedUrl } from "./OfferedUrl";
import type { ServerStatus } from "./ServerStatus";
import type { Settings } from "./Settings";
import type { SettingsUpdate } from "./SettingsUpdate";
import type { TaskDetail } from "./TaskDetail";
import type { TaskEvent } from "./TaskEvent";
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
  list_tasks: { args: Record<string, never>; response: Array<TaskSummary> };
  task_detail: { args: { id: string }; response: TaskDetail };
  task_events: { args: { id: string; after: number }; response: Array<TaskEvent> };
  answer_task: { args: { id: string; answer: AnswerPayload }; response: TaskSummary };
  cancel_task: { args: { id: string }; response: TaskSummary };
  open_url: { args: { taskId: string; which: OfferedUrl; url: string }; response: null };
  set_notifications_muted: { args: { muted: boolean }; response: null };
  set_viewing_task: { args: { id: string | null }; response: null };
  ui_ready: { args: Record<string, never>; response: null };
  get_settings: { args: Record<string, never>; response: Settings };
  update_settings: { args: { update: SettingsUpdate }; response: Settings };
  set_model_key: { args: { provider: string; key: string | null }; response: null };
  test_model_provider: { args: { provider: string }; response: ModelTest };
};
