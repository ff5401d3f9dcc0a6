import { invoke, isTauri } from '@tauri-apps/api/core';
import type { AppInfo } from './bindings/AppInfo';

export type { AppInfo };

/** True inside the app's webview; false when the UI runs in a plain browser via `npm run dev`. */
export const inApp = isTauri();

export function appInfo(): Promise<AppInfo> {
  return invoke<AppInfo>('app_info');
}
