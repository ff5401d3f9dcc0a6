/**
 * A tool result (`CallToolResult`) split into what the detail pane renders. Every part is data to
 * show as text or as an image the CSP allows (`data:` of a raster type); nothing here becomes markup.
 */
import type { JsonValue } from '../lib/types';

export type ResultPart =
  | { kind: 'text'; text: string }
  | { kind: 'image'; src: string; mimeType: string; bytes: number }
  | { kind: 'refused-image'; mimeType: string; why: string }
  | { kind: 'link'; name: string; uri: string; description: string | null; mimeType: string | null }
  | { kind: 'resource-text'; uri: string; text: string; mimeType: string | null }
  | { kind: 'resource-binary'; uri: string; bytes: number; mimeType: string | null }
  | { kind: 'unknown'; json: JsonValue };

export type ReadResult = { parts: ResultPart[]; structured: JsonValue | undefined; isError: boolean };

/** Raster types only: an SVG could carry script, and other types would not render anyway. */
const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

type Obj = { [k: string]: JsonValue | undefined };
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const s = (v: unknown): string | null => (typeof v === 'string' ? v : null);

/** Decoded size of base64 text, without decoding it. */
export function base64Bytes(b64: string): number {
  const clean = b64.replace(/\s/g, '');
  const pad = clean.endsWith('==') ? 2 : clean.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((clean.length * 3) / 4) - pad);
}

export function readResult(result: JsonValue | null): ReadResult {
  if (!isObj(result)) return { parts: result === null ? [] : [{ kind: 'unknown', json: result }], structured: undefined, isError: false };
  const content = Array.isArray(result.content) ? result.content : [];
  return {
    parts: content.map(readPart),
    structured: result.structuredContent,
    isError: result.isError === true,
  };
}

function readPart(c: JsonValue): ResultPart {
  if (!isObj(c)) return { kind: 'unknown', json: c };
  switch (c.type) {
    case 'text':
      return s(c.text) !== null ? { kind: 'text', text: c.text as string } : { kind: 'unknown', json: c };
    case 'image': {
      const mimeType = (s(c.mimeType) ?? '').toLowerCase();
      const data = (s(c.data) ?? '').replace(/\s/g, '');
      if (!IMAGE_TYPES.has(mimeType)) return { kind: 'refused-image', mimeType, why: 'not a PNG, JPEG, GIF or WebP image' };
      if (!BASE64.test(data) || data.length === 0) return { kind: 'refused-image', mimeType, why: 'its data is not base64' };
      return { kind: 'image', src: `data:${mimeType};base64,${data}`, mimeType, bytes: base64Bytes(data) };
    }
    case 'resource_link':
      return {
        kind: 'link',
        name: s(c.title) ?? s(c.name) ?? s(c.uri) ?? '',
        uri: s(c.uri) ?? '',
        description: s(c.description),
        mimeType: s(c.mimeType),
      };
    case 'resource': {
      const r = c.resource;
      if (!isObj(r)) return { kind: 'unknown', json: c };
      const uri = s(r.uri) ?? '';
      const mimeType = s(r.mimeType);
      if (s(r.text) !== null) return { kind: 'resource-text', uri, text: r.text as string, mimeType };
      if (s(r.blob) !== null) return { kind: 'resource-binary', uri, bytes: base64Bytes(r.blob as string), mimeType };
      return { kind: 'unknown', json: c };
    }
    default:
      return { kind: 'unknown', json: c };
  }
}

/** What "Copy result" puts on the clipboard: the text parts as they read, else the JSON. */
export function resultAsText(result: JsonValue | null): string {
  const { parts } = readResult(result);
  if (parts.length > 0 && parts.every((p) => p.kind === 'text')) return parts.map((p) => (p as { text: string }).text).join('\n\n');
  return JSON.stringify(result, null, 2);
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} bytes`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MiB`;
}
