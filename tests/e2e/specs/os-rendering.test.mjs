// How the window draws reaches WebKit: `--rendering` decides the switches WebKit's web process
// starts with (src-tauri/src/rendering.rs), read here from that process's own environment.

import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { eventually, startApp, waitFor } from '../support/app.mjs';

const SOFTWARE = ['WEBKIT_DISABLE_COMPOSITING_MODE=1', 'WEBKIT_SKIA_ENABLE_CPU_RENDERING=1'];

function processes() {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
        return { pid: Number(pid), ppid, cmdline };
      } catch {
        return null; // gone while we looked
      }
    })
    .filter(Boolean);
}

/** The environment of the WebKit web process serving the app that uses `dataDir`. */
function webProcessEnv(dataDir) {
  const all = processes();
  const app = all.find((p) => p.cmdline.includes(dataDir) && p.cmdline[0].endsWith('taskdeck'));
  const web = app && all.find((p) => p.ppid === app.pid && p.cmdline[0].includes('WebKitWebProcess'));
  if (!web) return null;
  return readFileSync(`/proc/${web.pid}/environ`, 'utf8').split('\0');
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
