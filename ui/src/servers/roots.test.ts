import { describe, expect, it } from 'vitest';
import { addRoot, isAbsolute, normalizeGrant } from './roots';

describe('a server’s granted folders', () => {
  it('are trimmed full paths without blanks or repeats, in the order given', () => {
    expect(normalizeGrant([' /home/me/notes ', '', '/srv/data', '/home/me/notes'])).toEqual({ roots: ['/home/me/notes', '/srv/data'], error: null });
    expect(normalizeGrant([])).toEqual({ roots: [], error: null });
  });

  it('refuse a relative path, naming it', () => {
    const r = normalizeGrant(['/ok', 'notes']);
    expect(r.error).toContain('“notes” is not a full path');
    expect(addRoot(['/ok'], '../etc').error).not.toBeNull();
  });

  it('know absolute paths of both families', () => {
    expect(['/', 'C:\\Users\\me', 'd:/x', '\\\\host\\share'].every(isAbsolute)).toBe(true);
    expect(['notes', './x', 'C:x'].some(isAbsolute)).toBe(false);
  });

  it('add a folder once', () => {
    expect(addRoot(['/a'], '/b')).toEqual({ roots: ['/a', '/b'], error: null });
    expect(addRoot(['/a'], ' /a ')).toEqual({ roots: ['/a'], error: null });
  });
});
