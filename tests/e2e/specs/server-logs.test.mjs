// A server's MCP log entries (`notifications/message`) in the real app: the demo server's report
// logs each stage naming its task, in both eras; the lines show in that task's timeline in plain
// words and in the server's log view with their level. And the folders a server is granted, edited
// from the Servers view, land in the config file.

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { By } from 'selenium-webdriver';
import { appBinary, eventually, invoke, muteNotifications, startApp, submitReport, waitFor } from '../support/app.mjs';

const css = (s) => By.css(s);

/** The texts of the timeline's log lines in the open task detail of `id`. */
async function logLines(driver, id) {
  try {
    const lines = await driver.findElements(css(`[data-testid="task-detail"][data-task-id="${id}"] [data-testid="timeline-line"][data-kind="log"] [data-testid="timeline-text"]`));
    return await Promise.all(lines.map((l) => l.getText()));
  } catch {
    return []; // re-rendered between the find and the read: look again
  }
}

async function expectStagesInTimeline(driver, id, topic) {
  const texts = await eventually(async () => {
    const t = await logLines(driver, id);
    return t.length >= 4 ? t : undefined;
  }, 30000);
  assert.ok(texts, `no log lines in the timeline of ${id}: ${JSON.stringify(await logLines(driver, id))}`);
  assert.deepEqual(
    texts,
    ['Collecting sources', 'Reading', 'Drafting', 'Formatting'].map((stage, i) => `The server noted: finished stage ${i + 1} of 4: ${stage} for "${topic}"`),
  );
}

test('the demo report logs its stages, shown in its timeline and in the server log with their level (modern era)', async () => {
  const app = await startApp();
  try {
    const { driver } = app;
    await muteNotifications(driver);
    await (await waitFor(driver, '[data-testid="empty-run-demo"]')).click();
    await submitReport(driver, 'tides', 1);
    const row = await waitFor(driver, '[data-testid="task-row"][data-status="completed"]', 30000);
    const id = await row.getAttribute('data-task-id');
    await row.click();
    await expectStagesInTimeline(driver, id, 'tides');

    await (await waitFor(driver, '[data-testid="nav-servers"]')).click();
    const server = await waitFor(driver, '[data-testid="server-row"][data-server="demo"]');
    const show = await server.findElement(css('button[aria-expanded]'));
    await show.click();
    const level = await waitFor(driver, '[data-testid="server-log"] [data-source="mcp"] [data-testid="log-level"]');
    assert.equal(await level.getText(), 'info');
  } finally {
    await app.stop();
  }
});

test('in the legacy era the stages reach the timeline too, and a granted folder is written to the config', async () => {
  const scratch = mkdtempSync(join(tmpdir(), 'taskdeck-e2e-server-logs-'));
  const configPath = join(scratch, 'config', 'servers.json');
  const demo = join(dirname(appBinary), 'taskdeck-demo-server');
  mkdirSync(dirname(configPath), { recursive: true });
  writeFileSync(configPath, JSON.stringify({ mcpServers: { demo: { command: demo, args: ['--state', join(scratch, 'demo-state')], era: 'legacy' } } }));
  const app = await startApp({ configPath });
  try {
    const { driver } = app;
    await muteNotifications(driver);
    await waitFor(driver, '[data-testid="sidebar"]');
    const task = await invoke(driver, 'run_tool', { server: 'demo', tool: 'generate_report', arguments: { topic: 'tides', seconds: 1 } });
    const row = await waitFor(driver, `[data-testid="task-row"][data-task-id="${task.id}"][data-status="completed"]`, 30000);
    await row.click();
    await expectStagesInTimeline(driver, task.id, 'tides');

    await (await waitFor(driver, '[data-testid="nav-servers"]')).click();
    const server = await waitFor(driver, '[data-testid="server-row"][data-server="demo"]');
    await server.findElement(css('[data-testid="roots-none"]'));
    await server.findElement(css('[data-testid="root-input"]')).sendKeys('/srv/my notes');
    await server.findElement(css('[data-testid="root-add"]')).click();
    const shown = await waitFor(driver, '[data-testid="server-row"][data-server="demo"] [data-testid="root"]');
    assert.match(await shown.getText(), /\/srv\/my notes/);
    const written = JSON.parse(readFileSync(configPath, 'utf8'));
    assert.deepEqual(written.mcpServers.demo.roots, ['/srv/my notes']);
    assert.equal(written.mcpServers.demo.era, 'legacy', 'the rest of the entry is kept');
    const roots = await invoke(driver, 'server_roots', { name: 'demo' });
    assert.deepEqual(roots, ['/srv/my notes']);
  } finally {
    await app.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
});
