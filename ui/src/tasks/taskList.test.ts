import { describe, expect, it } from 'vitest';
import {
  appendBounded,
  applyByName,
  applyTasks,
  EMPTY_TABLE,
  needsAnswer,
  type TaskTable,
  elapsedMs,
  filterTasks,
  progressPercent,
  taskMessage,
} from './taskList';
import { task } from './testing';

const at = (s: number) => new Date(Date.UTC(2025, 0, 1, 0, 0, s)).toISOString();

describe('applying engine batches to the task list', () => {
  const table = applyTasks(EMPTY_TABLE, [task({ id: 'a', created_at: at(1) }), task({ id: 'c', created_at: at(3) }), task({ id: 'b', created_at: at(2) })]);
  const ids = (t: TaskTable) => t.list.map((x) => x.id);
  // The index and the count are derived facts: they must always match the list they came with.
  const consistent = (t: TaskTable) => {
    expect([...t.index].sort()).toEqual(t.list.map((x, i) => [x.id, i] as [string, number]).sort());
    expect(t.waiting).toBe(t.list.filter(needsAnswer).length);
  };

  it('keeps the list newest first', () => {
    expect(ids(table)).toEqual(['c', 'b', 'a']);
    consistent(table);
  });

  it('replaces a known task where it stands', () => {
    const next = applyTasks(table, [task({ id: 'b', created_at: at(2), status: 'completed' })]);
    expect(ids(next)).toEqual(['c', 'b', 'a']);
    expect(next.list[1]!.status).toBe('completed');
    expect(next.list[0]).toBe(table.list[0]);
    expect(table.list[1]!.status).toBe('working'); // the old table is left as it was
    consistent(next);
  });

  it('puts a new task at the top and an older one in its place', () => {
    const next = applyTasks(table, [task({ id: 'old', created_at: at(0) }), task({ id: 'd', created_at: at(4) })]);
    expect(ids(next)).toEqual(['d', 'c', 'b', 'a', 'old']);
    consistent(next);
  });

  it('keeps the last record when a batch names a task twice', () => {
    const next = applyTasks(table, [task({ id: 'a', created_at: at(1), status: 'working' }), task({ id: 'a', created_at: at(1), status: 'failed' })]);
    expect(next.list.filter((t) => t.id === 'a').map((t) => t.status)).toEqual(['failed']);
    const fresh = applyTasks(table, [task({ id: 'n', created_at: at(5), status: 'working' }), task({ id: 'n', created_at: at(5), status: 'failed' })]);
    expect(fresh.list.filter((t) => t.id === 'n').map((t) => t.status)).toEqual(['failed']);
  });

  it('does not let a late command reply undo a newer record', () => {
    const done = task({ id: 'b', created_at: at(2), updated_at: at(9), status: 'completed' });
    const reply = task({ id: 'b', created_at: at(2), updated_at: at(8), status: 'working' });
    expect(applyTasks(applyTasks(table, [done]), [reply]).list[1]!.status).toBe('completed');
  });

  it('returns the same table when nothing changes', () => {
    expect(applyTasks(table, [])).toBe(table);
    expect(applyTasks(table, [table.list[0]!])).toBe(table);
  });

  it('orders tasks created in the same millisecond by id, stably', () => {
    const next = applyTasks(EMPTY_TABLE, [task({ id: 'x1', created_at: at(1) }), task({ id: 'x2', created_at: at(1) })]);
    expect(ids(next)).toEqual(['x2', 'x1']);
  });

  it('counts the questions waiting as they arrive, are answered, and come with new tasks', () => {
    const asking = (id: string, s: number, question: unknown) =>
      task({ id, created_at: at(s), updated_at: at(s + 10), status: 'input_required', question: question as never });
    let next = applyTasks(table, [asking('b', 2, null)]); // input_required, question not here yet
    expect(next.waiting).toBe(0);
    next = applyTasks(next, [asking('b', 2, { message: 'which?' }), asking('e', 5, { message: 'sure?' })]);
    expect(next.waiting).toBe(2);
    next = applyTasks(next, [task({ id: 'b', created_at: at(2), updated_at: at(20), status: 'working' })]);
    expect(next.waiting).toBe(1);
    consistent(next);
  });

  it('keeps index and count right through a busy batch over ten thousand tasks', () => {
    const big = applyTasks(
      EMPTY_TABLE,
      Array.from({ length: 10_000 }, (_, i) => task({ id: `t${i}`, created_at: at(10_000 - i) })),
    );
    const updates = [
      ...Array.from({ length: 200 }, (_, i) => task({ id: `t${i * 7}`, created_at: at(10_000 - i * 7), status: 'completed' })),
      task({ id: 'newest', created_at: at(20_000) }),
    ];
    const next = applyTasks(big, updates);
    expect(next.list).toHaveLength(10_001);
    expect(next.list[0]!.id).toBe('newest');
    expect(next.list[8]!.status).toBe('completed'); // t7, one place down
    consistent(next);
  });
});

describe('servers and logs', () => {
  it('replaces servers by name and appends new ones', () => {
    const next = applyByName([{ name: 'a', v: 1 }, { name: 'b', v: 1 }], [{ name: 'b', v: 2 }, { name: 'c', v: 1 }]);
    expect(next).toEqual([{ name: 'a', v: 1 }, { name: 'b', v: 2 }, { name: 'c', v: 1 }]);
  });

  it('keeps only the newest log lines', () => {
    expect(appendBounded([1, 2, 3], [4, 5], 4)).toEqual([2, 3, 4, 5]);
  });
});

describe('filtering and searching tasks', () => {
  const list = [
    task({ id: 'aaa-1', tool: 'generate_report', status: 'working', status_message: 'Drafting the summary' }),
    task({ id: 'bbb-2', tool: 'diagnose_incident', status: 'input_required', question: { key: 'q', message: null, kind: 'roots' } }),
    task({ id: 'ccc-3', tool: 'count', server: 'other', status: 'completed' }),
    task({ id: 'ddd-4', tool: 'flaky_export', status: 'failed', progress: { progress: 60, total: 100, message: 'Exporting rows' } }),
  ];
  const ids = (f: Parameters<typeof filterTasks>[1]) => filterTasks(list, f).map((t) => t.id);
  const none = { status: 'all' as const, server: null, query: '' };

  it('filters by status, running meaning not finished', () => {
    expect(ids({ ...none, status: 'active' })).toEqual(['aaa-1', 'bbb-2']);
    expect(ids({ ...none, status: 'needs_input' })).toEqual(['bbb-2']);
    expect(ids({ ...none, status: 'failed' })).toEqual(['ddd-4']);
  });

  it('filters by server', () => {
    expect(ids({ ...none, server: 'other' })).toEqual(['ccc-3']);
  });

  it('searches tool, server, messages and id, case-insensitively, every word', () => {
    expect(ids({ ...none, query: 'DRAFTING' })).toEqual(['aaa-1']);
    expect(ids({ ...none, query: 'exporting' })).toEqual(['ddd-4']);
    expect(ids({ ...none, query: 'ccc' })).toEqual(['ccc-3']);
    expect(ids({ ...none, query: 'demo incident' })).toEqual(['bbb-2']);
    expect(ids({ ...none, query: 'nothing-like-this' })).toEqual([]);
  });

  it('returns the list itself when nothing filters', () => {
    expect(filterTasks(list, none)).toBe(list);
  });
});

describe('what a row shows', () => {
  it('counts a running task up to now and a finished one to its end', () => {
    const running = task({ id: 'r', created_at: at(0) });
    expect(elapsedMs(running, Date.parse(at(30)))).toBe(30_000);
    const done = task({ id: 'd', created_at: at(0), updated_at: at(12), status: 'completed' });
    expect(elapsedMs(done, Date.parse(at(500)))).toBe(12_000);
  });

  it('has a determinate bar only when the total is known', () => {
    expect(progressPercent(task({ id: 'p', progress: { progress: 3, total: 4, message: null } }))).toBe(75);
    expect(progressPercent(task({ id: 'p', progress: { progress: 3, total: null, message: null } }))).toBeNull();
    expect(progressPercent(task({ id: 'p', progress: { progress: 9, total: 4, message: null } }))).toBe(100);
    expect(progressPercent(task({ id: 'p' }))).toBeNull();
  });

  it('shows the error message for a failed task, else the status message', () => {
    expect(taskMessage(task({ id: 'f', status: 'failed', error: { code: null, message: 'boom', reason: null } }))).toBe('boom');
    expect(taskMessage(task({ id: 'w', progress: { progress: 1, total: null, message: 'reading' } }))).toBe('reading');
  });

  it('drops the last status message of a completed task, which no longer describes it', () => {
    expect(taskMessage(task({ id: 'c', status: 'completed', status_message: 'Waiting for you to pick' }))).toBe('');
    expect(taskMessage(task({ id: 'x', status: 'cancelled', status_message: 'Cancelled by the user' }))).toBe('Cancelled by the user');
  });
});
