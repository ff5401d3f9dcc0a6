import { describe, expect, it } from 'vitest';
import { EngineStore } from '../lib/engine.svelte';
import { task } from '../lib/testing';
import type { EngineBatch, Snippet, StatusCounts, TaskFilter, TaskSummary } from '../lib/types';
import { filterOf, NO_COUNTS } from './history';
import { TaskPager, type HistoryReads } from './pager.svelte';
import { loadedCount, rowAt } from './rows';

const at = (s: number) => new Date(Date.UTC(2025, 0, 1, 0, 0, s)).toISOString();
const batch = (b: Partial<EngineBatch>): EngineBatch => ({ tasks: [], deleted: [], servers: [], logs: [], tools_changed: [], ...b });
const settle = () => new Promise((r) => setTimeout(r, 0));

type Pending<T> = { resolve: (v: T) => void; reject: (e: unknown) => void };

/**
 * A store the test answers by hand: each read waits until the test resolves it, so the order in
 * which pages, answers and changes arrive is the test's to choose.
 */
class HandStore implements HistoryReads {
  readonly live = true;
  pages: { filter: TaskFilter; offset: number; limit: number; reply: Pending<TaskSummary[]> }[] = [];
  asked: { ids: string[]; reply: Pending<string[]> }[] = [];
  window(filter: TaskFilter, offset: number, limit: number): Promise<TaskSummary[]> {
    return new Promise((resolve, reject) => this.pages.push({ filter, offset, limit, reply: { resolve, reject } }));
  }
  counts(): Promise<StatusCounts> {
    return Promise.resolve(NO_COUNTS);
  }
  snippets(): Promise<Snippet[]> {
    return Promise.resolve([]);
  }
  matches(_filter: TaskFilter, ids: string[]): Promise<string[]> {
    return new Promise((resolve, reject) => this.asked.push({ ids, reply: { resolve, reject } }));
  }
  async answerPage(items: TaskSummary[]): Promise<void> {
    await settle();
    const p = this.pages.shift();
    expect(p, 'a page was asked for').toBeDefined();
    // Shorter than asked: the list ends with it.
    p!.reply.resolve(items);
    await settle();
  }
  async answerMatches(found: string[]): Promise<string[]> {
    const q = this.asked.shift();
    expect(q, 'the store was asked').toBeDefined();
    q!.reply.resolve(found);
    await settle();
    return q!.ids;
  }
}

function setUp(filter: TaskFilter) {
  const source = new EngineStore((commit) => commit());
  const store = new HandStore();
  const pager = new TaskPager(source, store);
  pager.setFilter(filter);
  pager.want(50);
  return { source, store, pager, ids: () => pager.loaded.items.map((t) => t.id) };
}

describe('a search kept true by live changes', () => {
  const found = task({ id: 'found', created_at: at(1), status: 'completed' });

  it('a new task the store says matches joins at the top, one it does not stays out', async () => {
    const { source, store, pager, ids } = setUp(filterOf('all', null, 'quokka'));
    await store.answerPage([found]);
    expect(ids()).toEqual(['found']);

    source.apply(batch({ tasks: [task({ id: 'new', created_at: at(5) }), task({ id: 'other', created_at: at(6) })] }));
    expect(ids(), 'not before the store has said').toEqual(['found']);
    expect(await store.answerMatches(['new'])).toEqual(['new', 'other']);
    expect(ids()).toEqual(['new', 'found']);
    expect(pager.loaded.total).toBe(2);
    pager.dispose();
  });

  it('a task that no longer matches leaves, and a filter the row itself fails needs no question', async () => {
    const { source, store, pager, ids } = setUp(filterOf('all', null, 'quokka'));
    const asking = task({ id: 'asking', created_at: at(2), status: 'input_required', question: { key: 'q1', message: 'Quokka?', kind: 'form' } });
    await store.answerPage([asking, found]);
    // Answered: the question's words are no longer the task's.
    source.apply(batch({ tasks: [{ ...asking, status: 'working', question: null, updated_at: at(9) }] }));
    await store.answerMatches(['found']);
    expect(ids()).toEqual(['found']);

    const active = setUp(filterOf('active', null, 'quokka'));
    const running = task({ id: 'run', created_at: at(2) });
    await active.store.answerPage([running]);
    active.source.apply(batch({ tasks: [{ ...running, status: 'completed', updated_at: at(9) }] }));
    expect(active.ids()).toEqual([]);
    expect(active.store.asked, 'a finished task is not in the active list, whatever it holds').toEqual([]);
    pager.dispose();
    active.pager.dispose();
  });

  it('an answer about a task that changed again meanwhile waits for the next answer', async () => {
    const { source, store, pager, ids } = setUp(filterOf('all', null, 'quokka'));
    await store.answerPage([]);
    const t = task({ id: 't', created_at: at(3) });
    source.apply(batch({ tasks: [t] }));
    // It ends while the store is asked about it: that answer is old.
    source.apply(batch({ tasks: [{ ...t, status: 'completed', updated_at: at(8) }] }));
    await store.answerMatches(['t']);
    expect(ids()).toEqual([]);
    expect(await store.answerMatches(['t'])).toEqual(['t']);
    expect(pager.loaded.items[0]?.status).toBe('completed');
    pager.dispose();
  });

  it('progress and messages of a task change nothing the search reads: no question, and one on its way still holds', async () => {
    const { source, store, pager, ids } = setUp(filterOf('all', null, 'quokka'));
    await store.answerPage([]);
    const shown = task({ id: 'shown', created_at: at(2) });
    source.apply(batch({ tasks: [shown] }));
    await store.answerMatches(['shown']);
    source.apply(batch({ tasks: [{ ...shown, progress: { progress: 1, total: 2, message: null }, updated_at: at(5) }] }));
    expect(store.asked).toEqual([]);
    expect(pager.loaded.items[0]?.progress?.progress).toBe(1);

    const t = task({ id: 't', created_at: at(3) });
    source.apply(batch({ tasks: [t] }));
    source.apply(batch({ tasks: [{ ...t, status_message: 'halfway', updated_at: at(8) }] }));
    expect(await store.answerMatches(['t'])).toEqual(['t']);
    expect(ids()).toEqual(['t', 'shown']);
    expect(pager.loaded.items[0]?.status_message, 'the newer record joins').toBe('halfway');
    expect(store.asked).toEqual([]);
    pager.dispose();
  });

  it('a task deleted while the store is asked about it does not come back', async () => {
    const { source, store, pager, ids } = setUp(filterOf('all', null, 'quokka'));
    await store.answerPage([]);
    source.apply(batch({ tasks: [task({ id: 'd', created_at: at(3), status: 'completed' })] }));
    source.apply(batch({ deleted: [{ id: 'd', tool: 'generate_report', server: 'demo', status: 'completed' }] }));
    await store.answerMatches(['d']);
    expect(ids()).toEqual([]);
    expect(store.asked).toEqual([]);
    pager.dispose();
  });

  it('a change that comes while a page is on its way is asked about once it is in, and takes out the row the page brought', async () => {
    const { source, store, pager, ids } = setUp(filterOf('all', null, 'quokka'));
    const stale = task({ id: 's', created_at: at(4), status: 'input_required', question: { key: 'q', message: 'Quokka or wombat?', kind: 'form' } });
    await store.answerPage([stale]);
    // The search changes and its first page is asked for; the question is answered in between.
    pager.setFilter(filterOf('all', null, 'quokka wombat'));
    source.apply(batch({ tasks: [{ ...stale, status: 'working', question: null, updated_at: at(9) }] }));
    // The page was read before the task stopped matching: it still holds it.
    await store.answerPage([stale]);
    expect(await store.answerMatches([])).toEqual(['s']);
    expect(ids(), 'the answer takes the stale row out').toEqual([]);
    pager.dispose();
  });

  it('changes to a search nobody shows any more are not asked about, and old answers change nothing', async () => {
    const { source, store, pager, ids } = setUp(filterOf('all', null, 'quokka'));
    await store.answerPage([]);
    source.apply(batch({ tasks: [task({ id: 'x', created_at: at(3) })] }));
    pager.setFilter(filterOf('all', null, ''));
    await store.answerPage([]);
    await store.answerMatches(['x']);
    expect(ids()).toEqual([]);
    pager.dispose();
  });
});

describe('a filter kept true by live changes', () => {
  it('a task that enters a status filter joins, one that leaves it goes, and the store is not asked', async () => {
    const { source, store, pager, ids } = setUp(filterOf('completed', null, ''));
    const old = task({ id: 'old', created_at: at(1), status: 'completed' });
    await store.answerPage([old]);
    const t = task({ id: 't', created_at: at(3) });
    source.apply(batch({ tasks: [t] }));
    expect(ids()).toEqual(['old']);
    source.apply(batch({ tasks: [{ ...t, status: 'completed', updated_at: at(9) }] }));
    expect(ids()).toEqual(['t', 'old']);
    expect(store.asked).toEqual([]);
    pager.dispose();
  });
});

/** A list of `n` finished tasks, newest first, and a store that answers from it at once. */
class ListStore implements HistoryReads {
  readonly live = true;
  asks: { offset: number; limit: number }[] = [];
  /** Pages held back until the test lets them go (`release`). */
  hold = false;
  held: (() => void)[] = [];
  constructor(public list: TaskSummary[]) {}
  window(_filter: TaskFilter, offset: number, limit: number): Promise<TaskSummary[]> {
    this.asks.push({ offset, limit });
    return new Promise((resolve) => {
      // Read when answered, as the store reads when the command runs.
      const answer = () => resolve(this.list.slice(offset, offset + limit));
      if (this.hold) this.held.push(answer);
      else answer();
    });
  }
  counts(): Promise<StatusCounts> {
    const n = this.list.length;
    return Promise.resolve({ ...NO_COUNTS, completed: n, total: n });
  }
  snippets(): Promise<Snippet[]> {
    return Promise.resolve([]);
  }
  matches(): Promise<string[]> {
    return Promise.resolve([]);
  }
  async release(): Promise<void> {
    const held = this.held;
    this.held = [];
    for (const answer of held) answer();
    await settle();
  }
}

const START = Date.UTC(2025, 0, 1);
const nth = (i: number, n: number) =>
  task({ id: `t${String(i).padStart(6, '0')}`, status: 'completed', created_at: new Date(START + (n - i) * 1000).toISOString() });
const listOf = (n: number) => Array.from({ length: n }, (_, i) => nth(i, n));

async function scrolled(n: number) {
  const source = new EngineStore((commit) => commit());
  const store = new ListStore(listOf(n));
  const pager = new TaskPager(source, store);
  pager.setFilter(filterOf('all', null, ''));
  pager.show(0, 25);
  for (let i = 0; i < 5; i++) await settle();
  const at = (i: number) => rowAt(pager.rows, i)?.id;
  return { source, store, pager, at };
}

/** Past a drag's pause (the pager reads only what is shown while dragged, at most every 100 ms). */
async function settled() {
  for (let i = 0; i < 10; i++) await settle();
  await new Promise((r) => setTimeout(r, 170));
  for (let i = 0; i < 10; i++) await settle();
}

describe('the list read by position', () => {
  it('a jump to the middle of 100,000 tasks reads that stretch and nothing between it and the top', async () => {
    const { store, pager, at } = await scrolled(100_000);
    expect(at(0)).toBe('t000000');
    expect(pager.rows.total).toBe(100_000);
    const before = store.asks.length;
    pager.show(50_000, 50_025);
    await settled();
    expect(at(50_000)).toBe('t050000');
    expect(at(50_024)).toBe('t050024');
    const jumped = store.asks.slice(before);
    expect(jumped[0]?.offset, 'the first read is the stretch on screen').toBe(50_000);
    expect(jumped.every((a) => a.offset >= 50_000 - 1000 && a.offset + a.limit <= 50_025 + 1000)).toBe(true);
    expect(rowAt(pager.rows, 20_000), 'nothing between was read').toBeUndefined();
    pager.dispose();
  });

  it('dragged far every frame, it reads the rows shown at most every 100 ms, and the rows around once it stops', async () => {
    const { store, pager, at } = await scrolled(100_000);
    await settled();
    const before = store.asks.length;
    const t0 = performance.now();
    for (let frame = 1; frame <= 30; frame++) {
      pager.show(frame * 3_000, frame * 3_000 + 25);
      await new Promise((r) => setTimeout(r, 16));
    }
    const took = performance.now() - t0;
    const during = store.asks.length - before;
    expect(during).toBeLessThanOrEqual(Math.ceil(took / 100) + 1);
    expect(store.asks.slice(before).every((a) => a.limit <= 50), 'what is shown and a screen more').toBe(true);
    await settled();
    expect(at(90_000)).toBe('t090000');
    expect(at(90_300), 'read around once stopped').toBe('t090300');
    pager.dispose();
  });

  it('dragged faster than a read could land, it reads only at the first jump, and the rows shown once it stops', async () => {
    const { store, pager, at } = await scrolled(100_000);
    await settled();
    const before = store.asks.length;
    for (let frame = 1; frame <= 20; frame++) {
      pager.show(frame * 170, frame * 170 + 25);
      await new Promise((r) => setTimeout(r, 16));
    }
    expect(store.asks.length - before, 'the first jump alone').toBeLessThanOrEqual(1);
    await settled();
    expect(at(3_400)).toBe('t003400');
    expect(at(3_424)).toBe('t003424');
    pager.dispose();
  });

  it('scrolled up, the rows read beyond the shown ones are above them', async () => {
    const { store, pager, at } = await scrolled(100_000);
    pager.show(60_000, 60_025);
    await settled();
    const before = store.asks.length;
    pager.show(40_000, 40_025);
    await settled();
    const first = store.asks[before]!;
    expect(first.offset + first.limit, 'it ends with the shown rows').toBe(40_025);
    expect(first.offset).toBeLessThan(40_000);
    expect(at(40_000)).toBe('t040000');
    pager.dispose();
  });

  it('holds only the rows near the viewport, however far the list was scrolled', async () => {
    const { pager, at } = await scrolled(100_000);
    for (let i = 1; i <= 12; i++) {
      const top = i * 8_000;
      pager.show(top, top + 25);
      await settled();
      expect(at(top)).toBe(`t${String(top).padStart(6, '0')}`);
      expect(loadedCount(pager.rows)).toBeLessThanOrEqual(2 * 1000 + 25 + 400);
    }
    pager.dispose();
  });

  it('a new task at the top moves the rows held far down by one, and the count follows', async () => {
    const { source, store, pager, at } = await scrolled(10_000);
    pager.show(5_000, 5_025);
    await settled();
    const fresh = task({ id: 'new', status: 'working', created_at: new Date(START + 20_000_000).toISOString() });
    store.list = [fresh, ...store.list];
    source.apply(batch({ tasks: [fresh] }));
    await settled();
    expect(pager.rows.total).toBe(10_001);
    expect(at(5_001), 'the row that was at 5,000').toBe('t005000');
    expect(at(5_000)).toBe('t004999');
    // Back at the top, the new task is first.
    pager.show(0, 25);
    await settled();
    expect(at(0)).toBe('new');
    expect(at(1)).toBe('t000000');
    pager.dispose();
  });

  it('a status change patches a row held far down in place, and one not held moves nothing', async () => {
    const { source, pager, at } = await scrolled(10_000);
    pager.show(5_000, 5_025);
    await settled();
    const shown = rowAt(pager.rows, 5_010)!;
    source.apply(batch({ tasks: [{ ...shown, status: 'failed', updated_at: new Date(START + 30_000_000).toISOString() }] }));
    expect(rowAt(pager.rows, 5_010)?.status).toBe('failed');
    const far = nth(100, 10_000);
    source.apply(batch({ tasks: [{ ...far, status_message: 'again', updated_at: new Date(START + 30_000_000).toISOString() }] }));
    expect(at(5_010)).toBe('t005010');
    expect(pager.rows.total).toBe(10_000);
    pager.dispose();
  });

  it('a delete closes the gap of a row held, and one of a row nobody holds has the shown rows read again', async () => {
    const { source, store, pager, at } = await scrolled(10_000);
    pager.show(5_000, 5_025);
    await settled();
    const purge = (id: string) => ({ id, tool: 'generate_report', server: 'demo', status: 'completed' as const });
    store.list = store.list.filter((t) => t.id !== 't005010');
    source.apply(batch({ deleted: [purge('t005010')] }));
    expect(at(5_010)).toBe('t005011');
    expect(pager.rows.total).toBe(9_999);
    store.list = store.list.filter((t) => t.id !== 't000100');
    const asked = store.asks.length;
    source.apply(batch({ deleted: [purge('t000100')] }));
    await settled();
    expect(store.asks.length, 'read again').toBeGreaterThan(asked);
    expect(pager.rows.total).toBe(9_998);
    // Two rows gone before 5,012: the list as the store now has it.
    expect(at(5_010)).toBe('t005012');
    expect(at(5_000)).toBe('t005001');
    pager.dispose();
  });

  it('a task looked up by id (selected, checked) is still found after the list scrolled far from its row', async () => {
    const { source, pager } = await scrolled(100_000);
    expect(pager.byId('t000003')?.id).toBe('t000003');
    pager.show(80_000, 80_025);
    await settled();
    expect(rowAt(pager.rows, 3), 'its row was dropped').toBeUndefined();
    expect(pager.byId('t000003')?.id).toBe('t000003');
    source.apply(batch({ deleted: [{ id: 't000003', tool: 'generate_report', server: 'demo', status: 'completed' }] }));
    expect(pager.byId('t000003'), 'deleted: gone').toBeUndefined();
    pager.dispose();
  });

  it('a task made and finished while a page is on its way shows finished, wherever the page was read', async () => {
    const { source, store, pager, at } = await scrolled(1_000);
    store.hold = true;
    pager.show(500, 525);
    await settle();
    const made = task({ id: 'made', status: 'working', created_at: new Date(START + 20_000_000).toISOString(), updated_at: at9() });
    store.list = [made, ...store.list];
    source.apply(batch({ tasks: [made] }));
    const done = { ...made, status: 'completed' as const, updated_at: new Date(START + 20_000_100).toISOString() };
    store.list = [done, ...store.list.slice(1)];
    source.apply(batch({ tasks: [done] }));
    // The page was read after the task was made: its rows already count it.
    store.hold = false;
    await store.release();
    await settled();
    expect(at(501), 'the row that was at 500').toBe('t000500');
    pager.show(0, 25);
    await settled();
    expect(rowAt(pager.rows, 0)).toMatchObject({ id: 'made', status: 'completed' });
    expect(at(1)).toBe('t000000');
    expect(pager.rows.total).toBe(1_001);
    pager.dispose();
  });
});

function at9() {
  return new Date(START + 20_000_000).toISOString();
}
