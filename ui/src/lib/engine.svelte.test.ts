import { describe, expect, it } from 'vitest';
import type { EngineBatch, LogLine, ServerStatus } from './types';
import { engine, EngineStore } from './engine.svelte';
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
  transport: 'stdio',
  url: null,
  error: null,
  notes: [],
  auth: 'none',
});
const line = (text: string): LogLine => ({ at: '2025-01-01T00:00:00Z', source: 'stderr', text });
const batch = (b: Partial<EngineBatch>): EngineBatch => ({ tasks: [], deleted: [], servers: [], logs: [], tools_changed: [], ...b });

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

describe('the task list reaching the views once per frame', () => {
  const at = (s: number) => `2025-01-01T00:00:0${s}.000Z`;
  const frames: (() => void)[] = [];
  const store = new EngineStore((commit) => frames.push(commit));

  it('gathers the batches of one frame and shows them together, in order', () => {
    store.apply(batch({ tasks: [task({ id: 'a', created_at: at(1) })], servers: [server('demo', 'ready')] }));
    store.apply(batch({ tasks: [task({ id: 'a', created_at: at(1), updated_at: at(2), status: 'completed' }), task({ id: 'b', created_at: at(2) })] }));
    expect(store.tasks).toEqual([]); // not before the frame
    expect(store.servers.map((s) => s.phase)).toEqual(['ready']); // servers are not held back
    expect(frames).toHaveLength(1); // one frame asked for, however many batches
    frames.shift()!();
    expect(store.tasks.map((t) => [t.id, t.status])).toEqual([
      ['b', 'working'],
      ['a', 'completed'],
    ]);
    expect(store.byId('a')?.status).toBe('completed');
  });

  it('shows a command’s record at once, with the batches waiting before it', () => {
    store.apply(batch({ tasks: [task({ id: 'c', created_at: at(3) })] }));
    store.put(task({ id: 'b', created_at: at(2), updated_at: at(5), status: 'cancelled' }));
    expect(store.tasks.map((t) => [t.id, t.status])).toEqual([
      ['c', 'working'],
      ['b', 'cancelled'],
      ['a', 'completed'],
    ]);
    frames.shift()!(); // the frame the batch asked for changes nothing more
    expect(store.tasks).toHaveLength(3);
  });
});

describe('the counts and the changes the task list follows', () => {
  const at = (s: number) => `2025-01-01T00:00:0${s}.000Z`;
  const store = new EngineStore((commit) => commit());

  it('counts new tasks, moves finished ones, drops deleted ones, and tells listeners what each was', () => {
    const heard: { id: string; before: string | undefined; isNew: boolean }[] = [];
    const gone: string[] = [];
    const off = store.onChanges((changes, deleted) => {
      for (const c of changes) heard.push({ id: c.task.id, before: c.before?.status, isNew: c.isNew });
      for (const p of deleted) gone.push(p.id);
    });
    store.apply(batch({ tasks: [task({ id: 'a', created_at: at(1) })] }));
    expect(store.counts).toMatchObject({ working: 1, total: 1 });
    store.apply(batch({ tasks: [task({ id: 'a', created_at: at(1), updated_at: at(2), status: 'completed' })] }));
    expect(store.counts).toMatchObject({ working: 0, completed: 1, total: 1 });
    store.apply(batch({ deleted: [{ id: 'a', tool: 'generate_report', server: 'demo', status: 'completed' }] }));
    expect(store.counts).toMatchObject({ completed: 0, total: 0 });
    expect(store.byId('a')).toBeUndefined();
    expect(heard).toEqual([
      { id: 'a', before: undefined, isNew: true },
      { id: 'a', before: 'working', isNew: false },
    ]);
    expect(gone).toEqual(['a']);
    off();
    store.apply(batch({ tasks: [task({ id: 'b', created_at: at(3) })] }));
    expect(heard).toHaveLength(2);
  });

  it('a pin of an old finished task it never held is no new task', () => {
    const before = store.counts;
    store.apply(batch({ tasks: [task({ id: 'old', created_at: '2020-01-01T00:00:00.000Z', status: 'completed', pinned: true })] }));
    expect(store.counts).toBe(before);
  });

  it('the waiting count is the store’s', () => {
    store.apply(batch({ tasks: [task({ id: 'q', created_at: at(4), status: 'input_required', question: { key: 'k', message: null, kind: 'form' } })] }));
    expect(store.waiting).toBe(1);
  });
});
