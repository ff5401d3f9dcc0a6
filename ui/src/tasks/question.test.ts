import { describe, expect, it } from 'vitest';
import { checkUrl, parseQuestion } from './question';

describe('reading a stored question', () => {
  it('a form elicitation, mode omitted', () => {
    const schema = { type: 'object', properties: {} };
    expect(parseQuestion({ key: 'k', request: { method: 'elicitation/create', params: { message: 'Which?', requestedSchema: schema } } })).toEqual({
      kind: 'form',
      message: 'Which?',
      schema,
    });
  });

  it('a URL elicitation', () => {
    const q = { key: 'k', request: { method: 'elicitation/create', params: { mode: 'url', message: 'Sign in', url: 'https://a.example/x', elicitationId: 'e1' } } };
    expect(parseQuestion(q)).toEqual({ kind: 'url', message: 'Sign in', url: 'https://a.example/x', elicitationId: 'e1' });
  });

  it('anything else is unknown, kept raw', () => {
    const request = { method: 'sampling/createMessage', params: {} };
    expect(parseQuestion({ key: 'k', request })).toEqual({ kind: 'unknown', message: '', raw: request });
    expect(parseQuestion({ key: 'k', request: null }).kind).toBe('unknown');
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
