// A server added without editing JSON: the "Add server" dialog writes Taskdeck's config (created
// with the demo server in it, since there was none), the config watcher applies it without Reload,
// and the new server starts; its Settings panel then disables it the same way. The Import dialog
// copies a server of another host's config the same way, leaving that file as it was. axe-core
// finds no serious or critical violation in any of the three dialogs.

import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { By } from 'selenium-webdriver';
import { appBinary, eventually, invoke, startApp, waitFor } from '../support/app.mjs';

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** The serious and critical accessibility violations axe-core finds inside `selector`, as text. */
async function blockingViolations(driver, selector) {
  await driver.manage().setTimeouts({ script: 60000 });
  if (!(await driver.executeScript('return typeof window.axe === "object"'))) await driver.executeScript(axeSource);
  const reply = await driver.executeAsyncScript(
    `const done = arguments[arguments.length - 1];
     window.axe.run(document.querySelector(arguments[0]), { resultTypes: ['violations'] })
       .then((r) => done(JSON.stringify(r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
         .map((v) => v.id + ': ' + v.help + ' (' + v.nodes.map((n) => n.target.join(' ')).join(', ') + ')'))))
       .catch((e) => done(JSON.stringify(['axe did not run: ' + e])));`,
    selector,
  );
  return JSON.parse(reply);
}

test('a server added through the dialog is written to the config and starts', async () => {
  const scratch = mkdtempSync(join(tmpdir(), 'taskdeck-e2e-add-'));
  const configPath = join(scratch, 'config', 'servers.json');
  const app = await startApp({ dataDir: join(scratch, 'data'), configPath });
  try {
    const { driver } = app;
    await (await waitFor(driver, '[data-testid="nav-servers"]')).click();
    await waitFor(driver, '[data-testid="server-row"][data-server="demo"]');
    assert.equal(existsSync(configPath), false, 'no config yet: the embedded demo runs');

    await (await waitFor(driver, '[data-testid="server-add"]')).click();
    const dialog = await waitFor(driver, '[data-testid="add-server-dialog"]');
    assert.deepEqual(await blockingViolations(driver, '[data-testid="add-server-dialog"]'), []);
    await (await dialog.findElement(By.css('[data-testid="add-server-kind-command"]'))).click();
    await (await dialog.findElement(By.css('[data-testid="add-server-target"]'))).sendKeys(join(dirname(appBinary), 'taskdeck-demo-server'));
    await (await dialog.findElement(By.css('[data-testid="add-server-args"]'))).sendKeys(`--state "${join(scratch, 'second state')}"`);
    const name = await dialog.findElement(By.css('[data-testid="add-server-name"]'));
    assert.equal(await name.getAttribute('value'), 'taskdeck-demo-server', 'the name is suggested from the command');
    await name.clear();
    await name.sendKeys('second');
    await (await dialog.findElement(By.css('[data-testid="add-server-submit"]'))).click();

    // Applied by the watcher, not by Reload: the row appears and the server starts.
    const row = await waitFor(driver, '[data-testid="server-row"][data-server="second"]', 10000);
    const written = JSON.parse(readFileSync(configPath, 'utf8'));
    assert.deepEqual(Object.keys(written.mcpServers), ['demo', 'second'], 'the demo server is kept');
    assert.deepEqual(written.mcpServers.second.args, ['--state', join(scratch, 'second state')]);
    const tools = await invoke(driver, 'list_tools', { server: 'second' });
    assert.ok(tools.some((t) => t.name === 'generate_report'), JSON.stringify(tools));
    assert.ok(await eventually(async () => (await row.getAttribute('data-phase')) === 'ready'), 'the added server is ready');

    // The same name again is refused by its code, on the name field.
    await (await waitFor(driver, '[data-testid="server-add"]')).click();
    const again = await waitFor(driver, '[data-testid="add-server-dialog"]');
    await (await again.findElement(By.css('[data-testid="add-server-target"]'))).sendKeys('https://mcp.example.com/mcp');
    const name2 = await again.findElement(By.css('[data-testid="add-server-name"]'));
    await name2.clear();
    await name2.sendKeys('second');
    await (await again.findElement(By.css('[data-testid="add-server-submit"]'))).click();
    const clash = await waitFor(driver, '[data-testid="add-server-name-error"]');
    assert.match(await clash.getText(), /already in the config/);
    await (await again.findElement(By.xpath(".//button[normalize-space()='Cancel']"))).click();
    assert.ok(await eventually(async () => (await driver.findElements(By.css('[data-testid="add-server-dialog"]'))).length === 0));

    // Disabled from its Settings panel: written to its entry, and the row moves to the disabled ones.
    await (await row.findElement(By.css('[data-testid="server-settings-open"]'))).click();
    const settings = await waitFor(driver, '[data-testid="server-settings"][data-server="second"]');
    const enabled = await waitFor(driver, '[data-testid="settings-enabled"]');
    assert.deepEqual(await blockingViolations(driver, '[data-testid="server-settings"]'), []);
    assert.equal(await enabled.isSelected(), true);
    await enabled.click();
    await (await settings.findElement(By.css('[data-testid="settings-save"]'))).click();
    await waitFor(driver, '[data-testid="server-disabled"][data-server="second"]', 10000);
    assert.equal(JSON.parse(readFileSync(configPath, 'utf8')).mcpServers.second.disabled, true);
  } finally {
    await app.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
});

test('a server of Claude Desktop’s config is imported from the dialog, its file left as it was', async () => {
  const scratch = mkdtempSync(join(tmpdir(), 'taskdeck-e2e-import-'));
  const xdg = join(scratch, 'xdg');
  const claude = join(xdg, 'Claude', 'claude_desktop_config.json');
  mkdirSync(dirname(claude), { recursive: true });
  const entry = { command: join(dirname(appBinary), 'taskdeck-demo-server'), args: ['--state', join(scratch, 'claude state')] };
  writeFileSync(claude, JSON.stringify({ mcpServers: { 'from-claude': entry, old: { type: 'sse', url: 'https://o.example/sse' } } }, null, 2));
  const before = readFileSync(claude);
  // The app looks for other hosts' files under the XDG folders it is started with.
  const saved = process.env.XDG_CONFIG_HOME;
  process.env.XDG_CONFIG_HOME = xdg;
  const configPath = join(scratch, 'config', 'servers.json');
  let app;
  try {
    app = await startApp({ dataDir: join(scratch, 'data'), configPath });
  } finally {
    if (saved === undefined) delete process.env.XDG_CONFIG_HOME;
    else process.env.XDG_CONFIG_HOME = saved;
  }
  try {
    const { driver } = app;
    await (await waitFor(driver, '[data-testid="nav-servers"]')).click();
    await (await waitFor(driver, '[data-testid="server-import"]')).click();
    const fresh = await waitFor(driver, '[data-testid="import-entry"][data-server="from-claude"][data-status="new"]');
    assert.equal(await (await fresh.findElement(By.css('input[type="checkbox"]'))).isSelected(), true, 'a new entry is ticked');
    const old = await waitFor(driver, '[data-testid="import-entry"][data-server="old"][data-status="cannot_import"]');
    assert.match(await old.getText(), /HTTP\+SSE/);
    assert.equal(await (await old.findElement(By.css('input[type="checkbox"]'))).isEnabled(), false);
    assert.deepEqual(await blockingViolations(driver, '[data-testid="import-dialog"]'), []);
    await (await waitFor(driver, '[data-testid="import-submit"]')).click();

    const row = await waitFor(driver, '[data-testid="server-row"][data-server="from-claude"]', 10000);
    await invoke(driver, 'list_tools', { server: 'from-claude' });
    assert.ok(await eventually(async () => (await row.getAttribute('data-phase')) === 'ready'));
    assert.deepEqual(Object.keys(JSON.parse(readFileSync(configPath, 'utf8')).mcpServers), ['demo', 'from-claude']);
    assert.deepEqual(readFileSync(claude), before, 'Claude Desktop’s file is byte-identical');
  } finally {
    await app.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
});
