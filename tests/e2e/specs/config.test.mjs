// The config as users have it: an entry Taskdeck cannot read is shown with its error while every
// other server runs, a remote server shows its URL, and edits of the file are applied without
// pressing Reload; a broken edit keeps the servers and shows the error until the next good save.

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { By } from 'selenium-webdriver';
import { appBinary, eventually, invoke, startApp, waitFor } from '../support/app.mjs';

test('a bad entry is shown with its error, and saved edits are applied without Reload', async () => {
  const scratch = mkdtempSync(join(tmpdir(), 'taskdeck-e2e-config-'));
  const configPath = join(scratch, 'config', 'servers.json');
  const demo = { command: join(dirname(appBinary), 'taskdeck-demo-server'), args: ['--state', join(scratch, 'state')] };
  mkdirSync(dirname(configPath), { recursive: true });
  const write = (servers) => writeFileSync(configPath, JSON.stringify({ mcpServers: servers }));
  const count = async (driver, selector) => (await driver.findElements(By.css(selector))).length;
  write({ demo, old: { type: 'sse', url: 'https://mcp.example.com/sse' } });
  const app = await startApp({ dataDir: join(scratch, 'data'), configPath });
  try {
    const { driver } = app;
    await (await waitFor(driver, '[data-testid="nav-servers"]')).click();
    const bad = await waitFor(driver, '[data-testid="server-unreadable"][data-server="old"]');
    assert.match(await bad.getText(), /mcpServers\.old\.type/);
    assert.match(await bad.getText(), /HTTP\+SSE/);
    await waitFor(driver, '[data-testid="server-row"][data-server="demo"]');

    // Saved, not reloaded by hand: the new remote server appears, the bad entry goes.
    write({ demo, remote: { url: 'http://127.0.0.1:1/mcp' } });
    const remote = await waitFor(driver, '[data-testid="server-row"][data-server="remote"]', 10000);
    assert.match(await remote.findElement(By.css('[data-testid="server-url"]')).getText(), /^http:\/\/127\.0\.0\.1:1\/mcp$/);
    assert.match(await remote.findElement(By.css('[data-testid="server-transport"]')).getText(), /Streamable HTTP/);
    assert.ok(await eventually(async () => (await count(driver, '[data-testid="server-unreadable"]')) === 0));

    // A broken save changes nothing and says why; the next good one clears it.
    writeFileSync(configPath, '{ "mcpServers": ');
    await waitFor(driver, '[data-testid="config-error"]', 10000);
    const names = (await invoke(driver, 'list_servers')).map((s) => s.name);
    assert.deepEqual(names, ['demo', 'remote'], 'the servers keep running');
    write({ demo });
    assert.ok(await eventually(async () => (await count(driver, '[data-testid="config-error"]')) === 0));
    assert.ok(await eventually(async () => (await count(driver, '[data-server="remote"]')) === 0));
  } finally {
    await app.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
});
