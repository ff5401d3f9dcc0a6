// Markup a server puts in a tool result is shown as text in the real webview: an <img onerror> and a
// <script> in the result must neither become elements nor run.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { By } from 'selenium-webdriver';
import { muteNotifications, notificationMark, recordedNotifications, startApp, submitReport, waitFor } from '../support/app.mjs';

const css = (s) => By.css(s);

const PAYLOAD = `<img src=x onerror="document.title='pwned'"><script>document.title='pwned2'</script>`;

/** What the page holds that the payload would have created had it been parsed as HTML. */
async function injected(driver) {
  return driver.executeScript(`
    const imgs = [...document.querySelectorAll('img')].filter((i) => i.getAttribute('src') === 'x');
    const scripts = [...document.querySelectorAll('script')].filter((s) => s.textContent.includes('pwned'));
    const handlers = [...document.querySelectorAll('[onerror]')].length;
    return { imgs: imgs.length, scripts: scripts.length, handlers, title: document.title };
  `);
}

test('a result containing <img onerror> and <script> is shown as text and runs nothing', async () => {
  const app = await startApp();
  const notified = notificationMark();
  try {
    const { driver } = app;
    await waitFor(driver, '[data-testid="sidebar"]');
    await muteNotifications(driver);
    await (await waitFor(driver, '[data-testid="empty-run-demo"]')).click();
    await submitReport(driver, PAYLOAD, 0);

    const row = await waitFor(driver, '[data-testid="task-row"][data-status="completed"]', 30000);
    const id = await row.getAttribute('data-task-id');
    await row.click();
    const detail = await waitFor(driver, `[data-testid="task-detail"][data-task-id="${id}"]`);
    // The formatted report is inert too (checked below, after re-rendering); first its raw text.
    await (await detail.findElement(css('[data-testid="result-raw-toggle"]'))).click();
    const result = await waitFor(driver, `[data-testid="task-detail"][data-task-id="${id}"] [data-testid="result-text"]`, 5000);

    // The literal markup is the element's text...
    const text = await result.getText();
    assert.ok(text.includes(`# Report: ${PAYLOAD}`), `result text: ${text}`);
    assert.ok(text.includes('<img src=x onerror='));
    assert.ok(text.includes('<script>'));
    // ...and the text node is all there is: no child elements were made from it.
    const shape = await driver.executeScript(
      `const el = arguments[0];
       return { children: el.children.length, textContent: el.textContent };`,
      result,
    );
    assert.equal(shape.children, 0);
    assert.ok(shape.textContent.includes(PAYLOAD));

    // structuredContent echoes the topic too; the tree shows it as text as well.
    const detailText = await detail.getText();
    assert.ok(detailText.split(PAYLOAD).length - 1 >= 2, 'the topic also appears (as text) in structuredContent');

    // Give a would-be onerror (a failed load of "x" is asynchronous) time to fire before looking.
    await driver.sleep(500);
    assert.deepEqual(await injected(driver), { imgs: 0, scripts: 0, handlers: 0, title: 'Taskdeck' });
    assert.equal(await driver.getTitle(), 'Taskdeck');

    // The row and the detail header show server text as well; re-rendering (select another view and come
    // back) must not change anything.
    await (await waitFor(driver, '[data-testid="nav-tools"]')).click();
    await (await waitFor(driver, '[data-testid="nav-tasks"]')).click();
    await (await waitFor(driver, `[data-testid="task-row"][data-task-id="${id}"]`)).click();
    await waitFor(driver, `[data-testid="task-detail"][data-task-id="${id}"] [data-testid="result-markdown"]`);
    await driver.sleep(300);
    assert.deepEqual(await injected(driver), { imgs: 0, scripts: 0, handlers: 0, title: 'Taskdeck' });
    assert.deepEqual(recordedNotifications(notified), [], 'nothing was notified while paused');
  } finally {
    await app.stop();
  }
});
