import { describe, expect, it } from 'vitest';
import { inertText } from './text';

describe('inertText', () => {
  it('passes ordinary text through, markup included, since it will be shown as text', () => {
    expect(inertText('Quarterly <b>report</b>')).toBe('Quarterly <b>report</b>');
    expect(inertText('line one\nline two\tend')).toBe('line one\nline two\tend');
  });

  it('removes bidi overrides that would reorder a name on screen', () => {
    expect(inertText('invoice\u202Etxt.exe')).toBe('invoicetxt.exe');
    expect(inertText('a\u2066b\u2069c')).toBe('abc');
  });

  it('removes invisible characters that make two names look alike', () => {
    expect(inertText('ad\u200Bmin')).toBe('admin');
    expect(inertText('pay\u200Cpal\u200D\u2060\uFEFF\u00AD')).toBe('paypal');
    expect(inertText('left\u200Emark\u200Fright\u061C')).toBe('leftmarkright');
    expect(inertText('hidden\u{E0041}\u{E0042}tag')).toBe('hiddentag');
    expect(inertText('Ünïcödé — 日本語 — עברית — 🎉')).toBe('Ünïcödé — 日本語 — עברית — 🎉');
  });

  it('removes control characters', () => {
    expect(inertText('bell\u0007 and escape\u001B[31m')).toBe('bell and escape[31m');
  });

  it('renders non-strings without throwing', () => {
    expect(inertText(undefined)).toBe('');
    expect(inertText(null)).toBe('');
    expect(inertText(42)).toBe('42');
    expect(inertText({ a: 1 })).toBe('{"a":1}');
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(inertText(cyclic)).toBe('');
  });

  it('cuts long values by characters, not UTF-16 units, and marks the cut', () => {
    expect(inertText('abcdef', 4)).toBe('abc…');
    expect(inertText('😀😀😀😀😀', 3)).toBe('😀😀…');
    expect(inertText('abcd', 4)).toBe('abcd');
    // Longer than the limit in UTF-16 units, not in characters: kept whole.
    expect(inertText('😀😀😀', 3)).toBe('😀😀😀');
  });
});
