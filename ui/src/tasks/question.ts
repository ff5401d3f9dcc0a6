/**
 * What a stored question asks for, read from the fields the engine decoded it into (`asks`, see
 * `crates/protocol/src/question.rs`): a form with its model, a URL to visit, or something this
 * app cannot answer, shown as the raw request and only declined or cancelled.
 */
import type { FormModel, Question, QuestionRequest } from '../lib/types';

export type Asked =
  | { kind: 'form'; message: string; form: FormModel }
  | { kind: 'url'; message: string; url: string; elicitationId: string }
  | { kind: 'unknown'; message: string; reason: string; raw: QuestionRequest };

export function parseQuestion(q: Question): Asked {
  const message = q.message ?? '';
  const a = q.asks;
  switch (a.kind) {
    case 'form':
      return { kind: 'form', message, form: a.form };
    case 'url':
      return { kind: 'url', message, url: a.url, elicitationId: a.elicitation_id };
    case 'malformed':
    case 'unsupported':
      return { kind: 'unknown', message, reason: a.reason, raw: q.request };
    case 'too_large':
      return { kind: 'unknown', message, reason: `too large to show (${(a.size / 1e6).toFixed(1)} MB)`, raw: q.request };
    case 'sampling':
      // The review form is the CLI's for now; here the request is shown raw, and declined.
      return { kind: 'unknown', message, reason: 'Reply with `taskdeck-cli answer TASK --json \'{"text": "..."}\'`: the app cannot review sampling requests yet', raw: q.request };
    case 'roots':
      return { kind: 'unknown', message, reason: `Taskdeck does not answer ${q.request.method} yet`, raw: q.request };
  }
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
