import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { By, until } from 'selenium-webdriver';
import { appBinary, eventually, startApp, visibleWindowsTitled, within } from '../support/app.mjs';

function launch(args) {
  const child = spawn(appBinary, args, { detached: true, stdio: 'ignore' });
  const exit = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  return { child, exit };
}

test('a second launch on the same data dir hands over to the first and exits', async () => {
  const app = await startApp();
  try {
    await app.driver.wait(until.elementLocated(By.css('[data-testid="sidebar"]')), 15000);
    const second = launch(app.args);
    const outcome = await within(second.exit, 15000);
    if (outcome === 'timeout') process.kill(-second.child.pid, 'SIGKILL');
    assert.deepEqual(outcome, { code: 0, signal: null });
    assert.equal((await visibleWindowsTitled('Taskdeck')).length, 1);
  } finally {
    await app.stop();
  }
});

test('an instance on another data dir runs side by side', async () => {
  const app = await startApp();
  const scratch = mkdtempSync(join(tmpdir(), 'taskdeck-e2e-other-'));
  let other;
  try {
    await app.driver.wait(until.elementLocated(By.css('[data-testid="sidebar"]')), 15000);
    other = launch(['--data-dir', join(scratch, 'data'), '--config', join(scratch, 'servers.json')]);
    const windows = await eventually(async () => ((await visibleWindowsTitled('Taskdeck')).length === 2 ? 2 : 0), 15000);
    assert.equal(windows, 2);
  } finally {
    if (other) {
      try {
        process.kill(-other.child.pid, 'SIGKILL');
      } catch {}
    }
    await app.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
});
