// Logs a user can send: the app writes its start-up lines to a daily file in the log folder (beside
// the data directory it was given), and a server's stderr is kept in a file of its own, so "Show log"
// still has it after Taskdeck restarts.

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { appBinary, eventually, invoke, startApp, waitFor } from '../support/app.mjs';

function read(path) {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

/** The app's log files in `dir`: `taskdeck.<YYYY-MM-DD>.log`. */
function appLogs(dir) {
  try {
    return readdirSync(dir).filter((f) => /^taskdeck\.\d{4}-\d{2}-\d{2}\.log$/.test(f));
  } catch {
    return [];
  }
}

test('the app leaves a log file with its start-up lines in the log folder', async () => {
  const app = await startApp();
  try {
    const { driver, dataDir } = app;
    await waitFor(driver, '[data-testid="sidebar"]');
    const logDir = join(dataDir, 'logs');
    const info = await invoke(driver, 'app_info');
    assert.equal(info.log_dir, logDir, 'a data directory given by flag keeps its logs beside it');

    const text = await eventually(() => appLogs(logDir).map((f) => read(join(logDir, f))).find((t) => t.includes('taskdeck starting')));
    assert.ok(text, `no start-up line in ${logDir}: ${JSON.stringify(appLogs(logDir))}`);
    assert.match(text, /INFO/);
    assert.ok(text.includes(`data_dir=${dataDir}`), text);
    assert.ok(text.includes(`version=`), text);

    // The Servers view offers the folder.
    await (await waitFor(driver, '[data-testid="nav-servers"]')).click();
    const open = await waitFor(driver, '[data-testid="log-folder-open"]');
    assert.equal(await open.getAttribute('title'), logDir);
  } finally {
    await app.stop();
  }
});

test("a server's stderr is in its log file, and Show log has it again after a restart", async () => {
  const scratch = mkdtempSync(join(tmpdir(), 'taskdeck-e2e-logs-'));
  const dataDir = join(scratch, 'data');
  const configPath = join(scratch, 'config', 'servers.json');
  const marker = `e2e-stderr-${process.pid}`;
  const demo = join(dirname(appBinary), 'taskdeck-demo-server');
  mkdirSync(dirname(configPath), { recursive: true });
  writeFileSync(
    configPath,
    JSON.stringify({
      mcpServers: { demo: { command: '/bin/sh', args: ['-c', `echo ${marker} >&2; exec "$0" --state "$1"`, demo, join(scratch, 'demo-state')] } },
    }),
  );
  let app;
  try {
    app = await startApp({ dataDir, configPath });
    await waitFor(app.driver, '[data-testid="sidebar"]');
    // Asking for the tools starts the server, which writes the marker on its stderr first.
    await invoke(app.driver, 'list_tools', { server: 'demo' });
    const file = join(dataDir, 'logs', 'servers', 'demo.log');
    assert.ok(await eventually(() => read(file).includes(marker)), `the marker never reached ${file}: ${read(file)}`);
    await app.stop();

    app = await startApp({ dataDir, configPath });
    await waitFor(app.driver, '[data-testid="sidebar"]');
    const lines = await invoke(app.driver, 'server_log', { name: 'demo' });
    const hit = lines.find((l) => l.text === marker);
    assert.ok(hit, `the new instance's Show log lacks the earlier stderr: ${JSON.stringify(lines)}`);
    assert.equal(hit.source, 'stderr');
  } finally {
    await app?.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
});
