// Accessibility checked, not assumed: axe-core (from npm) runs inside the real webview on every main
// screen (the first launch, the tasks with a result open, a question, the run form, the tool picker
// and the shortcut list, servers, tools, settings), in the light and the dark theme. No serious or critical violation
// may be left; the report names each rule, its help and the elements it found.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { test } from 'node:test';
import { By, Key } from 'selenium-webdriver';
import { eventually, invoke, muteNotifications, startApp, waitFor } from '../support/app.mjs';

const css = (s) => By.css(s);
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** Every violation axe finds in the page as it is now (or in the element `within` names), with its impact. */
async function violations(driver, within = null) {
  const loaded = await driver.executeScript('return typeof window.axe === "object"');
  if (!loaded) await driver.executeScript(axeSource);
  const reply = await driver.executeAsyncScript(`
    const done = arguments[arguments.length - 1];
    const context = arguments[0] ? document.querySelector(arguments[0]) : document;
    window.axe
      .run(context, { resultTypes: ['violations'] })
      .then((r) => done(JSON.stringify(r.violations.map((v) => ({
        id: v.id, impact: v.impact, help: v.help,
        nodes: v.nodes.map((n) => ({ target: n.target.join(' '), summary: n.failureSummary })),
      })))))
      .catch((e) => done(JSON.stringify({ error: String(e) })));
  `, within);
  const found = JSON.parse(reply);
  if (!Array.isArray(found)) throw new Error(`axe did not run: ${found.error}`);
  return found;
}

const blocking = (v) => v.impact === 'serious' || v.impact === 'critical';

function described(list) {
  return list
    .map((v) => `${v.impact} ${v.id}: ${v.help}\n${v.nodes.map((n) => `    ${n.target}\n      ${n.summary?.replace(/\n/g, '\n      ')}`).join('\n')}`)
    .join('\n');
}

async function setTheme(driver, theme) {
  await invoke(driver, 'update_settings', { update: { theme } });
  const want = theme === 'system' ? null : theme;
  const applied = await eventually(async () => (await driver.executeScript('return document.documentElement.getAttribute("data-theme")')) === want);
  assert.ok(applied, `the ${theme} theme is applied`);
}

async function go(driver, view) {
  await (await waitFor(driver, `[data-testid="nav-${view}"]`)).click();
}

test('no serious or critical accessibility violation on any main screen, in light and in dark', async (t) => {
  const app = await startApp();
  try {
    const { driver } = app;
    await driver.manage().setTimeouts({ script: 60000 });
    await waitFor(driver, '[data-testid="sidebar"]');
    await muteNotifications(driver);

    // axe runs in this webview and finds what it should: a button without a name is critical.
    await driver.executeScript('const b = document.createElement("button"); b.id = "a11y-probe"; document.body.append(b)');
    const probe = await violations(driver, '#a11y-probe');
    await driver.executeScript('document.getElementById("a11y-probe").remove()');
    assert.ok(probe.some((v) => v.id === 'button-name' && blocking(v)), `axe saw the unnamed button: ${JSON.stringify(probe)}`);

    // The first launch: nothing run yet, the empty state's invitation.
    const failures = [];
    for (const theme of ['light', 'dark']) {
      await setTheme(driver, theme);
      await waitFor(driver, '[data-testid="empty-state"]');
      const found = (await violations(driver)).filter(blocking);
      if (found.length > 0) failures.push(`── the first launch, ${theme} ──\n${described(found)}`);
    }

    // A finished report to open, and a diagnosis that waits for an answer.
    const report = await invoke(driver, 'run_tool', { server: 'demo', tool: 'generate_report', arguments: { topic: 'a11y', seconds: 0 } });
    const diagnosis = await invoke(driver, 'run_tool', { server: 'demo', tool: 'diagnose_incident', arguments: {} });
    await waitFor(driver, `[data-testid="task-row"][data-task-id="${report.id}"][data-status="completed"]`, 30000);
    await waitFor(driver, `[data-testid="task-row"][data-task-id="${diagnosis.id}"][data-status="input_required"]`, 30000);

    const screens = {
      'tasks with a result open': async () => {
        await go(driver, 'tasks');
        await (await waitFor(driver, `[data-testid="task-row"][data-task-id="${report.id}"]`)).click();
        await waitFor(driver, `[data-testid="task-detail"][data-task-id="${report.id}"] [data-testid="result-markdown"], [data-testid="task-detail"][data-task-id="${report.id}"] [data-testid="result-text"]`);
      },
      'a question': async () => {
        await go(driver, 'tasks');
        await (await waitFor(driver, `[data-testid="task-row"][data-task-id="${diagnosis.id}"]`)).click();
        await waitFor(driver, `[data-testid="task-detail"][data-task-id="${diagnosis.id}"] [data-testid="question-form"]`);
      },
      'the run form': async () => {
        await go(driver, 'tools');
        const row = await waitFor(driver, '[data-testid="tool-row"][data-tool="generate_report"]', 30000);
        await row.findElement(css('[data-testid="tool-run"]')).click();
        await waitFor(driver, '[data-testid="run-form"]');
      },
      'the tool picker': async () => {
        await go(driver, 'tasks');
        await driver.executeScript('document.activeElement && document.activeElement.blur()');
        await driver.actions().sendKeys('n').perform();
        await waitFor(driver, '[data-testid="tool-picker-option"]', 30000);
      },
      'the shortcut list': async () => {
        await go(driver, 'tasks');
        await driver.executeScript('document.activeElement && document.activeElement.blur()');
        await driver.actions().sendKeys('?').perform();
        await waitFor(driver, '[data-testid="shortcuts"][open]');
      },
      servers: async () => {
        await go(driver, 'servers');
        await waitFor(driver, '[data-testid="server-row"]');
      },
      tools: async () => {
        await go(driver, 'tools');
        await waitFor(driver, '[data-testid="tool-row"]', 30000);
      },
      settings: async () => {
        await go(driver, 'settings');
        await waitFor(driver, '[data-testid="settings-retention"]');
      },
    };

    for (const theme of ['light', 'dark']) {
      await setTheme(driver, theme);
      for (const [name, open] of Object.entries(screens)) {
        await open();
        const found = await violations(driver);
        const serious = found.filter(blocking);
        if (serious.length > 0) failures.push(`── ${name}, ${theme} ──\n${described(serious)}`);
        // The lesser ones are reported, not failed: worth reading when the screen changes.
        const minor = found.filter((v) => !blocking(v));
        if (minor.length > 0) t.diagnostic(`${name}, ${theme}: ${minor.map((v) => `${v.impact} ${v.id} (${v.nodes.length})`).join(', ')}`);
        // Whatever dialog the screen opened is closed before the next one.
        if ((await driver.findElements(css('dialog[open]'))).length > 0) {
          await driver.actions().sendKeys(Key.ESCAPE).perform();
          await eventually(async () => (await driver.findElements(css('dialog[open]'))).length === 0, 5000);
        }
      }
    }
    assert.equal(failures.length, 0, `axe found serious or critical violations:\n${failures.join('\n')}`);
  } finally {
    await app.stop();
  }
});
