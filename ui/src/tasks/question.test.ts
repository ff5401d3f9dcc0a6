import { describe, expect, it } from 'vitest';
import type { FormModel, Question } from '../lib/types';
import { checkUrl, parseQuestion } from './question';

const key = '{"kind":"input_key","value":"k"}';
const form: FormModel = { status: 'ready', fields: [] };

describe('reading a stored question', () => {
  it('a form elicitation brings its form model', () => {
    const q: Question = {
      key,
      task_id: 't1',
      message: 'Which?',
      asks: { kind: 'form', schema: { type: 'object', properties: {} }, form },
      request: { method: 'elicitation/create', params: { message: 'Which?', requestedSchema: { type: 'object', properties: {} } } },
    };
    expect(parseQuestion(q)).toEqual({ kind: 'form', message: 'Which?', form });
  });

  it('a URL elicitation', () => {
    const params = { mode: 'url', message: 'Sign in', url: 'https://a.example/x', elicitationId: 'e1' };
    const q: Question = {
      key,
      task_id: null,
      message: 'Sign in',
      asks: { kind: 'url', url: 'https://a.example/x', elicitation_id: 'e1' },
      request: { method: 'elicitation/create', params },
    };
    expect(parseQuestion(q)).toEqual({ kind: 'url', message: 'Sign in', url: 'https://a.example/x', elicitationId: 'e1' });
  });

  it('anything else is unknown, with the reason and the request kept raw', () => {
    const request = { method: 'roots/list', params: {} };
    expect(parseQuestion({ key, task_id: null, message: null, asks: { kind: 'roots' }, request })).toEqual({
      kind: 'unknown',
      message: '',
      reason: 'Taskdeck does not answer roots/list yet',
      raw: request,
    });
    const sampling = { method: 'sampling/createMessage', params: { messages: [], maxTokens: 5 } };
    const asks = { kind: 'sampling' as const, sampling: { system_prompt: null, max_tokens: 5, messages: 0, model_hints: [], include_context: null, tools: [] } };
    expect(parseQuestion({ key, task_id: null, message: null, asks, request: sampling })).toMatchObject({ kind: 'unknown', raw: sampling });
    const bad = { method: 'elicitation/create', params: { message: 'm' } };
    const asked = parseQuestion({ key, task_id: null, message: 'm', asks: { kind: 'malformed', reason: 'invalid elicitation: x' }, request: bad });
    expect(asked).toMatchObject({ kind: 'unknown', message: 'm', reason: 'invalid elicitation: x', raw: bad });
  });
});

describe('URLs offered to the browser', () => {
  it('shows the host of a web address', () => {
    expect(checkUrl('https://auth.example.com/login?x=1')).toEqual({ ok: true, href: 'https://auth.example.com/login?x=1', host: 'auth.example.com', secure: true });
    expect(checkUrl('http://localhost:8080/')).toMatchObject({ ok: true, host: 'localhost', secure: false });
  });

  it('shows a look-alike international host in its punycode form', () => {
    expect(checkUrl('https://ехample.com/')).toMatchObject({ ok: true, host: 'xn--ample-ywe6i.com' });
  });

  it('refuses other schemes, credentials and garbage', () => {
    expect(checkUrl('file:///etc/passwd').ok).toBe(false);
    expect(checkUrl('javascript:alert(1)').ok).toBe(false);
    expect(checkUrl('https://user:pw@example.com').ok).toBe(false);
    expect(checkUrl('not a url').ok).toBe(false);
  });
});
