import { describe, expect, it } from 'vitest';
import { task } from '../lib/testing';
import type { Purged, TaskSummary } from '../lib/types';
import {
  admitMatches,
  ALL_TASKS,
  appendPage,
  cursorOf,
  filterOf,
  highlightParts,
  matchesFilter,
  NO_COUNTS,
  patchCounts,
  patchLoaded,
  pinnedFirst,
  searchMayMove,
  startOfDay,
  totalOf,
  type Change,
  type Loaded,
} from './history';

const at = (s: number) => new Date(Date.UTC(2025, 0, 1, 0, 0, s)).toISOString();
const ids = (l: Loaded) => l.items.map((t) => t.id);
const changed = (t: TaskSummary, before?: TaskSummary, isNew = false): Change => ({ task: t, before, isNew });
const purged = (id: string, status: Purged['status'] = 'completed', server = 'demo'): Purged => ({ id, tool: 'generate_report', server, status });

describe('the filter the toolbar means', () => {
  it('maps the status choices to statuses and a blank search to none', () => {
    expect(filterOf('all', null, '  ')).toEqual(ALL_TASKS);
    expect(filterOf('active', 'demo', '').statuses).toEqual(['working', 'input_required']);
    expect(filterOf('failed', null, ' q3 report ').search).toBe('q3 report');
  });

  it('puts pinned tasks first under any narrowing, never in the whole list', () => {
    expect(pinnedFirst(ALL_TASKS)).toBe(false);
    expect(pinnedFirst(filterOf('completed', null, ''))).toBe(true);
    expect(pinnedFirst(filterOf('all', null, 'q3'))).toBe(true);
  });

  it('tells membership here except for a search, which only the store can tell', () => {
    expect(matchesFilter(task({ id: 'a', status: 'completed' }), filterOf('completed', null, ''))).toBe(true);
    expect(matchesFilter(task({ id: 'a', status: 'working' }), filterOf('completed', null, ''))).toBe(false);
    expect(matchesFilter(task({ id: 'a', server: 'x' }), filterOf('all', 'demo', ''))).toBe(false);
    expect(matchesFilter(task({ id: 'a' }), filterOf('all', null, 'q3'))).toBe(null);
  });
});

describe('counts per status', () => {
  const base = { ...NO_COUNTS, working: 2, completed: 5, input_required: 1, waiting: 1, total: 8 };

  it('a new task adds one, a finished one moves across, a deleted one leaves', () => {
    const running = task({ id: 'n', status: 'working' });
    const added = patchCounts(base, undefined, running);
    expect(added).toMatchObject({ working: 3, total: 9 });
    const done = patchCounts(added, running, { ...running, status: 'completed' });
    expect(done).toMatchObject({ working: 2, completed: 6, total: 9 });
    expect(patchCounts(done, purged('n'), undefined)).toMatchObject({ completed: 5, total: 8 });
  });

  it('counts a question only once it has arrived, and an answered one out', () => {
    const asked = task({ id: 'q', status: 'input_required', question: null });
    const c1 = patchCounts(base, task({ id: 'q', status: 'working' }), asked);
    expect(c1).toMatchObject({ working: 1, input_required: 2, waiting: 1 });
    const known = { ...asked, question: { key: 'k', message: 'Which?', kind: 'form' } };
    const c2 = patchCounts(c1, asked, known);
    expect(c2).toMatchObject({ input_required: 2, waiting: 2, total: 8 });
    expect(patchCounts(c2, known, { ...known, status: 'working', question: null })).toMatchObject({ waiting: 1, working: 2 });
  });

  it('a change that moves nothing returns the same counts', () => {
    const t = task({ id: 'a', status: 'working' });
    expect(patchCounts(base, t, { ...t, status_message: 'later' })).toBe(base);
  });

  it('the total of a filter is its statuses, or the waiting count', () => {
    expect(totalOf(base, filterOf('active', null, ''))).toBe(3);
    expect(totalOf(base, ALL_TASKS)).toBe(8);
    expect(totalOf(base, { ...ALL_TASKS, waiting: true })).toBe(1);
  });
});

describe('the loaded pages, patched by live changes', () => {
  const a = task({ id: 'a', created_at: at(1), status: 'completed' });
  const b = task({ id: 'b', created_at: at(2), status: 'completed' });
  const c = task({ id: 'c', created_at: at(3), status: 'working' });
  const whole: Loaded = { items: [c, b, a], done: true, total: 3 };
  const prefix: Loaded = { items: [c, b], done: false, total: 10 };

  it('a new task joins at the top and the total grows', () => {
    const d = task({ id: 'd', created_at: at(4) });
    const { loaded, exact } = patchLoaded(prefix, [changed(d, undefined, true)], [], ALL_TASKS);
    expect(ids(loaded)).toEqual(['d', 'c', 'b']);
    expect(loaded.total).toBe(11);
    expect(exact).toBe(true);
  });

  it('an update replaces its row where it stands', () => {
    const later = { ...c, status_message: 'Halfway', updated_at: at(9) };
    const { loaded } = patchLoaded(prefix, [changed(later, c)], [], ALL_TASKS);
    expect(loaded.items[0]).toBe(later);
    expect(loaded.total).toBe(10);
  });

  it('an older record than the one loaded changes nothing', () => {
    const newer = { ...c, updated_at: at(9), status_message: 'new' };
    const start: Loaded = { items: [newer, b], done: false, total: 10 };
    const { loaded } = patchLoaded(start, [changed({ ...c, status_message: 'old' }, newer)], [], ALL_TASKS);
    expect(loaded.items[0]).toBe(newer);
  });

  it('a task that leaves a status filter leaves the list, and one that enters it joins', () => {
    const running = filterOf('active', null, '');
    const start: Loaded = { items: [c], done: true, total: 1 };
    const done = { ...c, status: 'completed' as const, updated_at: at(9) };
    const left = patchLoaded(start, [changed(done, c)], [], running).loaded;
    expect(ids(left)).toEqual([]);
    expect(left.total).toBe(0);
    const completed = filterOf('completed', null, '');
    const joined = patchLoaded({ items: [b, a], done: true, total: 2 }, [changed(done, c)], [], completed).loaded;
    expect(ids(joined)).toEqual(['c', 'b', 'a']);
    expect(joined.total).toBe(3);
  });

  it('a task beyond the loaded prefix is counted but comes with a later page', () => {
    const old = task({ id: 'old', created_at: at(0), status: 'working' });
    const done = { ...old, status: 'completed' as const, updated_at: at(9) };
    const { loaded } = patchLoaded({ items: [b], done: false, total: 4 }, [changed(done, old)], [], filterOf('completed', null, ''));
    expect(ids(loaded)).toEqual(['b']);
    expect(loaded.total).toBe(5);
  });

  it('a deleted task goes, and the total follows', () => {
    const { loaded, exact } = patchLoaded(whole, [], [purged('b')], ALL_TASKS);
    expect(ids(loaded)).toEqual(['c', 'a']);
    expect(loaded.total).toBe(2);
    expect(exact).toBe(true);
    const beyond = patchLoaded(prefix, [], [purged('zzz')], ALL_TASKS).loaded;
    expect(beyond.total).toBe(9);
    const otherServer = patchLoaded(prefix, [], [purged('zzz', 'completed', 'other')], filterOf('all', 'demo', '')).loaded;
    expect(otherServer.total).toBe(10);
  });

  it('a pinned task moves to the top under a filter, and back when unpinned', () => {
    const f = filterOf('completed', null, '');
    const start: Loaded = { items: [b, a], done: true, total: 2 };
    const pinned = { ...a, pinned: true };
    const up = patchLoaded(start, [changed(pinned, a)], [], f).loaded;
    expect(ids(up)).toEqual(['a', 'b']);
    const down = patchLoaded(up, [changed(a, pinned)], [], f).loaded;
    expect(ids(down)).toEqual(['b', 'a']);
    // Without a filter the list stays in time order.
    expect(ids(patchLoaded(start, [changed(pinned, a)], [], ALL_TASKS).loaded)).toEqual(['b', 'a']);
  });

  it('under a search only tasks already found change, and the counts are the store’s to say', () => {
    const f = filterOf('all', null, 'q3');
    const d = task({ id: 'd', created_at: at(4) });
    const { loaded, exact } = patchLoaded({ items: [b], done: true, total: 1 }, [changed(d, undefined, true)], [], f);
    expect(ids(loaded)).toEqual(['b']);
    expect(exact).toBe(false);
  });

  it('under a search the store’s word puts a task that came to match in its place and takes one that stopped out', () => {
    const f = filterOf('all', null, 'q3');
    const d = task({ id: 'd', created_at: at(4) });
    const between = task({ id: 'between', created_at: '2025-01-01T00:00:02.500Z' });
    const joined = admitMatches(whole, [d, between], ['a'], f);
    expect(ids(joined)).toEqual(['d', 'c', 'between', 'b']);
    expect(joined.total).toBe(4);
    // A prefix takes in only what falls inside it.
    const old = task({ id: 'old', created_at: at(0) });
    const inPrefix = admitMatches(prefix, [old, d], [], f);
    expect(ids(inPrefix)).toEqual(['d', 'c', 'b']);
    expect(inPrefix.total).toBe(11);
  });

  it('the store’s word on a task already shown keeps the newer record and its pin’s place', () => {
    const f = filterOf('all', null, 'q3');
    const newer = { ...b, status_message: 'newer', updated_at: at(9) };
    const start: Loaded = { items: [c, newer, a], done: true, total: 3 };
    expect(admitMatches(start, [b], [], f)).toBe(start);
    const pinned = { ...a, pinned: true, updated_at: at(10) };
    expect(ids(admitMatches(start, [pinned], [], f))).toEqual(['a', 'c', 'b']);
    expect(admitMatches(start, [], ['nobody'], f)).toBe(start);
  });

  it('only a new task, a status, a question or an answer can move a task in or out of a search', () => {
    const t = task({ id: 't', status: 'working' });
    expect(searchMayMove(changed(t, undefined, true))).toBe(true);
    expect(searchMayMove(changed(t, undefined, false)), 'nothing known of it before').toBe(true);
    expect(searchMayMove(changed({ ...t, progress: { progress: 3, total: null, message: 'x' } }, t))).toBe(false);
    expect(searchMayMove(changed({ ...t, status_message: 'later', pinned: true }, t))).toBe(false);
    expect(searchMayMove(changed({ ...t, status: 'completed' }, t))).toBe(true);
    const asking = { ...t, status: 'input_required' as const, question: { key: 'a', message: null, kind: 'form' } };
    expect(searchMayMove(changed({ ...asking, question: { key: 'b', message: null, kind: 'form' } }, asking))).toBe(true);
  });

  it('a page appends after the prefix without repeating a task a live change put there', () => {
    const more = appendPage({ items: [c, b], done: false, total: 3 }, [b, a], true);
    expect(ids(more)).toEqual(['c', 'b', 'a']);
    expect(more.total).toBe(3);
  });

  it('the next page starts after the last task loaded, in its segment', () => {
    expect(cursorOf([], ALL_TASKS)).toBeNull();
    expect(cursorOf([c, b], ALL_TASKS)).toEqual({ pinned: null, before: 'b' });
    expect(cursorOf([{ ...c, pinned: true }], filterOf('all', 'demo', ''))).toEqual({ pinned: true, before: 'c' });
  });
});

describe('a search match, highlighted', () => {
  it('cuts the text into plain and matched parts by UTF-16 offsets', () => {
    const text = '😀 The Q3 report';
    const parts = highlightParts(text, [{ start: 7, end: 9 }]);
    expect(parts).toEqual([
      { text: '😀 The ', hit: false },
      { text: 'Q3', hit: true },
      { text: ' report', hit: false },
    ]);
  });

  it('keeps markup in a server’s text as text', () => {
    const parts = highlightParts('<img src=x onerror=alert(1)> q3', [{ start: 29, end: 31 }]);
    expect(parts.map((p) => p.text).join('')).toBe('<img src=x onerror=alert(1)> q3');
    expect(parts[1]).toEqual({ text: 'q3', hit: true });
  });

  it('survives offsets that overlap, run backwards or past the end', () => {
    const parts = highlightParts('abcdef', [
      { start: 4, end: 99 },
      { start: 1, end: 3 },
      { start: 2, end: 5 },
      { start: 3, end: 1 },
    ]);
    expect(parts.map((p) => p.text).join('')).toBe('abcdef');
    expect(parts.filter((p) => p.hit).map((p) => p.text)).toEqual(['bc', 'de', 'f']);
  });
});

describe('the delete dialog’s date', () => {
  it('is local midnight of the day picked, and nothing for a bad date', () => {
    const iso = startOfDay('2026-03-04');
    expect(iso).not.toBeNull();
    const d = new Date(iso!);
    expect([d.getFullYear(), d.getMonth(), d.getDate(), d.getHours(), d.getMinutes()]).toEqual([2026, 2, 4, 0, 0]);
    expect(startOfDay('yesterday')).toBeNull();
  });
});
