import { describe, expect, it } from 'vitest';
import type { EngineBatch, LogLine, ServerStatus } from '../lib/types';
import { engine } from './store.svelte';
import { task } from './testing';

const server = (name: string, phase: ServerStatus['phase']): ServerStatus => ({
  name,
  phase,
  era: null,
  protocol_version: null,
  tasks: null,
  server_name: null,
  server_version: null,
  pid: null,
  restarts: 0,
  last_error: null,
  command: name,
});
const line = (text: string): LogLine => ({ at: '2025-01-01T00:00:00Z', source: 'stderr', text });
const batch = (b: Partial<EngineBatch>): EngineBatch => ({ tasks: [], servers: [], logs: [], tools_changed: [], ...b });

describe('the engine store patching itself from batches', () => {
  it('replaces tasks and servers by key, bounds logs, and counts tool changes', () => {
    engine.apply(batch({ tasks: [task({ id: 'a', created_at: '2025-01-01T00:00:01.000Z' })], servers: [server('demo', 'starting')] }));
    engine.apply(
      batch({
        tasks: [
          task({ id: 'a', created_at: '2025-01-01T00:00:01.000Z', updated_at: '2025-01-01T00:00:05.000Z', status: 'completed' }),
          task({ id: 'b', created_at: '2025-01-01T00:00:02.000Z' }),
        ],
        servers: [server('demo', 'ready')],
        logs: Array.from({ length: 2100 }, (_, i) => ({ server: 'demo', line: line(`l${i}`) })),
        tools_changed: ['demo', 'demo'],
      }),
    );
    expect(engine.tasks.map((t) => [t.id, t.status])).toEqual([
      ['b', 'working'],
      ['a', 'completed'],
    ]);
    expect(engine.servers.map((s) => s.phase)).toEqual(['ready']);
    expect(engine.logs.demo).toHaveLength(2000);
    expect(engine.logs.demo![1999]!.text).toBe('l2099');
    expect(engine.toolsVersion.demo).toBe(2);
  });

  it('keeps the batch’s newer record when a command reply arrives late', () => {
    engine.put(task({ id: 'a', created_at: '2025-01-01T00:00:01.000Z', updated_at: '2025-01-01T00:00:03.000Z', status: 'working' }));
    expect(engine.byId('a')?.status).toBe('completed');
  });
});
