import { tick } from 'svelte';

/**
 * Resolves once the state changes made so far are painted. `tick` applies them to the DOM; the
 * first animation frame then runs before the paint that shows them, the second only after it.
 */
export async function afterPaint(): Promise<void> {
  await tick();
  await new Promise<void>((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => resolve())));
}
