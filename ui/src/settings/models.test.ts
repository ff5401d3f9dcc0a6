import { describe, expect, it } from 'vitest';
import { emptyProvider, parseProvider, withoutProvider, withProvider } from './models';

const none = { providers: [] };

describe('the Models form', () => {
  it('reads a local provider with several models and no key', () => {
    const r = parseProvider(
      { ...emptyProvider(), name: ' local ', base_url: 'http://localhost:11434/v1', models: 'llama3.2, qwen2.5:7b' },
      none,
    );
    expect(r).toEqual({
      ok: true,
      provider: {
        name: 'local',
        kind: 'openai',
        base_url: 'http://localhost:11434/v1',
        models: [{ id: 'llama3.2' }, { id: 'qwen2.5:7b' }],
      },
      key: null,
    });
  });

  it('uses the hosted service when no base URL is given, and keeps the key apart', () => {
    const r = parseProvider({ name: 'claude', kind: 'anthropic', base_url: '', models: 'claude-sonnet-4-5', key: 'sk-a' }, none);
    expect(r.ok && r.provider.base_url).toBe('https://api.anthropic.com');
    expect(r.ok && r.key).toBe('sk-a');
    expect(JSON.stringify(r.ok && r.provider)).not.toContain('sk-a');
  });

  it('names each field that is wrong', () => {
    const existing = { providers: [{ name: 'local', kind: 'openai' as const, base_url: 'http://h', models: [{ id: 'm' }] }] };
    const r = parseProvider({ name: 'local', kind: 'openai', base_url: 'ftp://h', models: ' ', key: 'a b' }, existing);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(Object.keys(r.errors).sort()).toEqual(['base_url', 'key', 'models', 'name']);
    const creds = parseProvider({ ...emptyProvider(), name: 'x', base_url: 'https://u:p@h', models: 'm' }, none);
    expect(creds.ok).toBe(false);
  });

  it('adds at the end and removes by name', () => {
    const p = { name: 'a', kind: 'openai' as const, base_url: 'http://h', models: [{ id: 'm' }] };
    const q = { ...p, name: 'b' };
    expect(withProvider(withProvider(none, p), q).providers.map((x) => x.name)).toEqual(['a', 'b']);
    expect(withoutProvider({ providers: [p, q] }, 'a').providers).toEqual([q]);
  });
});
