import { describe, expect, it, vi } from 'vitest';
import type { Question } from '../lib/types';
import { call } from '../lib/ipc';
import { modelUnavailable, replyContent, returnedContent, sampleTask, samplingReview } from './sampling';

// The shell is not there: what would be sent to it is recorded instead.
vi.mock('../lib/ipc', () => ({ call: vi.fn(() => Promise.resolve(null)) }));

const key = '{"kind":"input_key","value":"s"}';
const asks = (over: Partial<Extract<Question['asks'], { kind: 'sampling' }>['sampling']> = {}) => ({
  kind: 'sampling' as const,
  sampling: { system_prompt: 'Be brief', max_tokens: 200, messages: 2, model_hints: ['claude'], include_context: null, tools: [], ...over },
});

describe('reviewing a sampling request', () => {
  it('shows the system prompt, every message block, the hints and the budget', () => {
    const params = {
      maxTokens: 200,
      messages: [
        { role: 'user', content: { type: 'text', text: 'Summarize <b>this</b>' } },
        { role: 'user', content: [{ type: 'image', data: 'aGVsbG8h', mimeType: 'image/png' }, { type: 'audio', data: 'AAAA', mimeType: 'audio/wav' }] },
      ],
    };
    const q: Question = { key, task_id: 't', message: null, asks: asks(), request: { method: 'sampling/createMessage', params } };
    const r = samplingReview(q)!;
    expect(r.systemPrompt).toBe('Be brief');
    expect(r.maxTokens).toBe(200);
    expect(r.hints).toEqual(['claude']);
    expect(r.context).toBeNull();
    expect(r.messages[0]).toEqual({ role: 'user', blocks: [{ kind: 'text', text: 'Summarize <b>this</b>' }] });
    expect(r.messages[1]!.blocks).toEqual([
      { kind: 'media', label: 'image (image/png, 6 bytes)' },
      { kind: 'media', label: 'audio (audio/wav, 3 bytes)' },
    ]);
  });

  it('says when the server asks for more context, and survives params of the wrong shape', () => {
    const q: Question = {
      key,
      task_id: 't',
      message: null,
      asks: asks({ include_context: 'allServers', tools: ['search'] }),
      request: { method: 'sampling/createMessage', params: { messages: [null, { role: 3, content: 'x' }] } },
    };
    const r = samplingReview(q)!;
    expect(r.context).toContain('Taskdeck sends none of it');
    expect(r.tools).toEqual(['search']);
    expect(r.messages.map((m) => m.role)).toEqual(['?', '?']);
    const form: Question = { key, task_id: 't', message: 'm', asks: { kind: 'roots' }, request: { method: 'roots/list', params: {} } };
    expect(samplingReview(form)).toBeNull();
  });

  it('sends a written reply as the text shorthand, and nothing for an empty one', () => {
    expect(replyContent('Paris.')).toEqual({ text: 'Paris.' });
    expect(replyContent('   ')).toBeNull();
  });
});

describe('returning a sampling reply', () => {
  const completion = {
    model: 'llama3.2',
    text: 'Three findings, one cause.',
    result: { role: 'assistant', content: { type: 'text', text: 'Three findings, one cause.' }, model: 'llama3.2', stopReason: 'endTurn' },
  };

  it('returns the model’s whole reply, with its model and stop reason, when its text was left as it was', () => {
    expect(returnedContent('Three findings, one cause.', completion)).toEqual(completion.result);
  });

  it('returns an edited completion as the user’s own text', () => {
    expect(returnedContent('Three findings, two causes.', completion)).toEqual({ text: 'Three findings, two causes.' });
  });

  it('returns a hand-written reply as text, and nothing for an empty box', () => {
    expect(returnedContent('By hand', null)).toEqual({ text: 'By hand' });
    expect(returnedContent('  ', null)).toBeNull();
    expect(returnedContent('', { ...completion, text: 'x' })).toBeNull();
  });

  it('says why the model cannot be asked, pointing to the Models settings when none is configured', () => {
    expect(modelUnavailable(null)).toMatch(/Settings → Models/);
    expect(modelUnavailable(undefined)).toMatch(/Looking/);
    expect(modelUnavailable('local/llama3.2')).toBeNull();
  });
});

describe('asking the model', () => {
  it('samples each of several pending questions by its own key', async () => {
    const keys = ['{"kind":"input_key","value":"notes"}', '{"kind":"input_key","value":"title"}'];
    for (const k of keys) await sampleTask('t1', k);
    expect(vi.mocked(call).mock.calls).toEqual(keys.map((k) => ['sample_task', { id: 't1', key: k }]));
  });
});
