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
