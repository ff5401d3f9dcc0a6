import { describe, expect, it } from 'vitest';
import { appendBounded, applyByName, applyTasks, EMPTY_TABLE, needsAnswer, type TaskTable } from './engineTable';
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
