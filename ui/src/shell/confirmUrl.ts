import type { UrlCheck, UrlWarning } from '../lib/types';

/**
 * What the consent dialog shows of an address, read from the engine's `UrlCheck` (worked out once, in
 * Rust, when the question was decoded; the CLI reads the same one): whether it may be opened at all,
 * the host split so its registrable domain can be emphasised, and the warnings to show.
 */
export type Consent = {
  /** The address handed to the browser, when Taskdeck will open it. */
  href: string | null;
  /** The host before its registrable domain (`login.`), and the domain (`example.co.uk`). */
  host: { sub: string; domain: string } | null;
  refusals: UrlWarning[];
  warnings: UrlWarning[];
};

export function consent(check: UrlCheck): Consent {
  const refusals = check.warnings.filter((w) => w.refuses);
  return {
    href: refusals.length === 0 ? check.href : null,
    host: hostParts(check.host, check.registrable_domain),
    refusals,
    warnings: check.warnings.filter((w) => !w.refuses),
  };
}

function hostParts(host: string | null, domain: string | null): Consent['host'] {
  if (host === null) return null;
  if (domain !== null && domain !== host && host.endsWith(`.${domain}`)) {
    return { sub: host.slice(0, host.length - domain.length), domain };
  }
  return { sub: '', domain: domain ?? host };
}

const refuse = (kind: UrlWarning['kind'], message: string): UrlCheck => ({
  href: null,
  scheme: '',
  scheme_ok: false,
  host: null,
  registrable_domain: null,
  warnings: [{ kind, refuses: true, message }],
});

/**
 * For an address that came without the engine's check (a result's link, which the engine does not
 * read yet): the same refusals by scheme and credentials and the http and punycode warnings, but no
 * registrable domain and no mixed-script reading, which only the engine's check has.
 */
export function localCheck(url: string): UrlCheck {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return refuse('invalid', 'This is not a valid address.');
  }
  const scheme = u.protocol.replace(/:$/, '');
  if (scheme !== 'https' && scheme !== 'http') {
    return { ...refuse('not_web', `Taskdeck only opens web addresses (http, https), not ${scheme}: links.`), scheme };
  }
  if (u.username || u.password) {
    return { ...refuse('credentials', 'The address carries a user name or password; Taskdeck will not open it.'), scheme, scheme_ok: true };
  }
  const warnings: UrlWarning[] = [];
  if (scheme === 'http') {
    warnings.push({ kind: 'not_encrypted', refuses: false, message: 'Not encrypted (http): anyone on the way can read or change this page.' });
  }
  if (u.hostname.split('.').some((l) => l.startsWith('xn--'))) {
    warnings.push({ kind: 'punycode', refuses: false, message: `An international name: ${u.hostname} may imitate another site.` });
  }
  return { href: u.href, scheme, scheme_ok: true, host: u.hostname, registrable_domain: null, warnings };
}
