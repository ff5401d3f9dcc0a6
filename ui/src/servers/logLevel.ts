/** How a server log entry's level looks: the UI logic of `ServerLog.svelte`, tested apart. */
import type { LogLine } from '../lib/types';

export type LevelTone = 'quiet' | 'plain' | 'warn' | 'bad';

/** Debug is quiet, warnings stand out, errors and worse are marked as bad; an unknown level is plain. */
export function levelTone(level: LogLine['level']): LevelTone {
  switch (level) {
    case 'debug':
      return 'quiet';
    case 'warning':
      return 'warn';
    case 'error':
    case 'critical':
    case 'alert':
    case 'emergency':
      return 'bad';
    default:
      return 'plain';
  }
}
