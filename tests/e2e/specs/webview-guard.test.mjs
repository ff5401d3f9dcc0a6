// The webview shows Taskdeck's own pages only, and opens in the browser only a link the engine
// issued for a task: whatever a page manages to run, it cannot leave the app or open any address.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { By, until } from 'selenium-webdriver';
import { eventually, invoke, startApp } from '../support/app.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function withApp(body) {
  const app = await startApp();
  try {
    await app.driver.wait(until.elementLocated(By.css('[data-testid="sidebar"]')), 15000);
    await body(app.driver);
  } finally {
    await app.stop();
  }
}

test('the page cannot navigate away from the app or open a window', async () => {
  await withApp(async (driver) => {
    const home = await driver.getCurrentUrl();
    assert.match(home, /^(tauri:\/\/localhost|https?:\/\/tauri\.localhost)(\/|$)/);
    for (const away of ['https://example.com/', 'file:///etc/passwd', 'data:text/html,<h1>owned</h1>']) {
      await driver.executeScript('window.location.href = arguments[0]', away);
      await sleep(500);
      assert.equal(await driver.getCurrentUrl(), home, `navigated to ${away}`);
      assert.equal((await driver.findElements(By.css('[data-testid="sidebar"]'))).length, 1);
    }
    await driver.executeScript("window.open('https://example.com/', '_blank')");
    await sleep(500);
    assert.equal((await driver.getAllWindowHandles()).length, 1, 'a window was opened');
  });
});

test('open_url refuses an address the task did not offer, with invalid_url', async () => {
  await withApp(async (driver) => {
    const started = await invoke(driver, 'run_tool', { server: 'demo', tool: 'generate_report', arguments: { topic: 'x', seconds: 0.5 } });
    const done = await eventually(async () => {
      const { task } = await invoke(driver, 'task_detail', { id: started.id });
      return task.status === 'completed' ? task : undefined;
    }, 20000, 100);
    assert.ok(done, 'the task did not complete');
    const refusal = async (args) => {
      try {
        await invoke(driver, 'open_url', args);
        return 'opened';
      } catch (e) {
        return JSON.parse(e.message.replace(/^open_url failed: /, ''));
      }
    };
    for (const which of [{ kind: 'question' }, { kind: 'result_link', index: 0 }, { kind: 'result_link', index: 99 }]) {
      const r = await refusal({ taskId: started.id, which, url: 'https://example.com/' });
      assert.equal(r.code, 'invalid_url', `${JSON.stringify(which)}: ${JSON.stringify(r)}`);
    }
    // The old shape, any URL the page likes, is no longer a command at all.
    assert.notEqual(await refusal({ url: 'https://example.com/' }), 'opened');
  });
});
