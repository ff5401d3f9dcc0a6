/**
 * Which of a long enum's options are on screen. A server can send a 100,000-entry enum; rendered
 * whole it is 100,000 elements, built again on every change of the form. Beyond
 * `CHOICES_INLINE` options the field shows a filter and the first `CHOICES_PAGE` that match, with
 * "show more" adding a page at a time; what the user picked is always among them.
 */
import type { Option } from './schemaForm';

/** Up to this many options are all shown, as before. */
export const CHOICES_INLINE = 200;
/** How many more options each "show more" adds, and how many a long list starts with. */
export const CHOICES_PAGE = 100;

export type Shown = { index: number; label: string };
export type ShownChoices = { shown: Shown[]; /** Matching options not shown yet. */ more: number };

/**
 * The first `limit` options whose label contains `filter` (ignoring case), in their order, plus any
 * of `picked` (indexes) that are not among them, so a chosen value never disappears from its field.
 */
export function visibleChoices(options: readonly Option[], filter: string, limit: number, picked: readonly number[] = []): ShownChoices {
  const needle = filter.trim().toLowerCase();
  const shown: Shown[] = [];
  let matching = 0;
  for (let i = 0; i < options.length; i++) {
    const label = options[i]!.label;
    if (needle && !label.toLowerCase().includes(needle)) continue;
    matching++;
    if (shown.length < limit) shown.push({ index: i, label });
  }
  const more = Math.max(0, matching - shown.length);
  const missing = picked.filter((i) => i >= 0 && i < options.length && !shown.some((s) => s.index === i));
  if (missing.length) {
    for (const i of missing) shown.push({ index: i, label: options[i]!.label });
    shown.sort((a, b) => a.index - b.index);
  }
  return { shown, more };
}
