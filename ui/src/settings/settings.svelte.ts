/**
 * The settings as the engine holds them (`settings.json` in the data directory), for every view:
 * loaded once, then followed from `settings-changed`, which the shell emits whoever changed them
 * (this window, the tray, another section's owner). The theme is applied here, at once.
 */
import { listen, type UnlistenFn } from '@tauri-apps/api/event';
import { call, errorText, inApp } from '../lib/ipc';
import type { Settings } from '../lib/bindings/Settings';
import type { SettingsUpdate } from '../lib/bindings/SettingsUpdate';
import { applyTheme, startTheme } from './theme';

export type { Settings, SettingsUpdate };

export const getSettings = () => call('get_settings');
export const updateSettings = (update: SettingsUpdate) => call('update_settings', { update });

export function onSettingsChanged(handler: (s: Settings) => void): Promise<UnlistenFn> {
  return listen<Settings>('settings-changed', (e) => handler(e.payload));
}

class SettingsStore {
  value: Settings | null = $state(null);
  /** Why the settings could not be read (a broken file, which is left as it is). */
  error: string | null = $state(null);
  #started = false;

  /** Loads the settings and follows their changes; call once, at start. */
  start(): void {
    if (this.#started) return;
    this.#started = true;
    applyTheme(startTheme());
    if (!inApp) return;
    void onSettingsChanged((s) => this.set(s));
    this.reload();
  }

  reload(): void {
    getSettings().then(
      (s) => this.set(s),
      (e: unknown) => (this.error = errorText(e)),
    );
  }

  /** Writes the sections given; resolves with the settings as written, rejects with the error. */
  async update(update: SettingsUpdate): Promise<Settings> {
    const s = await updateSettings(update);
    this.set(s);
    return s;
  }

  set(s: Settings): void {
    this.value = s;
    this.error = null;
    applyTheme(s.theme);
  }
}

export const settings = new SettingsStore();
