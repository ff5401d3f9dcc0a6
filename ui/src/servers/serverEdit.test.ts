import { describe, expect, it } from 'vitest';
import type { Found } from '../lib/bindings/Found';
import { duplicateNames, entryKey, initialSelection, neededInputs, newServer, parsePairs, settingsEdit, settingsForm, splitArgs, suggestName } from './serverEdit';

describe('the Add server form', () => {
  it('splits arguments as a shell would, quotes keeping spaces', () => {
    expect(splitArgs(`-y @scope/server "a b" 'c "d"' ""`)).toEqual({ ok: true, args: ['-y', '@scope/server', 'a b', 'c "d"', ''] });
    expect(splitArgs('  ')).toEqual({ ok: true, args: [] });
    expect(splitArgs('"open')).toEqual({ ok: false, error: 'A " quote is not closed.' });
  });

  it('reads one variable or header a line and names the line that is wrong', () => {
    expect(parsePairs('A=1\n\n B = two=2 ', '=')).toEqual({ ok: true, pairs: [['A', '1'], ['B', 'two=2']] });
    expect(parsePairs('Authorization: Bearer ${env:TOKEN}', ':')).toEqual({ ok: true, pairs: [['Authorization', 'Bearer ${env:TOKEN}']] });
    expect(parsePairs('A=1\nnot a pair', '=')).toEqual({ ok: false, error: 'Line 2: expected NAME=value.' });
    expect(parsePairs('A=1\nA=2', '=')).toEqual({ ok: false, error: 'Line 2: A is given twice.' });
  });

  it('builds a remote or a local server, or says which field to fix', () => {
    const base = { name: 'web', url: '', command: '', args: '', pairs: '' };
    expect(newServer({ ...base, kind: 'url', url: ' https://mcp.example.com/mcp ', pairs: 'X-Team: ops' })).toEqual({
      ok: true,
      name: 'web',
      server: { kind: 'url', url: 'https://mcp.example.com/mcp', headers: [['X-Team', 'ops']] },
    });
    expect(newServer({ ...base, kind: 'command', command: 'npx', args: '-y server', pairs: 'K=v' })).toEqual({
      ok: true,
      name: 'web',
      server: { kind: 'command', command: 'npx', args: ['-y', 'server'], env: [['K', 'v']] },
    });
    expect(newServer({ ...base, kind: 'url', url: 'mcp.example.com' })).toMatchObject({ ok: false, field: 'target' });
    expect(newServer({ ...base, kind: 'command', name: ' ', command: 'x' })).toMatchObject({ ok: false, field: 'name' });
    expect(newServer({ ...base, kind: 'command', command: 'x', pairs: 'oops' })).toMatchObject({ ok: false, field: 'pairs' });
  });

  it('suggests a name from the host or the command', () => {
    expect(suggestName('url', 'https://mcp.linear.app/mcp')).toBe('linear');
    expect(suggestName('url', 'http://localhost:3000/mcp')).toBe('localhost');
    expect(suggestName('command', '/usr/local/bin/taskdeck-demo-server --x')).toBe('taskdeck-demo-server');
    expect(suggestName('command', 'C:\\tools\\srv.exe')).toBe('srv');
  });
});

const found: Found[] = [
  {
    host: 'claude',
    path: '/c.json',
    error: null,
    entries: [
      { name: 'a', transport: 'stdio', target: 'a', status: 'new', problem: null, inputs: [] },
      { name: 'same', transport: 'stdio', target: 's', status: 'same', problem: null, inputs: [] },
      { name: 'old', transport: 'sse', target: 'https://o', status: 'cannot_import', problem: 'sse', inputs: [] },
    ],
  },
  {
    host: 'vscode',
    path: '/v.json',
    error: null,
    entries: [
      { name: 'a', transport: 'stdio', target: 'a2', status: 'new', problem: null, inputs: [] },
      {
        name: 'k',
        transport: 'stdio',
        target: 'k',
        status: 'new',
        problem: null,
        inputs: [{ id: 'key', description: 'Key', password: true, default: null, options: [] }],
      },
    ],
  },
];

describe('the Import dialog', () => {
  it('ticks what is new, once per name, and never what Taskdeck has or cannot take', () => {
    const picked = initialSelection(found);
    expect([...picked].sort()).toEqual([entryKey('/c.json', 'a'), entryKey('/v.json', 'k')].sort());
    expect(duplicateNames(found, picked)).toEqual([]);
    picked.add(entryKey('/v.json', 'a'));
    expect(duplicateNames(found, picked)).toEqual(['a']);
  });

  it('asks the inputs of the ticked entries only', () => {
    expect(neededInputs(found, new Set([entryKey('/c.json', 'a')]))).toEqual([]);
    expect(neededInputs(found, initialSelection(found)).map((i) => i.id)).toEqual(['key']);
  });
});

describe('the Settings panel', () => {
  it('round-trips the settings, empty fields meaning the defaults', () => {
    const s = { enabled: false, timeout_secs: 30, min_poll_secs: null, max_poll_secs: 5, era: 'legacy' as const, inherit_env: true };
    expect(settingsEdit(settingsForm(s))).toEqual({ ok: true, settings: s });
    const blank = settingsForm({ enabled: true, timeout_secs: null, min_poll_secs: null, max_poll_secs: null, era: null, inherit_env: false });
    expect(blank).toMatchObject({ timeout: '', era: 'detected' });
  });

  it('refuses seconds that are not over zero and bounds the wrong way round', () => {
    const f = settingsForm({ enabled: true, timeout_secs: null, min_poll_secs: null, max_poll_secs: null, era: null, inherit_env: false });
    expect(settingsEdit({ ...f, timeout: '0' })).toMatchObject({ ok: false, field: 'timeout' });
    expect(settingsEdit({ ...f, maxPoll: 'soon' })).toMatchObject({ ok: false, field: 'maxPoll' });
    expect(settingsEdit({ ...f, minPoll: '10', maxPoll: '1' })).toMatchObject({ ok: false, field: 'minPoll' });
  });
});
