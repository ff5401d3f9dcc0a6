import { describe, expect, it } from 'vitest';
import { task } from '../lib/testing';
import type { TaskSummary } from '../lib/types';
import { ALL_TASKS, filterOf, type Change } from './history';
import { admitRows, firstGap, indexOf, keepOnly, loadedIn, NO_ROWS, patchRows, putPage, rowAt, type Rows } from './rows';

const at = (s: number) => new Date(Date.UTC(2025, 0, 1, 0, 0, s)).toISOString();
/** Row `i` of a list of 100 made one a second, newest first. */
const row = (i: number, over: Partial<TaskSummary> = {}) => task({ id: `r${i}`, created_at: at(1000 - i), status: 'completed', ...over });
const rowsOf = (from: number, to: number) => Array.from({ length: to - from }, (_, k) => row(from + k));
const ids = (rows: Rows, from: number, to: number) => Array.from({ length: to - from }, (_, k) => rowAt(rows, from + k)?.id ?? '-');
const changed = (t: TaskSummary, before?: TaskSummary, isNew = false): Change => ({ task: t, before, isNew });

function twoRuns(): Rows {
  // 0..10 and 50..60 of a list of 100.
  return putPage(putPage({ runs: [], total: 100 }, 0, rowsOf(0, 10), false), 50, rowsOf(50, 60), false);
}

describe('rows held by position', () => {
  it('pages put side by side become one run, and a short page ends the list', () => {
    let rows = putPage(NO_ROWS, 0, rowsOf(0, 5), false);
    rows = putPage(rows, 5, rowsOf(5, 8), false);
    expect(rows.runs).toHaveLength(1);
    expect(ids(rows, 0, 8)).toEqual(rowsOf(0, 8).map((t) => t.id));
    rows = putPage({ ...rows, total: 100 }, 20, rowsOf(20, 23), true);
    expect(rows.total).toBe(23);
    expect(firstGap(rows, 0, 100)).toEqual({ start: 8, end: 20 });
    expect(firstGap(rows, 20, 100)).toBeNull();
    expect(indexOf(rows, 'r21')).toBe(21);
    expect(loadedIn(rows, 6, 22).map((t) => t.id)).toEqual(['r6', 'r7', 'r20', 'r21']);
  });

  it('a page read again replaces what was held at its places, and a run holding one of its rows elsewhere is dropped', () => {
    const same = putPage(twoRuns(), 8, [row(8), row(9)], false);
    expect(ids(same, 7, 11)).toEqual(['r7', 'r8', 'r9', '-']);
    // The list moved by one between the reads: the run that holds r8 at 8 is off, and goes.
    const moved = putPage(twoRuns(), 9, [row(8), row(9), row(10)], false);
    expect(ids(moved, 7, 12)).toEqual(['-', '-', 'r8', 'r9', 'r10']);
    expect(moved.runs.flatMap((r) => r.items).filter((t) => t.id === 'r8')).toHaveLength(1);
    expect(rowAt(moved, 50)?.id, 'a run without its rows stays').toBe('r50');
  });

  it('only the rows asked to be kept are held', () => {
    const kept = keepOnly(twoRuns(), 5, 55);
    expect(loadedIn(kept, 0, 100).map((t) => t.id)).toEqual(['r5', 'r6', 'r7', 'r8', 'r9', 'r50', 'r51', 'r52', 'r53', 'r54']);
  });
});

describe('live changes on rows held by position', () => {
  it('a new task at the top joins the run at the top and every run after it moves by one', () => {
    const { rows, moved, lost } = patchRows(twoRuns(), [changed(task({ id: 'new', created_at: at(5000) }), undefined, true)], [], ALL_TASKS);
    expect(rowAt(rows, 0)?.id).toBe('new');
    expect(ids(rows, 51, 53)).toEqual(['r50', 'r51']);
    expect(rows.total).toBe(101);
    expect([moved, lost]).toEqual([true, false]);
  });

  it('a task joining in a gap moves the runs after it and is not held', () => {
    const entering = row(30, { status: 'working' });
    const f = filterOf('completed', null, '');
    // r30 was working (not in the completed list) and completes: it joins between the runs.
    const base = putPage(putPage({ runs: [], total: 99 }, 0, rowsOf(0, 10), false), 49, rowsOf(50, 60), false);
    const { rows, lost } = patchRows(base, [changed(row(30), entering)], [], f);
    expect(indexOf(rows, 'r30')).toBe(-1);
    expect(rowAt(rows, 50)?.id).toBe('r50');
    expect(rows.total).toBe(100);
    expect(lost).toBe(false);
  });

  it('a held row that leaves the filter closes its gap; one not held with its record moves the runs after it', () => {
    const f = filterOf('completed', null, '');
    const { rows } = patchRows(twoRuns(), [changed(row(5, { status: 'failed', updated_at: at(2000) }), row(5))], [], f);
    expect(ids(rows, 4, 6)).toEqual(['r4', 'r6']);
    expect(rowAt(rows, 49)?.id).toBe('r50');
    const away = patchRows(twoRuns(), [changed(row(30, { status: 'failed', updated_at: at(2000) }), row(30))], [], f);
    expect(rowAt(away.rows, 49)?.id).toBe('r50');
    expect(rowAt(away.rows, 5)?.id).toBe('r5');
    expect(away.rows.total).toBe(99);
  });

  it('a pin under a filter moves a held row up to the pinned ones', () => {
    const f = filterOf('completed', null, '');
    const { rows } = patchRows(twoRuns(), [changed(row(55, { pinned: true, updated_at: at(2000) }), row(55))], [], f);
    expect(rowAt(rows, 0)?.id).toBe('r55');
    expect(ids(rows, 51, 57)).toEqual(['r50', 'r51', 'r52', 'r53', 'r54', 'r56']);
  });

  it('a delete of a row not held, with runs below the top, leaves them unsure', () => {
    const p = patchRows(twoRuns(), [], [{ id: 'r30', tool: 'generate_report', server: 'demo', status: 'completed' }], ALL_TASKS);
    expect(p.rows.total).toBe(99);
    expect(p.lost).toBe(true);
    const top = patchRows(putPage({ runs: [], total: 100 }, 0, rowsOf(0, 10), false), [], [{ id: 'r30', tool: 'generate_report', server: 'demo', status: 'completed' }], ALL_TASKS);
    expect(top.lost, 'only the top is held: nothing below it to move').toBe(false);
  });

  it('the store saying a task matches a search places it inside a run, or leaves the runs after a gap unsure', () => {
    const f = filterOf('all', null, 'quokka');
    const mid = task({ id: 'mid', status: 'completed', created_at: new Date(Date.parse(at(995)) - 500).toISOString() });
    const inside = admitRows(twoRuns(), [mid], [], f);
    expect(ids(inside.rows, 5, 8)).toEqual(['r5', 'mid', 'r6']);
    expect(inside.lost).toBe(false);
    const gap = admitRows(twoRuns(), [row(30)], [], f);
    expect(gap.lost).toBe(true);
    const out = admitRows(twoRuns(), [], [row(52)], f);
    expect(ids(out.rows, 51, 53)).toEqual(['r51', 'r53']);
  });
});
