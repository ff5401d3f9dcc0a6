import { describe, expect, it } from 'vitest';
import type { TaskEvent } from '../lib/types';
import { eventsCursor, mergeEvents, recordKey } from './detail';
import { task } from '../lib/testing';

function ev(id: number): TaskEvent {
  return { id, task_id: 't1', at: '2025-01-01T00:00:00.000Z', kind: 'status', from_status: null, to_status: null, data: {} };
}
const ids = (es: readonly TaskEvent[]) => es.map((e) => e.id);

describe('the detail pane’s timeline', () => {
  it('asks for the events after the newest it holds', () => {
    expect(eventsCursor([])).toBe(0);
    expect(eventsCursor([ev(3), ev(9)])).toBe(9);
  });

  it('appends the newer events and keeps the same array when nothing is new', () => {
    const held = [ev(1), ev(4)];
    expect(ids(mergeEvents(held, [ev(7), ev(8)]))).toEqual([1, 4, 7, 8]);
    expect(mergeEvents(held, [])).toBe(held);
    expect(mergeEvents(held, [ev(4)])).toBe(held);
  });

  it('never duplicates an event two overlapping answers both carried', () => {
    const first = mergeEvents([ev(1)], [ev(2), ev(3)]);
    const second = mergeEvents(first, [ev(2), ev(3), ev(5)]);
    expect(ids(second)).toEqual([1, 2, 3, 5]);
    expect(ids(mergeEvents([ev(1), ev(5)], [ev(3)]))).toEqual([1, 3, 5]);
  });
});

describe('when the whole record is fetched again', () => {
  it('not for progress or a status message, but for a result, a new question or an answer', () => {
    const base = task({ id: 't1', status: 'working' });
    const k = recordKey(base);
    expect(recordKey({ ...base, progress: { progress: 5, total: 10, message: 'x' }, status_message: 'busy', updated_at: 'later' })).toBe(k);
    expect(recordKey({ ...base, has_result: true })).not.toBe(k);
    const asked = { ...base, status: 'input_required' as const, question: { key: 'q1', message: 'Which?', kind: 'form' as const } };
    expect(recordKey(asked)).not.toBe(k);
    expect(recordKey({ ...asked, question: { key: 'q2', message: 'Which?', kind: 'form' as const } })).not.toBe(recordKey(asked));
    expect(recordKey({ ...base, id: 't2' })).not.toBe(k);
  });
});
