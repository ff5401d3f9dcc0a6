// A store its integrity check finds damaged after the first paint: the check runs beside the
// reads, so the first page is on screen before the damage is known. Then the banner says what is
// wrong and with which file, every command that would write is refused with the typed
// `engine_unavailable` and the start-up error, and the file is left byte for byte as it was.
//
// The rows read before stay on screen under the banner, read-only: they are what the store could
// read, and a person deciding what to do with a damaged file (restore a backup, copy something
// out) is better served seeing their history than an empty list. Nothing on them can change it.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { By } from 'selenium-webdriver';
import { appBinary, eventually, startApp, waitFor } from '../support/app.mjs';

const run = promisify(execFile);
const cli = join(dirname(appBinary), 'taskdeck-cli');

/** Calls a command from the page and returns its rejection (parsed), failing if it succeeded. */
async function refusal(driver, cmd, args = {}) {
  const reply = await driver.executeAsyncScript(
    `const done = arguments[arguments.length - 1];
     window.__TAURI_INTERNALS__.invoke(arguments[0], arguments[1])
       .then((value) => done({ ok: true, value }), (error) => done({ ok: false, error }));`,
    cmd,
    args,
  );
  assert.equal(reply.ok, false, `${cmd} was not refused: ${JSON.stringify(reply.value)}`);
  return typeof reply.error === 'string' ? { message: reply.error } : reply.error;
}

async function rowIds(driver) {
  try {
    const rows = await driver.findElements(By.css('[data-testid="task-row"]'));
    return await Promise.all(rows.map((r) => r.getAttribute('data-task-id')));
  } catch {
    return undefined; // a row re-rendered under the probe
  }
}

/**
 * Overwrites the root page of the search index's data, a page the list never reads, so that only
 * the check finds it. The WAL is checkpointed away first (as a clean exit leaves it): a store with
 * frames in its WAL is checked before it opens, and would be refused before the first page.
 */
async function damageSearchIndex(store) {
  const script = `
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1])
conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
print(conn.execute("PRAGMA page_size").fetchone()[0], conn.execute(
    "SELECT rootpage FROM sqlite_schema WHERE name = 'task_search_data'").fetchone()[0])
conn.close()
`;
  const { stdout } = await run('python3', ['-c', script, store]);
  const [pageSize, root] = stdout.trim().split(/\s+/).map(Number);
  assert.ok(root > 1 && pageSize >= 512, `page ${root} of ${pageSize} bytes`);
  assert.ok(!existsSync(`${store}-wal`) || statSync(`${store}-wal`).size === 0, 'the WAL still holds frames');
  const data = readFileSync(store);
  const start = (root - 1) * pageSize;
  for (let i = 0; i < pageSize; i++) data[start + i] = ((i * 37) & 0xff) ^ 0xc3;
  writeFileSync(store, data);
}

test('a store found damaged after the first paint shows the banner, refuses every write and is left untouched', async () => {
  const scratch = mkdtempSync(join(tmpdir(), 'taskdeck-e2e-damaged-'));
  const dataDir = join(scratch, 'data');
  // No config file: the default one runs the demo server beside the binaries.
  const configPath = join(scratch, 'config', 'servers.json');
  try {
    const ids = [];
    for (const topic of ['tides', 'lighthouses', 'gulls']) {
      const args = JSON.stringify({ topic, seconds: 0 });
      const { stdout } = await run(cli, ['--data-dir', dataDir, '--config', configPath, 'run', 'demo', 'generate_report', '--args', args, '--json']);
      ids.push(JSON.parse(stdout).id);
    }
    const store = join(dataDir, 'taskdeck.sqlite3');
    await damageSearchIndex(store);
    const before = readFileSync(store);

    const app = await startApp({ dataDir, configPath });
    try {
      const { driver } = app;
      // The first page is read while the check waits for the first paint.
      const shown = await eventually(async () => {
        const on = await rowIds(driver);
        return on && ids.every((id) => on.includes(id)) ? on : undefined;
      }, 20000);
      assert.ok(shown, `the first page did not show the tasks: ${shown}`);

      const banner = await waitFor(driver, '[data-testid="engine-error"]', 30000);
      const text = await banner.getText();
      assert.match(text, /could not start its engine/);
      assert.ok(text.includes(store) && text.includes('damaged') && text.includes('left untouched'), text);

      // The start-up error every command now reports, as for a store refused at open.
      const info = await driver.executeAsyncScript(
        `const done = arguments[arguments.length - 1];
         window.__TAURI_INTERNALS__.invoke('app_info', {}).then(done, (e) => done({ failed: e }));`,
      );
      assert.ok(info.engine_error && info.engine_error.includes(store), JSON.stringify(info));

      const writes = [
        ['run_tool', { server: 'demo', tool: 'generate_report', arguments: { topic: 'never', seconds: 0 }, idempotencyKey: null }],
        ['rerun_task', { id: ids[0] }],
        ['pin_task', { id: ids[1], pinned: true }],
        ['delete_tasks', { scope: { kind: 'tasks', ids: [ids[2]] }, force: true, dryRun: false }],
        ['delete_tasks', { scope: { kind: 'finished_before', before: '2999-01-01' }, force: false, dryRun: false }],
        ['cancel_task', { id: ids[0] }],
        ['answer_task', { id: ids[0], answer: { action: 'decline', content: null } }],
        ['update_settings', { update: { theme: 'dark' } }],
      ];
      for (const [cmd, args] of writes) {
        const e = await refusal(driver, cmd, args);
        assert.equal(e.code, 'engine_unavailable', `${cmd}: ${JSON.stringify(e)}`);
        assert.equal(e.message, info.engine_error, `${cmd}: ${JSON.stringify(e)}`);
      }
      // Reads end too, with the same error: nothing new is read from a file known to be damaged.
      const read = await refusal(driver, 'task_counts', { filter: {} });
      assert.equal(read.code, 'engine_unavailable', JSON.stringify(read));

      // As a person meets it: the star on a row is refused with the same words, and stays off.
      await (await waitFor(driver, `[data-testid="task-row"][data-task-id="${ids[1]}"] [data-testid="task-pin"]`)).click();
      const failure = await waitFor(driver, '.toolbar.notes [role="alert"]', 15000);
      const said = await eventually(async () => ((await failure.getText()).includes('damaged') ? failure.getText() : undefined), 10000);
      assert.ok(said && said.includes(store), `the refused pin said: ${said}`);

      // What was read before stays on screen, under the banner, as it was.
      const still = await rowIds(driver);
      assert.ok(still && ids.every((id) => still.includes(id)), `the rows read before went away: ${still}`);
      for (const id of ids) {
        const row = await driver.findElement(By.css(`[data-testid="task-row"][data-task-id="${id}"]`));
        assert.equal(await row.getAttribute('data-status'), 'completed');
        assert.notEqual(await row.getAttribute('data-pinned'), 'true', 'a pin reached the row');
      }
    } finally {
      await app.stop();
    }

    const after = readFileSync(store);
    assert.equal(after.length, before.length, "the store's length changed");
    assert.ok(after.equals(before), 'the damaged store was written to');
    const wal = `${store}-wal`;
    assert.ok(!existsSync(wal) || statSync(wal).size === 0, 'frames were written to the WAL');
    assert.ok(!existsSync(join(dataDir, 'settings.json')) || !readFileSync(join(dataDir, 'settings.json'), 'utf8').includes('dark'), 'the settings were written');
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
});
