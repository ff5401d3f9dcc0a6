/**
 * The shapes the engine sends, generated from the Rust types by `make bindings` into `./bindings/`.
 * The rest of the UI imports them from here, so a renamed or moved binding is a change here alone.
 */

export type { JsonValue } from './bindings/serde_json/JsonValue';
export type { TaskStatus } from './bindings/TaskStatus';
export type { Era } from './bindings/Era';
export type { Mode } from './bindings/Mode';
export type { TaskSupport } from './bindings/TaskSupport';
export type { Progress } from './bindings/Progress';
export type { Question } from './bindings/Question';
export type { QuestionRequest } from './bindings/QuestionRequest';
export type { Asks } from './bindings/Asks';
export type { UrlCheck } from './bindings/UrlCheck';
export type { UrlWarning } from './bindings/UrlWarning';
export type { UrlWarningKind } from './bindings/UrlWarningKind';
export type { FormModel } from './bindings/FormModel';
export type { FormField } from './bindings/FormField';
export type { FormFieldKind } from './bindings/FormFieldKind';
export type { FormChoice } from './bindings/FormChoice';
export type { TextFormat } from './bindings/TextFormat';
export type { Answer } from './bindings/Answer';
export type { TaskError } from './bindings/TaskError';
export type { TaskRecord } from './bindings/TaskRecord';
export type { TaskSummary } from './bindings/TaskSummary';
export type { QuestionBrief } from './bindings/QuestionBrief';
export type { OfferedUrl } from './bindings/OfferedUrl';
export type { EventKind } from './bindings/EventKind';
export type { TaskEvent } from './bindings/TaskEvent';
export type { ServerPhase } from './bindings/ServerPhase';
export type { ServerStatus } from './bindings/ServerStatus';
export type { LogLine } from './bindings/LogLine';
export type { ToolInfo } from './bindings/ToolInfo';
export type { AppInfo } from './bindings/AppInfo';
export type { TaskDetail } from './bindings/TaskDetail';
export type { EngineBatch } from './bindings/EngineBatch';
export type { AnswerPayload as ElicitAnswer } from './bindings/AnswerPayload';
export type { CommandError } from './bindings/CommandError';
export type { TaskFilter } from './bindings/TaskFilter';
export type { PageCursor } from './bindings/PageCursor';
export type { TaskPage } from './bindings/TaskPage';
export type { StatusCounts } from './bindings/StatusCounts';
export type { Snippet } from './bindings/Snippet';
export type { MatchRange } from './bindings/MatchRange';
export type { Purged } from './bindings/Purged';
export type { PurgeLine } from './bindings/PurgeLine';
export type { DeleteScope } from './bindings/DeleteScope';
export type { ExportScope } from './bindings/ExportScope';
import type { TaskStatus } from './bindings/TaskStatus';

export const TERMINAL: readonly TaskStatus[] = ['completed', 'failed', 'cancelled'];

export function isTerminal(status: TaskStatus): boolean {
  return TERMINAL.includes(status);
}
