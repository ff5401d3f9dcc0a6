import { render } from 'svelte/server';
import { describe, expect, it } from 'vitest';
import JsonTree from './JsonTree.svelte';
import { childPage, OPEN_DEPTH, TREE_PAGE } from './jsonTree';
import type { JsonValue } from './types';

const leaves = (html: string) => (html.match(/class="leaf/g) ?? []).length;
const nodes = (html: string) => (html.match(/<details/g) ?? []).length;

describe('a JSON tree, on demand', () => {
  it('pages the children of an array and of an object', () => {
    expect(childPage([1, 2, 3], 2)).toEqual({ entries: [['0', 1], ['1', 2]], more: 1 });
    expect(childPage({ a: 1, b: 2 }, 5)).toEqual({ entries: [['a', 1], ['b', 2]], more: 0 });
  });

  it('renders the first page of a 100,000-entry array, with "show more"', () => {
    const value = Array.from({ length: 100_000 }, (_, i) => i);
    const { body } = render(JsonTree, { props: { value } });
    expect(leaves(body)).toBe(TREE_PAGE);
    expect(body).toContain('data-testid="json-more"');
    expect(body).toContain('[100000]');
  });

  it('renders a closed node’s children not at all', () => {
    const value = { big: Array.from({ length: 5000 }, (_, i) => ({ i })) };
    expect(leaves(render(JsonTree, { props: { value, open: false } }).body)).toBe(0);
  });

  it('opens only the first levels of a deep tree', () => {
    let value: JsonValue = 'bottom';
    for (let i = 0; i < 10_000; i++) value = [value];
    const { body } = render(JsonTree, { props: { value } });
    expect(nodes(body)).toBe(OPEN_DEPTH + 1);
    expect(leaves(body)).toBe(0);
  });
});
