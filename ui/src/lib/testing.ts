import type { TaskSummary } from './types';

/** A plausible task as the list holds it, for tests; override what the test is about. */
export function task(over: Partial<TaskSummary> & { id: string }): TaskSummary {
  return {
    server: 'demo',
    tool: 'generate_report',
    mode: 'task',
    era: null,
    status: 'working',
    status_message: null,
    progress: null,
    question: null,
    error: null,
    has_result: false,
    pinned: false,
    created_at: '2025-01-01T00:00:00.000Z',
    updated_at: '2025-01-01T00:00:00.000Z',
    ...over,
  };
}
