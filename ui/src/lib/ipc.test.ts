import { describe, expect, it } from 'vitest';
import { errorFieldPath } from './ipc';
import type { CommandError } from './types';

const refused = (path: string | null): CommandError => ({
  code: 'invalid_arguments',
  message: 'invalid arguments for t: somewhere: mentions topic and seconds',
  path,
  status: null,
  server: null,
  rpc_code: null,
});

describe('errorFieldPath', () => {
  it('turns the JSON Pointer into the form’s dotted field path', () => {
    expect(errorFieldPath(refused('/seconds'))).toBe('seconds');
    expect(errorFieldPath(refused('/address/city'))).toBe('address.city');
    expect(errorFieldPath(refused('/tags/2'))).toBe('tags.2');
    expect(errorFieldPath(refused('/a~1b/c~0d'))).toBe('a/b.c~d');
  });

  it('names no field for the whole object, no path, or something that is not a command error', () => {
    expect(errorFieldPath(refused(''))).toBeNull();
    expect(errorFieldPath(refused(null))).toBeNull();
    expect(errorFieldPath(new Error('/seconds'))).toBeNull();
    expect(errorFieldPath('seconds')).toBeNull();
  });
});
