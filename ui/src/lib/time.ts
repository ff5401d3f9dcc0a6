/**
 * Elapsed time the way a task row shows it: short, and precise enough to see progress without jitter.
 * Under a minute shows seconds (`42s`), then minutes and seconds (`3m 07s`), then hours and minutes
 * (`2h 05m`), then days and hours (`1d 04h`). Negative spans (clock skew between a server and this
 * machine) read as `0s` rather than as nonsense.
 */
export function formatElapsed(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '0s';
  const totalSeconds = Math.floor(ms / 1000);
  const seconds = totalSeconds % 60;
  const totalMinutes = Math.floor(totalSeconds / 60);
  const minutes = totalMinutes % 60;
  const totalHours = Math.floor(totalMinutes / 60);
  const hours = totalHours % 24;
  const days = Math.floor(totalHours / 24);

  if (days > 0) return `${days}d ${pad(hours)}h`;
  if (totalHours > 0) return `${totalHours}h ${pad(minutes)}m`;
  if (totalMinutes > 0) return `${totalMinutes}m ${pad(seconds)}s`;
  return `${seconds}s`;
}

function pad(n: number): string {
  return n.toString().padStart(2, '0');
}

// Built once: `Date.prototype.toLocaleString` and friends build a new ICU formatter on every call,
// which costs tenths of a millisecond each time, and live rows are rendered several times a second.
const dateTime = new Intl.DateTimeFormat(undefined, {
  year: 'numeric',
  month: 'numeric',
  day: 'numeric',
  hour: 'numeric',
  minute: '2-digit',
  second: '2-digit',
});
const timeOfDay = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' });
const count = new Intl.NumberFormat();

/** A moment as the user's locale writes a date and time, e.g. `11/30/2026, 3:18:01 PM`. */
export function formatDateTime(iso: string): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : dateTime.format(d);
}

/** The time of day alone, for timelines within one task. */
export function formatTimeOfDay(iso: string): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : timeOfDay.format(d);
}

/** A count with the locale's digit grouping (`10,000` in English). */
export function formatCount(n: number): string {
  return count.format(n);
}
