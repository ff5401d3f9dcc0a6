import { describe, expect, it } from 'vitest';
import { EngineStore } from '../lib/engine.svelte';
import { task } from '../lib/testing';
import type { EngineBatch, PageCursor, Snippet, StatusCounts, TaskFilter, TaskPage, TaskSummary } from '../lib/types';
import { filterOf, NO_COUNTS } from './history';
import { TaskPager, type HistoryReads } from './pager.svelte';

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
  pages: { filter: TaskFilter; cursor: PageCursor | null; reply: Pending<TaskPage> }[] = [];
  asked: { ids: string[]; reply: Pending<string[]> }[] = [];
  page(filter: TaskFilter, cursor: PageCursor | null): Promise<TaskPage> {
    return new Promise((resolve, reject) => this.pages.push({ filter, cursor, reply: { resolve, reject } }));
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
    p!.reply.resolve({ items, next: null });
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
