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

/**
 * Which DOM slot shows each row of the window. A row still in the window keeps its slot; a row
 * that comes in takes a slot a row that went out left (a loaded row's before a placeholder's, so
 * a row is rarely built where a placeholder was), and only when none is free is a slot made. A
 * drag that moves the whole window each frame so refills the same slots instead of tearing the
 * rows down and building new ones, and a scroll by a row moves one slot from one end to the
 * other. `ids`: each row's identity (its task's id, or its place while a placeholder);
 * `loaded[i]`: whether row `i` is a loaded row. Slots are numbers, unique within one window.
 */
export class Slots {
  #of = new Map<string, { slot: number; loaded: boolean }>();
  #made = 0;

  assign(ids: readonly string[], loaded: readonly boolean[]): number[] {
    const out: number[] = new Array<number>(ids.length);
    const next = new Map<string, { slot: number; loaded: boolean }>();
    const kept = new Set<number>();
    ids.forEach((id, i) => {
      const had = this.#of.get(id);
      // The same id twice in one window (never, but a slot can show one row only): a slot of its own.
      if (had !== undefined && had.loaded === loaded[i] && !next.has(id)) {
        out[i] = had.slot;
        kept.add(had.slot);
        next.set(id, { slot: had.slot, loaded: loaded[i]! });
      }
    });
    const freeRows: number[] = [];
    const freeHolders: number[] = [];
    for (const { slot, loaded: was } of this.#of.values()) {
      if (!kept.has(slot)) (was ? freeRows : freeHolders).push(slot);
    }
    ids.forEach((id, i) => {
      if (out[i] !== undefined) return;
      const own = loaded[i] ? freeRows : freeHolders;
      const other = loaded[i] ? freeHolders : freeRows;
      const slot = own.pop() ?? other.pop() ?? this.#made++;
      out[i] = slot;
      next.set(next.has(id) ? `${id}\u0000${i}` : id, { slot, loaded: loaded[i]! });
    });
    this.#of = next;
    return out;
  }
}
