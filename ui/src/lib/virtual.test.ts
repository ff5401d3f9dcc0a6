import { describe, expect, it } from 'vitest';
import { revealRow, Slots, visibleWindow } from './virtual';

describe('the virtual list window', () => {
  it('renders the rows in view plus overscan, never past either end', () => {
    expect(visibleWindow(0, 400, 40, 10_000, 5)).toEqual({ start: 0, end: 15, offset: 0, total: 400_000 });
    expect(visibleWindow(4000, 400, 40, 10_000, 5)).toEqual({ start: 95, end: 115, offset: 3800, total: 400_000 });
    expect(visibleWindow(399_600, 400, 40, 10_000, 5)).toMatchObject({ start: 9985, end: 10_000 });
  });

  it('clamps a scroll position beyond the content (the list just shrank)', () => {
    expect(visibleWindow(1_000_000, 400, 40, 20, 2)).toMatchObject({ start: 8, end: 20 });
  });

  it('renders nothing for an empty list', () => {
    expect(visibleWindow(0, 400, 40, 0)).toEqual({ start: 0, end: 0, offset: 0, total: 0 });
  });

  it('keeps the number of rows small however long the list', () => {
    const w = visibleWindow(123_456, 800, 40, 1_000_000, 6);
    expect(w.end - w.start).toBeLessThanOrEqual(800 / 40 + 1 + 12);
  });
});

describe('revealing the selected row', () => {
  it('scrolls up or down just enough, and not at all when it is in view', () => {
    expect(revealRow(2, 400, 400, 40)).toBe(80);
    expect(revealRow(20, 0, 400, 40)).toBe(440);
    expect(revealRow(5, 0, 400, 40)).toBe(0);
  });
});

describe('the slots that show a window of rows', () => {
  const ids = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => `t${from + i}`);
  const all = (n: number) => new Array<boolean>(n).fill(true);

  it('keeps each row that stays in view in its slot when the list scrolls by a row', () => {
    const s = new Slots();
    const first = s.assign(ids(0, 10), all(10));
    expect(new Set(first).size).toBe(10);
    const next = s.assign(ids(1, 11), all(10));
    expect(next.slice(0, 9)).toEqual(first.slice(1));
    // The row that came in took the slot of the one that left, not a new one.
    expect(next[9]).toBe(first[0]);
  });

  it('refills the same slots when the window jumps far, building none', () => {
    const s = new Slots();
    const first = s.assign(ids(0, 20), all(20));
    const jumped = s.assign(ids(5000, 5020), all(20));
    expect(new Set(jumped)).toEqual(new Set(first));
  });

  it('gives a loaded row a slot a row left before one a placeholder left', () => {
    const s = new Slots();
    const first = s.assign(['a', '@1', 'b'], [true, false, true]);
    // a and @1 leave; c comes in loaded, @9 as a placeholder.
    const next = s.assign(['b', 'c', '@9'], [true, true, false]);
    expect(next[0]).toBe(first[2]);
    expect(next[1]).toBe(first[0]);
    expect(next[2]).toBe(first[1]);
  });

  it('never gives two rows of one window the same slot, however the window grows or changes', () => {
    const s = new Slots();
    for (const [from, to] of [[0, 5], [3, 30], [100, 104], [102, 140], [0, 1], [7, 60]] as const) {
      const got = s.assign(ids(from, to), all(to - from));
      expect(new Set(got).size).toBe(to - from);
    }
  });

  it('shows a row that was a placeholder in a new slot of its kind once it is loaded', () => {
    const s = new Slots();
    const first = s.assign(['a', '@1'], [true, false]);
    const next = s.assign(['a', 't1'], [true, true]);
    expect(next[0]).toBe(first[0]);
    // The placeholder's slot is the only one free: taken, since slots are few.
    expect(next[1]).toBe(first[1]);
  });
});
