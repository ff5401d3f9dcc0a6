import { describe, expect, it } from 'vitest';
import { applyTheme, isTheme, startTheme } from './theme';

function root() {
  const attrs = new Map<string, string>();
  return {
    setAttribute: (k: string, v: string) => attrs.set(k, v),
    removeAttribute: (k: string) => attrs.delete(k),
    attrs,
  };
}

describe('the theme', () => {
  it('sets a chosen theme on the root and leaves the system preference to CSS', () => {
    const r = root();
    applyTheme('dark', r as unknown as HTMLElement);
    expect(r.attrs.get('data-theme')).toBe('dark');
    applyTheme('light', r as unknown as HTMLElement);
    expect(r.attrs.get('data-theme')).toBe('light');
    applyTheme('system', r as unknown as HTMLElement);
    expect(r.attrs.has('data-theme')).toBe(false);
  });

  it('starts from what the shell said, and from the system for anything else', () => {
    expect(startTheme({ __TASKDECK_THEME__: 'dark' } as unknown as Window)).toBe('dark');
    expect(startTheme({} as unknown as Window)).toBe('system');
    expect(startTheme({ __TASKDECK_THEME__: '<script>' } as unknown as Window)).toBe('system');
    expect(isTheme('light')).toBe(true);
    expect(isTheme(3)).toBe(false);
  });
});
