/**
 * The shapes the engine sends, field for field as the Rust types serialise (snake_case).
 *
 * Until `make bindings` generates their twins in `./bindings/`, they are declared here; everything
 * else imports them from this module only, so switching to the generated files is a change here alone.
 */

export type JsonValue = number | string | boolean | Array<JsonValue> | { [key in string]?: JsonValue } | null;

export type TaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';
export type Era = 'legacy' | 'modern';
export type Mode = 'task' | 'call';
export type TaskSupport = 'forbidden' | 'optional' | 'required';

export type Progress = { progress: number; total: number | null; message: string | null };
export type Question = { key: string; request: JsonValue };
export type Answer = { key: string; response: JsonValue };
export type TaskError = { code: number | null; message: string; reason: string | null };

export type TaskRecord = {
  id: string;
  server: string;
  tool: string;
  arguments: JsonValue;
  idempotency_key: string;
  mode: Mode;
  era: Era | null;
  remote_task_id: string | null;
  status: TaskStatus;
  status_message: string | null;
  progress: Progress | null;
  question: Question | null;
  answer: Answer | null;
  result: JsonValue | null;
  error: TaskError | null;
  ttl_ms: number | null;
  poll_interval_ms: number | null;
  created_at: string;
  updated_at: string;
};

export type EventKind =
  | 'created'
  | 'remote'
  | 'status'
  | 'question'
  | 'answer'
  | 'result'
  | 'failed'
  | 'cancelled'
  | 'reclaimed';

export type TaskEvent = {
  id: number;
  task_id: string;
  at: string;
  kind: EventKind;
  from_status: TaskStatus | null;
  to_status: TaskStatus | null;
  data: JsonValue;
};

export type ServerPhase = 'idle' | 'starting' | 'ready' | 'restarting' | 'failed';

export type ServerStatus = {
  name: string;
  phase: ServerPhase;
  era: Era | null;
  protocol_version: string | null;
  tasks: boolean | null;
  server_name: string | null;
  server_version: string | null;
  pid: number | null;
  restarts: number;
  last_error: string | null;
  command: string;
};

export type LogLine = { at: string; source: string; text: string };

export type ToolInfo = {
  name: string;
  title: string | null;
  description: string | null;
  task_support: TaskSupport | null;
  input_schema: JsonValue;
};

export type AppInfo = {
  version: string;
  config_path: string;
  data_dir: string;
  config_exists: boolean;
  config_error: string | null;
  notifications_muted: boolean;
};

export type TaskDetail = { task: TaskRecord; events: TaskEvent[] };

export type EngineBatch = {
  tasks: TaskRecord[];
  servers: ServerStatus[];
  logs: { server: string; line: LogLine }[];
  tools_changed: string[];
};

export type ElicitAnswer = {
  action: 'accept' | 'decline' | 'cancel';
  content: { [key: string]: JsonValue } | null;
};

export const TERMINAL: readonly TaskStatus[] = ['completed', 'failed', 'cancelled'];

export function isTerminal(status: TaskStatus): boolean {
  return TERMINAL.includes(status);
}
