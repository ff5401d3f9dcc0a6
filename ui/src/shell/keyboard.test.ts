import { describe, expect, it } from 'vitest';
import { hasOwnKeys, shortcutFor, SHORTCUTS, takesTyping, type Keys, type Where } from './keyboard';

const key = (k: string, mods: Partial<Keys> = {}): Keys => ({ key: k, ctrlKey: false, metaKey: false, altKey: false, shiftKey: false, ...mods });
const idle: Where = { typing: false, dialog: false, control: false, onList: false };

describe('shortcuts', () => {
  it('focus search with Ctrl+K, Cmd+K or slash', () => {
    expect(shortcutFor(key('k', { ctrlKey: true }), idle)).toBe('search');
    expect(shortcutFor(key('K', { metaKey: true }), idle)).toBe('search');
    expect(shortcutFor(key('/'), idle)).toBe('search');
  });

  it('open the tool picker with N, move with J and K, open with Enter, close with Escape, list them with ?', () => {
    expect(shortcutFor(key('n'), idle)).toBe('run');
    expect(shortcutFor(key('N', { shiftKey: true }), idle)).toBe('run');
    expect(shortcutFor(key('j'), idle)).toBe('next');
    expect(shortcutFor(key('k'), idle)).toBe('prev');
    expect(shortcutFor(key('ArrowDown'), idle)).toBe('next');
    expect(shortcutFor(key('ArrowUp'), idle)).toBe('prev');
    expect(shortcutFor(key('Enter'), idle)).toBe('open');
    expect(shortcutFor(key('Escape'), idle)).toBe('close');
    expect(shortcutFor(key('?', { shiftKey: true }), idle)).toBe('help');
  });

  it('never fire while the user types in a field', () => {
    const typing = { ...idle, typing: true };
    for (const k of ['n', 'j', 'k', '/', '?', 'Enter', 'Escape', 'ArrowDown']) expect(shortcutFor(key(k), typing)).toBeNull();
    expect(shortcutFor(key('k', { ctrlKey: true }), typing)).toBeNull();
  });

  it('leave a modal dialog its own keys', () => {
    const dialog = { ...idle, dialog: true };
    expect(shortcutFor(key('Escape'), dialog)).toBeNull();
    expect(shortcutFor(key('n'), dialog)).toBeNull();
  });

  it('leave Enter and the arrows to a focused control and to the task list, but not the letters', () => {
    const control = { ...idle, control: true };
    expect(shortcutFor(key('Enter'), control)).toBeNull();
    expect(shortcutFor(key('ArrowDown'), control)).toBeNull();
    expect(shortcutFor(key('j'), control)).toBe('next');
    const onList = { ...idle, onList: true };
    expect(shortcutFor(key('Enter'), onList)).toBeNull();
    expect(shortcutFor(key('ArrowUp'), onList)).toBeNull();
    expect(shortcutFor(key('k'), onList)).toBe('prev');
  });

  it('ignore letters with a modifier, so the platform keeps its own chords', () => {
    expect(shortcutFor(key('n', { ctrlKey: true }), idle)).toBeNull();
    expect(shortcutFor(key('j', { altKey: true }), idle)).toBeNull();
    expect(shortcutFor(key('k', { ctrlKey: true, shiftKey: true }), idle)).toBeNull();
    expect(shortcutFor(key('x'), idle)).toBeNull();
  });

  it('list every action once', () => {
    const actions = SHORTCUTS.map((s) => s.action);
    expect(new Set(actions).size).toBe(actions.length);
    expect(actions.sort()).toEqual(['close', 'help', 'next', 'open', 'prev', 'run', 'search']);
  });
});

describe('where the keys go', () => {
  const el = (tag: string, attrs: Record<string, string> = {}) => {
    const attr = (name: string) => (name in attrs ? attrs[name]! : null);
    return { tagName: tag.toUpperCase(), type: attrs.type ?? (tag === 'input' ? 'text' : undefined), isContentEditable: attrs.contenteditable === 'true', getAttribute: attr } as unknown as Element;
  };

  it('text fields, text areas, selects and editable content take typing; buttons and checkboxes do not', () => {
    expect(takesTyping(el('input'))).toBe(true);
    expect(takesTyping(el('input', { type: 'search' }))).toBe(true);
    expect(takesTyping(el('input', { type: 'number' }))).toBe(true);
    expect(takesTyping(el('textarea'))).toBe(true);
    expect(takesTyping(el('select'))).toBe(true);
    expect(takesTyping(el('div', { contenteditable: 'true' }))).toBe(true);
    expect(takesTyping(el('input', { type: 'checkbox' }))).toBe(false);
    expect(takesTyping(el('input', { type: 'radio' }))).toBe(false);
    expect(takesTyping(el('button'))).toBe(false);
    expect(takesTyping(null)).toBe(false);
  });

  it('buttons, links, listboxes and radio groups have keys of their own', () => {
    expect(hasOwnKeys(el('button'))).toBe(true);
    expect(hasOwnKeys(el('a'))).toBe(true);
    expect(hasOwnKeys(el('div', { role: 'listbox' }))).toBe(true);
    expect(hasOwnKeys(el('div', { role: 'radiogroup' }))).toBe(true);
    expect(hasOwnKeys(el('div'))).toBe(false);
    expect(hasOwnKeys(el('body'))).toBe(false);
  });
});
