import { describe, expect, it } from 'vitest';
import type { UrlCheck } from '../lib/types';
import { consent, localCheck } from './confirmUrl';

// Shaped as the engine's `UrlCheck::of` writes them (crates/protocol/src/url_check.rs).
const signIn: UrlCheck = {
  href: 'https://login.example.co.uk/x',
  scheme: 'https',
  scheme_ok: true,
  host: 'login.example.co.uk',
  registrable_domain: 'example.co.uk',
  warnings: [],
};

describe('consent', () => {
  it('splits the host so the registrable domain can be emphasised', () => {
    expect(consent(signIn)).toEqual({ href: signIn.href, host: { sub: 'login.', domain: 'example.co.uk' }, refusals: [], warnings: [] });
    expect(consent({ ...signIn, host: 'example.co.uk' }).host).toEqual({ sub: '', domain: 'example.co.uk' });
    // A domain that is not the host's end is never used to cut it.
    expect(consent({ ...signIn, registrable_domain: 'other.example' }).host).toEqual({ sub: '', domain: 'other.example' });
  });

  it('opens nothing when the engine refused the address, and keeps warnings apart from refusals', () => {
    const js: UrlCheck = { ...signIn, href: null, scheme: 'javascript', scheme_ok: false, host: null, registrable_domain: null,
      warnings: [{ kind: 'not_web', refuses: true, message: 'Taskdeck only opens web addresses (http, https), not javascript: links.' }] };
    const c = consent(js);
    expect(c.href).toBeNull();
    expect(c.refusals.map((w) => w.kind)).toEqual(['not_web']);
    const puny = consent({ ...signIn, warnings: [{ kind: 'punycode', refuses: false, message: 'An international name' }] });
    expect(puny.href).toBe(signIn.href);
    expect(puny.warnings.map((w) => w.kind)).toEqual(['punycode']);
  });
});

describe('localCheck', () => {
  it('refuses what the engine refuses and warns for http and punycode', () => {
    expect(consent(localCheck('javascript:alert(1)')).href).toBeNull();
    expect(localCheck('javascript:alert(1)').warnings[0]?.message).toContain('not javascript:');
    expect(consent(localCheck('https://a@b.example/')).refusals[0]?.kind).toBe('credentials');
    expect(consent(localCheck('not a url')).refusals[0]?.kind).toBe('invalid');
    expect(localCheck('http://example.org/').warnings.map((w) => w.kind)).toEqual(['not_encrypted']);
    expect(localCheck('https://xn--pple-43d.com/').warnings.map((w) => w.kind)).toEqual(['punycode']);
    expect(consent(localCheck('https://example.org/a b')).href).toBe('https://example.org/a%20b');
  });
});
