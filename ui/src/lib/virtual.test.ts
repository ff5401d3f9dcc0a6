import { describe, expect, it } from 'vitest';
import { revealRow, visibleWindow } from './virtual';

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
