import type { TaskRecord } from '../lib/types';

/** A plausible record for tests; override what the test is about. */
export function task(over: Partial<TaskRecord> & { id: string }): TaskRecord {
  return {
    server: 'demo',
    tool: 'generate_report',
    arguments: {},
    idempotency_key: `k-${over.id}`,
    mode: 'task',
    era: 'modern',
    remote_task_id: null,
    status: 'working',
    status_message: null,
    progress: null,
    question: null,
    answer: null,
    result: null,
    error: null,
    ttl_ms: null,
    poll_interval_ms: null,
    created_at: '2025-01-01T00:00:00.000Z',
    updated_at: '2025-01-01T00:00:00.000Z',
    ...over,
  };
}
