import { render } from 'svelte/server';
import { describe, expect, it } from 'vitest';
import { CHOICES_INLINE, CHOICES_PAGE, visibleChoices } from './choices';
import FieldInput from './FieldInput.svelte';
import type { Field, Option } from './schemaForm';

const options = (n: number): Option[] => Array.from({ length: n }, (_, i) => ({ value: `v${i}`, label: `Option ${i}` }));
const count = (html: string, what: RegExp) => (html.match(what) ?? []).length;

describe('a long enum, on demand', () => {
  it('shows the first page of a long list, and says how many are not shown', () => {
    const { shown, more } = visibleChoices(options(100_000), '', CHOICES_PAGE);
    expect(shown.map((s) => s.index)).toEqual(Array.from({ length: CHOICES_PAGE }, (_, i) => i));
    expect(more).toBe(100_000 - CHOICES_PAGE);
    expect(visibleChoices(options(100_000), '', CHOICES_PAGE * 2).shown).toHaveLength(CHOICES_PAGE * 2);
  });

  it('narrows by label, ignoring case, keeping the options’ own indexes', () => {
    const { shown, more } = visibleChoices(options(100_000), 'OPTION 9999', CHOICES_PAGE);
    expect(shown.map((s) => s.index)).toEqual([9999, 99990, 99991, 99992, 99993, 99994, 99995, 99996, 99997, 99998, 99999]);
    expect(more).toBe(0);
  });

  it('keeps what the user picked on screen even when the filter or the page would hide it', () => {
    const { shown } = visibleChoices(options(100_000), 'Option 1', 5, [77_000, 3]);
    expect(shown.map((s) => s.index)).toEqual([1, 3, 10, 11, 12, 13, 77_000]);
  });

  it('renders a 100,000-option select as a page of options with a filter and "show more"', () => {
    const field: Field = { name: 'pick', path: 'pick', title: 'Pick', description: null, required: true, default: undefined, kind: 'select', options: options(100_000) } as Field;
    const { body } = render(FieldInput, { props: { field, values: { pick: '' }, errors: {}, idPrefix: 't' } });
    expect(count(body, /<option /g)).toBe(CHOICES_PAGE + 1); // and "Choose…"
    expect(body).toContain('data-testid="choices-filter"');
    expect(body).toContain('data-testid="choices-more"');
  });

  it('renders a short enum whole, as before', () => {
    const field = { name: 'pick', path: 'pick', title: 'Pick', description: null, required: false, default: undefined, kind: 'select', options: options(CHOICES_INLINE) } as Field;
    const { body } = render(FieldInput, { props: { field, values: { pick: '' }, errors: {}, idPrefix: 't' } });
    expect(count(body, /<option /g)).toBe(CHOICES_INLINE + 1);
    expect(body).not.toContain('choices-filter');
  });

  it('renders a long multi-select as a page of checkboxes', () => {
    const field = { name: 'many', path: 'many', title: 'Many', description: null, required: false, default: undefined, kind: 'multiselect', options: options(50_000) } as Field;
    const { body } = render(FieldInput, { props: { field, values: { many: [49_999] }, errors: {}, idPrefix: 't' } });
    expect(count(body, /type="checkbox"/g)).toBe(CHOICES_PAGE + 1);
    expect(body).toContain('Option 49999');
  });
});
