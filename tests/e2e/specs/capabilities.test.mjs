import assert from 'node:assert/strict';
import { test } from 'node:test';
import { By, until } from 'selenium-webdriver';
import { startApp, visibleWindowsTitled } from '../support/app.mjs';

// Whatever a server manages to get rendered, the webview must not be able to reach past Taskdeck's
// own commands: capabilities/main.json grants those and event listening, nothing else.
test('the webview may call app_info but not core commands it was not granted', async () => {
  const app = await startApp();
  try {
    const { driver } = app;
    await driver.wait(until.elementLocated(By.css('[data-testid="sidebar"]')), 15000);

    const call = (cmd, args) =>
      driver.executeAsyncScript(
        `const done = arguments[arguments.length - 1];
         window.__TAURI_INTERNALS__.invoke(arguments[0], arguments[1])
           .then((value) => done({ ok: true, value }), (error) => done({ ok: false, error: String(error) }));`,
        cmd,
        args,
      );

    const info = await call('app_info', {});
    assert.equal(info.ok, true);
    assert.equal(info.value.data_dir, app.dataDir);

    const setTitle = await call('plugin:window|set_title', { label: 'main', value: 'Owned' });
    assert.equal(setTitle.ok, false);
    assert.match(setTitle.error, /not allowed/);
    assert.equal((await visibleWindowsTitled('Taskdeck')).length, 1);
  } finally {
    await app.stop();
  }
});
