import { describe, expect, it } from 'vitest';
import { describeRetention, parseLimit, parseRetention, retentionText } from './retention';

describe('the retention form', () => {
  it('reads an empty limit as none and a whole number as itself', () => {
    expect(parseLimit('', 10)).toEqual({ ok: true, value: null });
    expect(parseLimit('  ', 10)).toEqual({ ok: true, value: null });
    expect(parseLimit(' 7 ', 10)).toEqual({ ok: true, value: 7 });
  });

  it('refuses zero, fractions, signs, words and values past the maximum, saying why', () => {
    expect(parseLimit('0', 10)).toEqual({ ok: false, error: 'at least 1, or empty for no limit' });
    for (const bad of ['1.5', '-3', '+3', 'ten', '1e3']) expect(parseLimit(bad, 10000).ok).toBe(false);
    expect(parseLimit('11', 10)).toEqual({ ok: false, error: 'at most 10' });
  });

  it('turns the form into settings, or into the error of each wrong field', () => {
    expect(parseRetention({ keep_days: '30', keep_tasks: '', max_mb: '500' })).toEqual({
      ok: true,
      value: { keep_days: 30, keep_tasks: null, max_mb: 500 },
    });
    const wrong = parseRetention({ keep_days: '0', keep_tasks: 'x', max_mb: '' });
    expect(wrong.ok).toBe(false);
    if (!wrong.ok) expect(Object.keys(wrong.errors).sort()).toEqual(['keep_days', 'keep_tasks']);
  });

  it('shows stored settings as the text of the form', () => {
    expect(retentionText({ keep_days: 30, keep_tasks: null, max_mb: 2 })).toEqual({ keep_days: '30', keep_tasks: '', max_mb: '2' });
  });

  it('says the policy in words', () => {
    expect(describeRetention({ keep_days: null, keep_tasks: null, max_mb: null })).toBe('Every task is kept.');
    const text = describeRetention({ keep_days: 1, keep_tasks: 1000, max_mb: null });
    expect(text).toMatch(/^Finished tasks are kept for 1 day, up to 1,000 of them; older ones are removed first\./);
    expect(describeRetention({ keep_days: 30, keep_tasks: null, max_mb: 2048 })).toMatch(/^Finished tasks are kept for 30 days, within 2,048 MB;/);
    expect(text).toContain('Pinned tasks');
  });
});
