import { tick } from 'svelte';

/**
 * Resolves once the state changes made so far are painted. `tick` applies them to the DOM; the
 * first animation frame then runs before the paint that shows them, the second only after it.
 */
export async function afterPaint(): Promise<void> {
  await tick();
  await new Promise<void>((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => resolve())));
}

/** Calls `commit` once, at a moment of the scheduler's choosing. */
export type Schedule = (commit: () => void) => void;

/**
 * With the next animation frame, so a batch's DOM changes are made inside a frame rather than
 * between two, where WebKit would draw an extra frame for them and push the next one late. A
 * window that is hidden (in the tray) gets no frames, so a timer stands in. Without a DOM (unit
 * tests) it commits at once.
 */
export const nextFrame: Schedule = (commit) => {
  if (typeof requestAnimationFrame !== 'function') return commit();
  let done = false;
  const once = () => {
    if (done) return;
    done = true;
    cancelAnimationFrame(frame);
    clearTimeout(timer);
    commit();
  };
  const frame = requestAnimationFrame(once);
  const timer = setTimeout(once, 250);
};
