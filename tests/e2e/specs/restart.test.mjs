// Taskdeck is killed hard (SIGKILL, no shutdown path) while a report is running and a diagnosis is
// waiting for an answer; a new instance on the same data dir and config must pick both up again:
// the report finishes (resumed by the demo server from its checkpoint) and the question is asked again
// and can be answered through the form.

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { By } from 'selenium-webdriver';
import { appBinary, eventually, muteNotifications, notificationMark, processesWith, recordedNotifications, startApp, submitReport, waitFor } from '../support/app.mjs';

const css = (s) => By.css(s);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function killAll(procs) {
  for (const { pid } of procs) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {}
  }
}

async function pickService(question, label) {
  for (const option of await question.findElements(css('select[name="service"] option'))) {
    if ((await option.getText()) === label) {
      await option.click();
      return true;
    }
  }
  return false;
}

test('after a hard kill mid-task, a new instance finishes the report and asks the pending question again', async (t) => {
  const scratch = mkdtempSync(join(tmpdir(), 'taskdeck-e2e-restart-'));
  const dataDir = join(scratch, 'data');
  const configPath = join(scratch, 'config', 'servers.json');
  const stateDir = join(scratch, 'demo-state');
  mkdirSync(dirname(configPath), { recursive: true });
  writeFileSync(
    configPath,
    JSON.stringify({
      mcpServers: { demo: { command: join(dirname(appBinary), 'taskdeck-demo-server'), args: ['--state', stateDir] } },
    }),
  );

  let app;
  const notified = notificationMark();
  try {
    // ---- first life ----
    app = await startApp({ dataDir, configPath });
    let { driver } = app;
    await waitFor(driver, '[data-testid="sidebar"]');
    await muteNotifications(driver);

    // The diagnosis first: it waits for an answer indefinitely, so its timing does not matter.
    await (await waitFor(driver, '[data-testid="nav-tools"]')).click();
    const tool = await waitFor(driver, '[data-testid="tool-row"][data-tool="diagnose_incident"]');
    await tool.findElement(css('[data-testid="tool-run"]')).click();
    await (await waitFor(driver, '[data-testid="run-submit"]')).click();
    const asking = await waitFor(driver, '[data-testid="task-row"][data-status="input_required"]', 30000);
    const diagnosisId = await asking.getAttribute('data-task-id');
    await waitFor(driver, `[data-testid="task-detail"][data-task-id="${diagnosisId}"] [data-testid="question-form"]`);

    await (await waitFor(driver, '[data-testid="nav-tools"]')).click();
    const report = await waitFor(driver, '[data-testid="tool-row"][data-tool="generate_report"]');
    await report.findElement(css('[data-testid="tool-run"]')).click();
    await submitReport(driver, 'restart report', 6);

    const working = await waitFor(driver, '[data-testid="task-row"][data-status="working"]', 30000);
    const reportId = await working.getAttribute('data-task-id');
    assert.notEqual(reportId, diagnosisId);
    // Past the first of the four stages (> 25 %), so the demo server has a checkpoint to resume from
    // and the result says so: proof the work was interrupted rather than finished before the kill.
    const progressed = await eventually(async () => {
      const bars = await driver.findElements(css(`[data-testid="task-row"][data-task-id="${reportId}"] [data-testid="task-progress"]`));
      const now = bars.length ? Number(await bars[0].getAttribute('aria-valuenow')) : 0;
      return now > 25 ? now : 0;
    }, 15000, 50);
    assert.ok(progressed > 25 && progressed < 100, `report progress before the kill: ${progressed}`);

    // ---- the kill ----
    const apps = processesWith(appBinary, dataDir);
    assert.equal(apps.length, 1, `one taskdeck process on ${dataDir}: ${JSON.stringify(apps)}`);
    process.kill(apps[0].pid, 'SIGKILL');
    assert.ok(await eventually(() => processesWith(appBinary, dataDir).length === 0, 5000), 'taskdeck died');
    // The demo server runs in its own process group, so it survives the app; with its stdin closed it
    // must stop on its own, before the next instance starts another one on the same state.
    const serverGone = await eventually(() => processesWith(stateDir).length === 0, 5000);
    if (!serverGone) {
      t.diagnostic(`demo server still running 5 s after the app was killed: ${JSON.stringify(processesWith(stateDir))}`);
      killAll(processesWith(stateDir));
    }
    assert.ok(serverGone, 'the demo server exits once the killed app closed its stdin');
    // The session's app is gone: quit() fails quickly, then the driver group is killed as usual.
    await app.stop();
    app = undefined;

    // ---- second life, same data dir and config ----
    app = await startApp({ dataDir, configPath });
    driver = app.driver;
    // The pause is kept across starts (settings.json); pausing again is harmless, and the report
    // still has seconds of work left on the server.
    await waitFor(driver, '[data-testid="sidebar"]');
    await muteNotifications(driver);
    const done = await waitFor(driver, `[data-testid="task-row"][data-task-id="${reportId}"][data-status="completed"]`, 30000);
    await done.click();
    const detail = await waitFor(driver, `[data-testid="task-detail"][data-task-id="${reportId}"]`);
    await (await detail.findElement(css('[data-testid="result-raw-toggle"]'))).click();
    const raw = `[data-testid="task-detail"][data-task-id="${reportId}"] [data-testid="result-text"]`;
    const text = await (await waitFor(driver, raw, 5000)).getText();
    assert.match(text, /# Report: restart report/);
    assert.match(text, /Resumed after a restart from stage/);

    await (await waitFor(driver, `[data-testid="task-row"][data-task-id="${diagnosisId}"]`)).click();
    const question = await waitFor(driver, `[data-testid="task-detail"][data-task-id="${diagnosisId}"] [data-testid="question-form"]`);
    assert.match(await question.getText(), /demo asks:/);
    assert.ok(await pickService(question, 'Auth gateway'), 'the service options are offered again');
    await question.findElement(css('[data-testid="answer-accept"]')).click();
    await waitFor(driver, `[data-testid="task-row"][data-task-id="${diagnosisId}"][data-status="completed"]`, 30000);
    const diagnosis = await waitFor(driver, `[data-testid="task-detail"][data-task-id="${diagnosisId}"] [data-testid="result-text"]`);
    assert.match(await diagnosis.getText(), /Diagnosis for Auth gateway/);
    assert.deepEqual(recordedNotifications(notified), [], 'nothing was notified while paused');
  } finally {
    if (app) await app.stop();
    // Whatever outlived its group (the demo server has its own) must not outlive the test.
    killAll(processesWith(scratch));
    await sleep(100);
    if (!process.env.TASKDECK_E2E_KEEP) rmSync(scratch, { recursive: true, force: true });
  }
});
