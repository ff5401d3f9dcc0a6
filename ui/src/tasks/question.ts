/**
 * What a stored question asks for. The engine keeps the server's request whole
 * (`{method, params}`); for `elicitation/create` it is either a form (`requestedSchema`) or a URL to
 * visit. Anything else is shown as JSON and can only be declined or cancelled.
 */
import type { JsonValue, Question } from '../lib/types';

export type Asked =
  | { kind: 'form'; message: string; schema: JsonValue }
  | { kind: 'url'; message: string; url: string; elicitationId: string | null }
  | { kind: 'unknown'; message: string; raw: JsonValue };

const isObj = (v: unknown): v is { [k: string]: JsonValue | undefined } => typeof v === 'object' && v !== null && !Array.isArray(v);

export function parseQuestion(q: Question): Asked {
  const req = isObj(q.request) ? q.request : {};
  const params = isObj(req.params) ? req.params : {};
  const message = typeof params.message === 'string' ? params.message : '';
  if (req.method !== undefined && req.method !== 'elicitation/create') return { kind: 'unknown', message, raw: q.request };
  const mode = params.mode ?? 'form';
  if (mode === 'url' && typeof params.url === 'string') {
    return { kind: 'url', message, url: params.url, elicitationId: typeof params.elicitationId === 'string' ? params.elicitationId : null };
  }
  if (mode === 'form' && isObj(params.requestedSchema)) return { kind: 'form', message, schema: params.requestedSchema };
  return { kind: 'unknown', message, raw: q.request };
}

export type UrlCheck = { ok: true; href: string; host: string; secure: boolean } | { ok: false; reason: string };

/**
 * Whether a server-supplied URL may be offered to the system browser, and the host to show the
 * user. Only web addresses: a `file:` or custom-scheme URL would hand the server more than a page.
 */
export function checkUrl(url: string): UrlCheck {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return { ok: false, reason: 'This is not a valid address.' };
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') return { ok: false, reason: `Taskdeck only opens web addresses, not ${u.protocol} links.` };
  if (u.username || u.password) return { ok: false, reason: 'The address carries a user name or password; Taskdeck will not open it.' };
  return { ok: true, href: u.href, host: u.hostname, secure: u.protocol === 'https:' };
}
