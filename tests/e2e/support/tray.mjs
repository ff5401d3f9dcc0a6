// The app's tray as a panel sees it: the StatusNotifierItem's dbusmenu on the session bus (no panel
// runs under Xvfb, so specs read and click the menu over D-Bus, as a panel would), and Quit through it.

import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { eventually, visibleWindowsTitled } from './app.mjs';

const run = promisify(execFile);
const ITEM = '/org/ayatana/NotificationItem/tray_icon_tray_app_main';

const gdbus = async (...args) => (await run('gdbus', ['call', '--session', ...args], { timeout: 10000 })).stdout;

/**
 * The bus name of the tray whose menu is served by a process of `pids` (every app on the bus has a
 * tray: a restarted one must not click the menu of another).
 */
export async function trayOwner(pids) {
  const names = (await gdbus('--dest', 'org.freedesktop.DBus', '--object-path', '/org/freedesktop/DBus',
    '--method', 'org.freedesktop.DBus.ListNames')).match(/':[0-9.]+'/g).map((n) => n.slice(1, -1));
  for (const name of names) {
    try {
      const pid = Number((await gdbus('--timeout', '1', '--dest', 'org.freedesktop.DBus', '--object-path', '/org/freedesktop/DBus',
        '--method', 'org.freedesktop.DBus.GetConnectionUnixProcessID', name)).match(/uint32 (\d+)/)[1]);
      if (pids && !pids.includes(pid)) continue;
      // Some connections never answer a call they don't serve: don't wait the default 25 s for them.
      await gdbus('--timeout', '1', '--dest', name, '--object-path', `${ITEM}/Menu`,
        '--method', 'com.canonical.dbusmenu.GetLayout', '--', '0', '0', '@as []');
      return name;
    } catch {}
  }
  return undefined;
}

/** The tray menu's entries as `{id, label}`, separators left out. */
export async function trayMenu(owner) {
  const text = await gdbus('--dest', owner, '--object-path', `${ITEM}/Menu`, '--method', 'com.canonical.dbusmenu.GetLayout',
    '--', '0', '-1', '@as []');
  return [...text.matchAll(/<\((\d+), \{([^}]*)\}/g)]
    .filter(([, , props]) => !props.includes("'separator'"))
    .map(([, id, props]) => ({ id: Number(id), label: props.match(/'label': <'([^']*)'>/)?.[1] }));
}

export async function clickTrayItem(owner, label) {
  const item = (await trayMenu(owner)).find((e) => e.label === label);
  if (!item) throw new Error(`no tray item ${label}`);
  await gdbus('--dest', owner, '--object-path', `${ITEM}/Menu`, '--method', 'com.canonical.dbusmenu.Event',
    '--', String(item.id), 'clicked', '<0>', 'uint32 0');
}

/**
 * Quits the app of `pids` as a user does while tasks run: Quit in the tray, then "Quit" in the
 * question it asks first (a native dialog, answered from the keyboard: its first button has the
 * focus).
 */
export async function quitFromTray(pids) {
  const owner = await eventually(() => trayOwner(pids), 5000);
  if (!owner) throw new Error('no tray item on the session bus');
  await clickTrayItem(owner, 'Quit');
  const [dialog] = await eventually(async () => {
    const found = await visibleWindowsTitled('Quit Taskdeck?');
    return found.length ? found : undefined;
  }, 5000) ?? [];
  if (!dialog) throw new Error('no quit dialog');
  // No window manager gives the dialog the focus under Xvfb.
  await run('xdotool', ['windowfocus', '--sync', dialog], { timeout: 5000 });
  await run('xdotool', ['key', '--clearmodifiers', 'Return'], { timeout: 5000 });
}
