// Signing in from the app to a remote server on loopback: the demo server over HTTP behind a gate
// that takes only the bearer tokens of a strict OAuth authorization server (the CLI tests'
// crates/cli/tests/support/signin_gate.py), with the client tests' browser script as `$BROWSER`
// (it follows the authorization URL and the redirect, as a user who consents would). The prompt
// names the server and the authorization server's host before anything opens; a task whose
// sign-in is revoked waits with "Sign-in needed" (and a notification), and goes on by itself once
// the user signs in again from its detail.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { test } from 'node:test';
import { By } from 'selenium-webdriver';
import { appBinary, eventually, invoke, notificationMark, recordedNotifications, repoRoot, startApp, waitFor } from '../support/app.mjs';

// Killed at exit too: a test that times out never reaches its `finally`.
const spawned = new Set();
process.on('exit', () => {
  for (const c of spawned) c.kill('SIGKILL');
});

/** Starts a child and resolves with it and its first line of stdout. */
function firstLine(command, args) {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'ignore'] });
  spawned.add(child);
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout });
    lines.once('line', (line) => resolve({ child, line: line.trim() }));
    child.once('exit', (code) => reject(new Error(`${command} exited (${code}) before saying where it listens`)));
  });
}

async function admin(base, what) {
  const r = await fetch(`${base}/admin/${what}`, { method: 'POST' });
  assert.equal(r.status, 200, `admin/${what}`);
}

test('the app signs in after naming the authorization server, and a task whose sign-in was revoked goes on after signing in again', async () => {
  const scratch = mkdtempSync(join(tmpdir(), 'taskdeck-e2e-signin-'));
  const children = [];
  const previousBrowser = process.env.BROWSER;
  const previousStore = process.env.TASKDECK_SIGN_IN_STORE;
  // Inherited by tauri-driver and so by the app: never the keyring of whoever runs the tests.
  process.env.BROWSER = `python3 ${join(repoRoot, 'crates/client/tests/support/oauth_browser.py')}`;
  process.env.TASKDECK_SIGN_IN_STORE = 'file';
  let app;
  try {
    const demo = await firstLine(join(dirname(appBinary), 'taskdeck-demo-server'), ['--state', join(scratch, 'state'), '--poll-interval-ms', '100', '--http', '127.0.0.1:0']);
    children.push(demo.child);
    const gate = await firstLine('python3', [join(repoRoot, 'crates/cli/tests/support/signin_gate.py'), demo.line, '{}']);
    children.push(gate.child);
    const host = gate.line.replace(/^http:\/\//, '');

    const configPath = join(scratch, 'config', 'servers.json');
    mkdirSync(dirname(configPath), { recursive: true });
    writeFileSync(configPath, JSON.stringify({ mcpServers: { remote: { url: `${gate.line}/mcp` } } }));
    const mark = notificationMark();
    app = await startApp({ dataDir: join(scratch, 'data'), configPath });
    const { driver } = app;

    // The Servers view: not signed in; Sign in asks first, naming the server and the host.
    await (await waitFor(driver, '[data-testid="nav-servers"]')).click();
    const row = '[data-testid="server-row"][data-server="remote"]';
    // The first wait of the spec is long: a cold start on a busy machine.
    await (await waitFor(driver, `${row} [data-testid="sign-in-start"]`, 60000)).click();
    const prompt = await waitFor(driver, `${row} [data-testid="sign-in-prompt-text"]`, 20000);
    const asked = await prompt.getText();
    assert.match(asked, /remote/);
    assert.ok(asked.includes(host), `the prompt names ${host}: ${asked}`);
    await driver.findElement(By.css(`${row} [data-testid="sign-in-continue"]`)).click();
    const said = await waitFor(driver, `${row} [data-testid="sign-in-message"]`, 30000);
    assert.match(await said.getText(), /Signed in/);
    assert.ok(
      await eventually(async () => (await driver.findElement(By.css(`${row} [data-testid="server-auth"]`)).getAttribute('data-auth')) === 'signed_in'),
      'the row shows the server signed in',
    );

    // A long task; its sign-in is revoked under it: it waits, not fails, and says so.
    const started = await invoke(driver, 'run_tool', { server: 'remote', tool: 'generate_report', arguments: { topic: 'tides', seconds: 4 } });
    await new Promise((r) => setTimeout(r, 1500));
    await admin(gate.line, 'revoke');
    await admin(gate.line, 'expire');
    const waiting = await eventually(async () => {
      const { task } = await invoke(driver, 'task_detail', { id: started.id });
      return (task.status_message ?? '').startsWith('Sign-in needed') ? task : undefined;
    }, 30000);
    assert.ok(waiting, 'the task says a sign-in is needed');
    assert.equal(waiting.status, 'working');
    assert.ok(
      await eventually(() => recordedNotifications(mark).find((n) => /Sign-in needed/.test(n.summary ?? ''))),
      'a desktop notification says a sign-in is needed',
    );

    // Signed in again from the task's own detail: the task goes on by itself.
    await (await waitFor(driver, '[data-testid="nav-tasks"]')).click();
    await (await waitFor(driver, `[data-testid="task-row"][data-task-id="${started.id}"]`)).click();
    const detail = `[data-testid="task-detail"][data-task-id="${started.id}"]`;
    await (await waitFor(driver, `${detail} [data-testid="sign-in-start"]`)).click();
    await (await waitFor(driver, `${detail} [data-testid="sign-in-continue"]`, 20000)).click();
    const done = await eventually(async () => {
      const { task } = await invoke(driver, 'task_detail', { id: started.id });
      return task.status === 'completed' ? task : undefined;
    }, 60000);
    assert.ok(done, 'the task finished after the sign-in');
  } finally {
    if (app) await app.stop();
    for (const c of children) c.kill('SIGKILL');
    if (previousBrowser === undefined) delete process.env.BROWSER;
    else process.env.BROWSER = previousBrowser;
    if (previousStore === undefined) delete process.env.TASKDECK_SIGN_IN_STORE;
    else process.env.TASKDECK_SIGN_IN_STORE = previousStore;
    rmSync(scratch, { recursive: true, force: true });
  }
});
