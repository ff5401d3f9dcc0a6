/**
 * The directories a server is granted (its `roots`), as the Roots panel reads and writes them. The
 * engine writes them to the server's config entry and tells a running server; nothing here decides
 * more than what the user typed.
 */
import { call } from '../lib/ipc';

export const serverRoots = (name: string) => call('server_roots', { name });
export const setServerRoots = (name: string, roots: string[]) => call('set_server_roots', { name, roots });

/** A grant is at most this many folders, as the engine reads it. */
export const MAX_ROOTS = 256;

/** Whether a path is absolute on either family of systems (`/home/me`, `C:\Users\me`, `\\host\share`). */
export function isAbsolute(path: string): boolean {
  return path.startsWith('/') || /^[A-Za-z]:[\\/]/.test(path) || path.startsWith('\\\\');
}

/**
 * The grant as it will be written: each folder trimmed, blanks and repeats dropped, in the user's
 * order. A relative path is refused here (the engine would take it beside the config file, which is
 * not what someone typing a folder means).
 */
export function normalizeGrant(paths: readonly string[]): { roots: string[]; error: string | null } {
  const roots: string[] = [];
  for (const raw of paths) {
    const path = raw.trim();
    if (path === '' || roots.includes(path)) continue;
    if (!isAbsolute(path)) return { roots, error: `“${path.slice(0, 200)}” is not a full path (it should start with / or a drive letter)` };
    roots.push(path);
  }
  if (roots.length > MAX_ROOTS) return { roots, error: `At most ${MAX_ROOTS} folders` };
  return { roots, error: null };
}

/** The grant with `path` added (normalised), or the reason it cannot be. */
export function addRoot(current: readonly string[], path: string): { roots: string[]; error: string | null } {
  return normalizeGrant([...current, path]);
}
