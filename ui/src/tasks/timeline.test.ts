import { describe, expect, it } from 'vitest';
import type { EventKind, JsonValue, TaskEvent, TaskStatus } from '../lib/types';
import { timeline } from './timeline';

const START = '2026-12-01T10:00:00.000Z';
let nextId = 1;
function ev(kind: EventKind, data: JsonValue, secondsIn = 0, from: TaskStatus | null = 'working', to: TaskStatus | null = 'working'): TaskEvent {
  return { id: nextId++, task_id: 't1', at: new Date(Date.parse(START) + secondsIn * 1000).toISOString(), kind, from_status: from, to_status: to, data };
}
const created = (mode = 'task') => ev('created', { server: 'demo', tool: 'diagnose_incident', mode, idempotency_key: 'k' }, 0, null, 'working');
const words = (events: TaskEvent[]) => timeline(events, START).map((l) => l.text);

const diagnosisSchema = {
  type: 'object',
  properties: {
    service: { type: 'string', title: 'Affected service', oneOf: [{ const: 'auth', title: 'Auth gateway' }, { const: 'search', title: 'Search cluster' }] },
    notes: { type: 'string', title: 'Notes' },
    page_oncall: { type: 'boolean', title: 'Page on-call' },
  },
};
const formQuestion = (key: string, secondsIn: number) =>
  ev('question', { key, message: 'Which service?', request: { method: 'elicitation/create', params: { message: 'Which service?', requestedSchema: diagnosisSchema } } }, secondsIn, 'working', 'input_required');

describe('the timeline in words', () => {
  it('says a task started, was accepted, and completed with its duration (modern era)', () => {
    const lines = timeline(
      [created(), ev('remote', { era: 'modern', remote_task_id: 'r1', ttl_ms: null, poll_interval_ms: 500 }, 1), ev('result', { server_status: 'completed', is_error: false }, 61, 'working', 'completed')],
      START,
    );
    expect(lines.map((l) => l.text)).toEqual(['Started as a task', 'The server accepted the task', 'Completed in 1m 01s']);
    expect(lines.map((l) => l.elapsedMs)).toEqual([0, 1000, 61000]);
    expect(lines[2]!.serverStatus).toBe('completed');
  });

  it('says a plain call was sent (legacy era, no remote task)', () => {
    expect(words([created('call'), ev('remote', { era: 'legacy', remote_task_id: null, ttl_ms: null, poll_interval_ms: null }, 0)])).toEqual(['Started as a plain call', 'Sent to the server']);
  });

  it('makes status messages the steps and folds identical consecutive ones with a count', () => {
    const lines = timeline(
      [
        created(),
        ev('status', { server_status: 'working', message: 'Collecting sources' }, 1),
        ev('status', { server_status: 'working', message: 'Collecting sources' }, 2),
        ev('status', { server_status: 'working', message: 'Collecting sources' }, 3),
        ev('status', { server_status: 'working', message: 'Reading' }, 4),
        ev('status', { server_status: 'working', message: null }, 5),
      ],
      START,
    );
    expect(lines.map((l) => [l.text, l.count])).toEqual([
      ['Started as a task', 1],
      ['Collecting sources', 3],
      ['Reading', 1],
      ['Working', 1],
    ]);
    expect(lines[1]!.events).toHaveLength(3);
    expect(lines[1]!.serverStatus).toBe('working');
  });

  it('says a status that waits for input or resumes in words', () => {
    expect(words([ev('status', { server_status: 'input_required', message: null }, 1, 'working', 'input_required'), ev('status', { server_status: 'working', message: null }, 2, 'input_required', 'working')])).toEqual([
      'Waiting for your answer',
      'Working again',
    ]);
  });

  it('says what a form question asked and what was answered, by field title and option label', () => {
    const lines = timeline(
      [created(), formQuestion('service-1', 2), ev('answer', { key: 'service-1', response: { action: 'accept', content: { service: 'search', notes: 'slow since 9', page_oncall: true } } }, 5, 'input_required', 'working')],
      START,
    );
    expect(lines[1]!.text).toBe('Asked: Which service?');
    expect(lines[2]!.text).toBe('You answered: Search cluster, slow since 9, yes');
    expect(lines[2]!.values).toEqual([
      { field: 'Affected service', value: 'Search cluster' },
      { field: 'Notes', value: 'slow since 9' },
      { field: 'Page on-call', value: 'yes' },
    ]);
    expect(JSON.stringify(lines[2]!.values)).not.toContain('"search"');
  });

  it('says the question’s own words, not the status message stored beside it', () => {
    const q = ev('question', { key: 'k', message: 'Waiting for you to pick the affected service', request: { method: 'elicitation/create', params: { message: 'Which service is affected?', requestedSchema: diagnosisSchema } } }, 1);
    expect(words([q])).toEqual(['Asked: Which service is affected?']);
  });

  it('says a declined or dismissed question', () => {
    expect(words([formQuestion('q', 1), ev('answer', { key: 'q', response: { action: 'decline' } }, 2)])[1]).toBe('You declined to answer');
    expect(words([formQuestion('q', 1), ev('answer', { key: 'q', response: { action: 'cancel' } }, 2)])[1]).toBe('You dismissed the question');
  });

  it('says a URL question names the site, and accepting it agrees to open the page', () => {
    const q = ev('question', { key: 'u', message: 'Sign in', request: { method: 'elicitation/create', params: { mode: 'url', message: 'Sign in', url: 'https://auth.example.com/x', elicitationId: 'e' } } }, 1);
    expect(words([q, ev('answer', { key: 'u', response: { action: 'accept' } }, 2)])).toEqual(['Asked you to open a page on auth.example.com: Sign in', 'You agreed to open the page']);
  });

  it('says a question too large to show was asked', () => {
    const q = ev('question', { key: 'big', message: 'Pick one', request: { method: 'elicitation/create', params: null } }, 1);
    expect(words([q])).toEqual(['Asked a question too large to show: Pick one']);
  });

  it('says what it asks beyond a form: sampling, roots, an unknown method', () => {
    const asking = (method: string) => ev('question', { key: method, message: null, request: { method, params: {} } }, 1);
    expect(words([asking('sampling/createMessage'), asking('roots/list'), asking('x/y')])).toEqual([
      'Asked for a reply from a language model',
      'Asked which folders it may use',
      'Asked something Taskdeck cannot answer (x/y)',
    ]);
  });

  it('says a tool error in the legacy era and in the modern era', () => {
    const legacy = [ev('remote', { era: 'legacy', remote_task_id: 'r', ttl_ms: null, poll_interval_ms: null }, 0), ev('result', { server_status: 'completed', is_error: true }, 3, 'working', 'failed')];
    const modern = [ev('remote', { era: 'modern', remote_task_id: 'r', ttl_ms: null, poll_interval_ms: null }, 0), ev('result', { server_status: 'completed', is_error: true }, 3, 'working', 'failed')];
    expect(words(legacy)[1]).toBe('The tool reported an error after 3s');
    expect(words(modern)[1]).toBe('The tool reported an error after 3s');
    const failedTool = ev('failed', { server_status: 'failed', error: { code: null, message: 'disk full', reason: 'tool result has isError: true' } }, 4, 'working', 'failed');
    expect(words([failedTool])).toEqual(['Failed: the tool reported an error: disk full']);
  });

  it('says each failure reason in words, and a server’s own as it said it', () => {
    const failed = (reason: string | null, message: string) => ev('failed', { server_status: null, error: { code: -32603, message, reason } }, 1, 'working', 'failed');
    expect(words([failed('INTERRUPTED', 'x'), failed('UNKNOWN_TO_SERVER', 'x'), failed('SERVER_UNRESPONSIVE', 'x'), failed('CRASH_RECOVERY', 'the worker crashed'), failed(null, 'boom')])).toEqual([
      'Interrupted: Taskdeck stopped before the server confirmed the task, so it cannot be continued',
      'Failed: the server no longer knows this task',
      'Failed: the server stopped answering',
      'Failed: the worker crashed',
      'Failed: boom',
    ]);
  });

  it('says who cancelled', () => {
    const cancelled = (reason: string | null) => ev('cancelled', { server_status: null, reason }, 1, 'working', 'cancelled');
    expect(words([cancelled('cancelled by the user'), cancelled('cancelled'), cancelled('stopped by the server'), cancelled('cancelled here; the server could not be reached: gone')])).toEqual([
      'Cancelled by you',
      'Cancelled by the server',
      'Cancelled by the server: stopped by the server',
      'Cancelled by you; the server could not be reached: gone',
    ]);
  });

  it('says Taskdeck gave up on a reclaimed task', () => {
    expect(words([ev('reclaimed', { reason: 'no update for 24 h', last_update: START }, 1, 'working', 'failed')])).toEqual(['Taskdeck gave up on the task: no update for 24 h']);
  });

  it('says how many earlier steps the dropped marker stands for', () => {
    expect(words([ev('dropped', { dropped: 1, limit: 1000, last_at: START, message: '1 earlier event was dropped' }, 1, null, null)])).toEqual(['1 earlier step was not kept (the log keeps 1,000)']);
    expect(words([ev('dropped', { dropped: 2500, limit: 1000, last_at: START, message: '…' }, 1, null, null)])).toEqual(['2,500 earlier steps were not kept (the log keeps 1,000)']);
  });

  it('shows a server’s text without its hidden characters, and survives data of the wrong shape', () => {
    expect(words([ev('status', { server_status: 'working', message: 'Rea\u202Eding' }, 1)])).toEqual(['Reading']);
    expect(words([ev('answer', 'nonsense', 1), ev('question', [1, 2], 1), ev('failed', null, 1)])).toEqual(['You answered', 'Asked something Taskdeck cannot answer ()', 'Failed']);
  });
});
