// How the window draws reaches WebKit: `--rendering` decides the switches WebKit's web process
// starts with (src-tauri/src/rendering.rs), read here from that process's own environment.

import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { appBinary, eventually, processesWith, startApp, waitFor } from '../support/app.mjs';

const SOFTWARE = ['WEBKIT_DISABLE_COMPOSITING_MODE=1', 'WEBKIT_SKIA_ENABLE_CPU_RENDERING=1'];

/** The environment of the WebKit web process serving the app that uses `dataDir`. */
function webProcessEnv(dataDir) {
  const [app] = processesWith(appBinary, dataDir);
  const web = app && processesWith('WebKitWebProcess').find((p) => p.ppid === app.pid);
  if (!web) return null;
  try {
    return readFileSync(`/proc/${web.pid}/environ`, 'utf8').split('\0');
  } catch {
    return null; // gone meanwhile
  }
}

async function launchWith(mode) {
  const app = await startApp({ extraArgs: mode ? ['--rendering', mode] : [] });
  try {
    await waitFor(app.driver, '[data-testid="sidebar"]');
    const env = await eventually(() => webProcessEnv(app.dataDir), 10000);
    assert.ok(env, 'no WebKitWebProcess found under the app');
    return SOFTWARE.filter((kv) => env.includes(kv));
  } finally {
    await app.stop();
  }
}

test('--rendering software and gpu reach the web process', async () => {
  for (const kv of SOFTWARE) assert.ok(!process.env[kv.split('=')[0]], `the test runs with ${kv} already set`);
  assert.deepEqual(await launchWith('software'), SOFTWARE);
  assert.deepEqual(await launchWith('gpu'), []);
});

test('auto draws in software exactly when the machine has no GPU render node', async () => {
  const gpu = existsSync('/dev/dri') && readdirSync('/dev/dri').some((n) => n.startsWith('renderD'));
  assert.deepEqual(await launchWith(null), gpu ? [] : SOFTWARE);
});
