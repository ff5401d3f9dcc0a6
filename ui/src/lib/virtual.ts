/**
 * The slice of a fixed-row-height list that needs DOM nodes: the rows in view plus `overscan` on
 * each side, so a fast scroll does not show blank rows before the next frame fills them.
 */
export type Window = { start: number; end: number; offset: number; total: number };

export function visibleWindow(
  scrollTop: number,
  viewport: number,
  rowHeight: number,
  count: number,
  overscan = 6,
): Window {
  const total = count * rowHeight;
  if (count === 0 || rowHeight <= 0) return { start: 0, end: 0, offset: 0, total };
  const top = Math.max(0, Math.min(scrollTop, Math.max(0, total - viewport)));
  const first = Math.floor(top / rowHeight);
  const last = Math.ceil((top + Math.max(0, viewport)) / rowHeight);
  const start = Math.max(0, first - overscan);
  const end = Math.min(count, last + overscan);
  return { start, end, offset: start * rowHeight, total };
}

/** The scrollTop that brings row `index` fully into view, moving as little as possible. */
export function revealRow(index: number, scrollTop: number, viewport: number, rowHeight: number): number {
  const top = index * rowHeight;
  const bottom = top + rowHeight;
  if (top < scrollTop) return top;
  if (bottom > scrollTop + viewport) return Math.max(0, bottom - viewport);
  return scrollTop;
}
