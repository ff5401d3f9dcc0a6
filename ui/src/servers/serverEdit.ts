// What the Add server, Import and Settings dialogs read from their fields, apart from the
// components so it can be tested: the engine checks the entry again before it writes it.
import type { Found } from '../lib/bindings/Found';
import type { Host } from '../lib/bindings/Host';
import type { InputNeeded } from '../lib/bindings/InputNeeded';
import type { NewServer } from '../lib/bindings/NewServer';
import type { SettingsEdit } from '../lib/bindings/SettingsEdit';
import type { Era } from '../lib/types';

export const HOST_TITLE: Record<Host, string> = {
  claude: 'Claude Desktop',
  cursor: 'Cursor',
  vscode: 'VS Code',
  windsurf: 'Windsurf',
  file: 'File',
};

/** Words as a shell would split them: spaces separate, "double" or 'single' quotes keep them together. */
export function splitArgs(text: string): { ok: true; args: string[] } | { ok: false; error: string } {
  const args: string[] = [];
  let current = '';
  let inWord = false;
  let quote: '"' | "'" | null = null;
  for (let i = 0; i < text.length; i++) {
    const c = text.charAt(i);
    if (quote) {
      if (c === quote) quote = null;
      else if (c === '\\' && quote === '"' && (text.charAt(i + 1) === '"' || text.charAt(i + 1) === '\\')) current += text.charAt(++i);
      else current += c;
    } else if (c === '"' || c === "'") {
      quote = c;
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) args.push(current);
      current = '';
      inWord = false;
    } else {
      current += c;
      inWord = true;
    }
  }
  if (quote) return { ok: false, error: `A ${quote} quote is not closed.` };
  if (inWord) args.push(current);
  return { ok: true, args };
}

/**
 * One pair a line: `NAME=value` for environment variables, `Name: value` for headers. Blank lines
 * are skipped; a line without the separator, or without a name, is an error naming the line.
 */
export function parsePairs(text: string, sep: '=' | ':'): { ok: true; pairs: [string, string][] } | { ok: false; error: string } {
  const pairs: [string, string][] = [];
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = (lines[i] ?? '').trim();
    if (line === '') continue;
    const at = line.indexOf(sep);
    const name = at < 0 ? '' : line.slice(0, at).trim();
    if (at < 0 || name === '') return { ok: false, error: `Line ${i + 1}: expected ${sep === '=' ? 'NAME=value' : 'Name: value'}.` };
    if (pairs.some(([k]) => k === name)) return { ok: false, error: `Line ${i + 1}: ${name} is given twice.` };
    pairs.push([name, line.slice(at + 1).trim()]);
  }
  return { ok: true, pairs };
}

export type AddForm = { kind: 'url' | 'command'; name: string; url: string; command: string; args: string; pairs: string };
export type AddResult = { ok: true; name: string; server: NewServer } | { ok: false; field: 'name' | 'target' | 'args' | 'pairs'; error: string };

/** The server the Add server form describes, or the field to fix. */
export function newServer(form: AddForm): AddResult {
  const name = form.name.trim();
  if (name === '') return { ok: false, field: 'name', error: 'Give the server a name.' };
  if (form.kind === 'url') {
    const url = form.url.trim();
    if (!/^https?:\/\/\S+$/i.test(url)) return { ok: false, field: 'target', error: 'Give the http:// or https:// address of the server’s MCP endpoint.' };
    const headers = parsePairs(form.pairs, ':');
    if (!headers.ok) return { ok: false, field: 'pairs', error: headers.error };
    return { ok: true, name, server: { kind: 'url', url, headers: headers.pairs } };
  }
  const command = form.command.trim();
  if (command === '') return { ok: false, field: 'target', error: 'Give the command that starts the server.' };
  const args = splitArgs(form.args);
  if (!args.ok) return { ok: false, field: 'args', error: args.error };
  const env = parsePairs(form.pairs, '=');
  if (!env.ok) return { ok: false, field: 'pairs', error: env.error };
  return { ok: true, name, server: { kind: 'command', command, args: args.args, env: env.pairs } };
}

/** A name to start from: the URL's host, or the command's file name. */
export function suggestName(kind: 'url' | 'command', target: string): string {
  const t = target.trim();
  if (kind === 'url') {
    const host = /^https?:\/\/([^/:?#]+)/i.exec(t)?.[1] ?? '';
    const parts = host.split('.').filter((p) => p !== '' && p !== 'www' && p !== 'mcp');
    return (parts.length > 1 ? parts[parts.length - 2] : parts[0]) ?? '';
  }
  const first = splitArgs(t);
  const word = first.ok ? (first.args[0] ?? '') : '';
  return word.split(/[\\/]/).pop()?.replace(/\.(exe|cmd|bat|js|py)$/i, '') ?? '';
}

/** The key of one entry of one file, for the dialog's checkboxes. */
export const entryKey = (path: string, name: string) => `${path}\u0000${name}`;

/** What is ticked at first: every entry that can be imported and is new to Taskdeck, once per name. */
export function initialSelection(found: Found[]): Set<string> {
  const picked = new Set<string>();
  const names = new Set<string>();
  for (const f of found) {
    for (const e of f.entries) {
      if (e.status === 'new' && !names.has(e.name)) {
        picked.add(entryKey(f.path, e.name));
        names.add(e.name);
      }
    }
  }
  return picked;
}

/** A name ticked in two files: the engine refuses it, so the dialog says it before. */
export function duplicateNames(found: Found[], selected: Set<string>): string[] {
  const seen = new Map<string, number>();
  for (const f of found) for (const e of f.entries) if (selected.has(entryKey(f.path, e.name))) seen.set(e.name, (seen.get(e.name) ?? 0) + 1);
  return [...seen].filter(([, n]) => n > 1).map(([name]) => name);
}

/** The inputs the ticked entries need, each once. */
export function neededInputs(found: Found[], selected: Set<string>): InputNeeded[] {
  const out: InputNeeded[] = [];
  for (const f of found) {
    for (const e of f.entries) {
      if (!selected.has(entryKey(f.path, e.name))) continue;
      for (const i of e.inputs) if (!out.some((o) => o.id === i.id)) out.push(i);
    }
  }
  return out;
}

export type SettingsForm = { enabled: boolean; timeout: string; minPoll: string; maxPoll: string; era: Era | 'detected'; inheritEnv: boolean };

const seconds = (s: number | null) => (s === null ? '' : String(s));

export function settingsForm(s: SettingsEdit): SettingsForm {
  return {
    enabled: s.enabled,
    timeout: seconds(s.timeout_secs),
    minPoll: seconds(s.min_poll_secs),
    maxPoll: seconds(s.max_poll_secs),
    era: s.era ?? 'detected',
    inheritEnv: s.inherit_env,
  };
}

/** The settings the panel's fields say, or the field to fix. Empty means the engine's default. */
export function settingsEdit(f: SettingsForm): { ok: true; settings: SettingsEdit } | { ok: false; field: keyof SettingsForm; error: string } {
  const parse = (text: string): number | null | undefined => {
    const t = text.trim();
    if (t === '') return null;
    const n = Number(t);
    return Number.isFinite(n) && n > 0 ? n : undefined;
  };
  const timeout = parse(f.timeout);
  if (timeout === undefined) return { ok: false, field: 'timeout', error: 'A number of seconds over 0, or empty for the default.' };
  const min = parse(f.minPoll);
  if (min === undefined) return { ok: false, field: 'minPoll', error: 'A number of seconds over 0, or empty for the default.' };
  const max = parse(f.maxPoll);
  if (max === undefined) return { ok: false, field: 'maxPoll', error: 'A number of seconds over 0, or empty for the default.' };
  if (min !== null && max !== null && min > max) return { ok: false, field: 'minPoll', error: 'The shortest interval must not be over the longest.' };
  return {
    ok: true,
    settings: {
      enabled: f.enabled,
      timeout_secs: timeout,
      min_poll_secs: min,
      max_poll_secs: max,
      era: f.era === 'detected' ? null : f.era,
      inherit_env: f.inheritEnv,
    },
  };
}
