import { describe, expect, it } from 'vitest';
import { formatElapsed } from './time';

describe('formatElapsed', () => {
  it('shows whole seconds under a minute, rounding down so a bar never runs ahead', () => {
    expect(formatElapsed(0)).toBe('0s');
    expect(formatElapsed(999)).toBe('0s');
    expect(formatElapsed(42_500)).toBe('42s');
  });

  it('switches to minutes with zero-padded seconds', () => {
    expect(formatElapsed(60_000)).toBe('1m 00s');
    expect(formatElapsed(3 * 60_000 + 7_000)).toBe('3m 07s');
  });

  it('switches to hours, then days, dropping the smallest unit each time', () => {
    expect(formatElapsed(3_600_000)).toBe('1h 00m');
    expect(formatElapsed(2 * 3_600_000 + 5 * 60_000 + 59_000)).toBe('2h 05m');
    expect(formatElapsed(28 * 3_600_000)).toBe('1d 04h');
  });

  it('treats clock skew and garbage as zero', () => {
    expect(formatElapsed(-5_000)).toBe('0s');
    expect(formatElapsed(Number.NaN)).toBe('0s');
    expect(formatElapsed(Number.POSITIVE_INFINITY)).toBe('0s');
  });
});
