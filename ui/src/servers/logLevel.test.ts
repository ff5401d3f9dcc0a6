import { describe, expect, it } from 'vitest';
import { levelTone } from './logLevel';

describe('a server log entry’s level', () => {
  it('is quiet for debug, marked for warnings and errors and worse, plain otherwise', () => {
    expect(levelTone('debug')).toBe('quiet');
    expect(levelTone('info')).toBe('plain');
    expect(levelTone('notice')).toBe('plain');
    expect(levelTone('warning')).toBe('warn');
    expect(['error', 'critical', 'alert', 'emergency'].map((l) => levelTone(l as 'error'))).toEqual(['bad', 'bad', 'bad', 'bad']);
    expect(levelTone(undefined)).toBe('plain');
  });
});
