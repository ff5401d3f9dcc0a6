/**
 * The window's colours. `app.css` holds both palettes: with no `data-theme` on the root the system's
 * preference decides (`prefers-color-scheme`); `light` or `dark` there overrides it. The shell's
 * initialization script sets `window.__TASKDECK_THEME__` (and the attribute, where the document
 * already has its root) before any of the page's scripts, so the first paint is already in the
 * chosen colours.
 */
import type { Theme } from '../lib/bindings/Theme';

export type { Theme };

export const THEMES: { value: Theme; label: string }[] = [
  { value: 'system', label: 'System' },
  { value: 'light', label: 'Light' },
  { value: 'dark', label: 'Dark' },
];

declare global {
  interface Window {
    __TASKDECK_THEME__?: unknown;
  }
}

export function isTheme(value: unknown): value is Theme {
  return value === 'system' || value === 'light' || value === 'dark';
}

/** Sets the palette on `root`: an explicit choice as `data-theme`, `system` as no attribute. */
export function applyTheme(theme: Theme, root: HTMLElement = document.documentElement): void {
  if (theme === 'system') root.removeAttribute('data-theme');
  else root.setAttribute('data-theme', theme);
}

/** The theme the shell said at start, if it said one the page understands. */
export function startTheme(win: Window = window): Theme {
  return isTheme(win.__TASKDECK_THEME__) ? win.__TASKDECK_THEME__ : 'system';
}
