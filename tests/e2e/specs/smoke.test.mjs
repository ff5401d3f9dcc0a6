import assert from 'node:assert/strict';
import { test } from 'node:test';
import { By, until } from 'selenium-webdriver';
import { eventually, notificationMark, recordedNotifications, startApp, visibleWindowsTitled } from '../support/app.mjs';

test('the app opens one Taskdeck window with the sidebar and the paths it was given', async () => {
  const mark = notificationMark();
  const app = await startApp();
  try {
    const { driver } = app;

    const sidebar = await driver.wait(until.elementLocated(By.css('[data-testid="sidebar"]')), 15000);
    assert.equal(await driver.getTitle(), 'Taskdeck');
    // The native title comes from tauri.conf.json, not from the page; window managers and docks show it.
    assert.equal((await eventually(() => visibleWindowsTitled('Taskdeck').then((ids) => ids.length))) ?? 0, 1);

    const labels = await Promise.all(
      (await sidebar.findElements(By.css('button'))).map((button) => button.getText()),
    );
    assert.deepEqual(labels, ['Tasks', 'Servers', 'Tools', 'Settings']);

    // The stylesheet loaded past the CSP: an unstyled sidebar would have a transparent background.
    assert.notEqual(await sidebar.getCssValue('background-color'), 'rgba(0, 0, 0, 0)');

    const emptyState = await driver.findElement(By.css('[data-testid="empty-state"]'));
    assert.match(await emptyState.getText(), /No tasks yet[\s\S]*generate_report/);

    // The footer is filled by the app_info command, so this proves the flags reached the Rust side.
    const dataDir = await driver.wait(until.elementLocated(By.css('[data-testid="data-dir"]')), 10000);
    assert.equal(await dataDir.getText(), app.dataDir);

    await driver.findElement(By.css('[data-testid="nav-servers"]')).click();
    const configPath = await driver.wait(until.elementLocated(By.css('[data-testid="config-path"]')), 5000);
    assert.equal(await configPath.getText(), app.configPath);

    // Nothing here should notify; this also proves the recorder is in place for tests that expect one.
    assert.deepEqual(recordedNotifications(mark), []);
  } finally {
    await app.stop();
  }
});
