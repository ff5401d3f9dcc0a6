/**
 * What a JSON tree node shows of its children. A result or a question can hold a 100,000-entry
 * array or object; a node renders its children only while it is open, and then a page at a time.
 */
import type { JsonValue } from './types';

/** Children a node shows when opened, and how many more each "show more" adds. */
export const TREE_PAGE = 100;
/** Nodes below this depth start closed, whatever the caller asked. */
export const OPEN_DEPTH = 3;

type Container = JsonValue[] | { [key in string]: JsonValue };

export function isContainer(v: JsonValue | undefined): v is Container {
  return v !== null && typeof v === 'object';
}

export function childCount(v: Container): number {
  return Array.isArray(v) ? v.length : Object.keys(v).length;
}

/** The first `limit` children as `[key, value]`, and how many are left out. */
export function childPage(v: Container, limit: number): { entries: [string, JsonValue][]; more: number } {
  if (Array.isArray(v)) {
    const entries = v.slice(0, limit).map((c, i) => [String(i), c] as [string, JsonValue]);
    return { entries, more: Math.max(0, v.length - limit) };
  }
  const keys = Object.keys(v);
  return { entries: keys.slice(0, limit).map((k) => [k, v[k]!] as [string, JsonValue]), more: Math.max(0, keys.length - limit) };
}
