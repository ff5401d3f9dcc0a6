import { describe, expect, it } from 'vitest';
import { base64Bytes, formatBytes, readResult, resultAsText } from './result';

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

describe('reading a tool result', () => {
  it('keeps text as text, whitespace and markup untouched', () => {
    const r = readResult({ content: [{ type: 'text', text: '  a\n\tb <b>c</b>' }] });
    expect(r.parts).toEqual([{ kind: 'text', text: '  a\n\tb <b>c</b>' }]);
  });

  it('turns a raster image into a data: URL the CSP allows', () => {
    const [p] = readResult({ content: [{ type: 'image', data: PNG, mimeType: 'image/png' }] }).parts;
    expect(p).toMatchObject({ kind: 'image', src: `data:image/png;base64,${PNG}`, bytes: 70 });
  });

  it('refuses SVG and anything whose data is not base64', () => {
    const parts = readResult({
      content: [
        { type: 'image', data: PNG, mimeType: 'image/svg+xml' },
        { type: 'image', data: 'abc";onerror=x', mimeType: 'image/png' },
      ],
    }).parts;
    expect(parts.map((p) => p.kind)).toEqual(['refused-image', 'refused-image']);
  });

  it('reads resource links and embedded resources, text or binary', () => {
    const parts = readResult({
      content: [
        { type: 'resource_link', uri: 'https://x.example/r', name: 'r.txt', description: 'the file' },
        { type: 'resource', resource: { uri: 'file:///a', text: 'hello', mimeType: 'text/plain' } },
        { type: 'resource', resource: { uri: 'file:///b', blob: 'AAAA' } },
      ],
    }).parts;
    expect(parts).toEqual([
      { kind: 'link', name: 'r.txt', uri: 'https://x.example/r', description: 'the file', mimeType: null },
      { kind: 'resource-text', uri: 'file:///a', text: 'hello', mimeType: 'text/plain' },
      { kind: 'resource-binary', uri: 'file:///b', bytes: 3, mimeType: null },
    ]);
  });

  it('shows unknown content as JSON, and picks up structured content and isError', () => {
    const r = readResult({ content: [{ type: 'audio', data: '' }], structuredContent: { a: 1 }, isError: true });
    expect(r.parts[0]!.kind).toBe('unknown');
    expect(r.structured).toEqual({ a: 1 });
    expect(r.isError).toBe(true);
  });

  it('copes with no result and with a result that is not an object', () => {
    expect(readResult(null).parts).toEqual([]);
    expect(readResult('plain').parts).toEqual([{ kind: 'unknown', json: 'plain' }]);
  });
});

describe('copying a result', () => {
  it('copies text parts as text, anything else as JSON', () => {
    expect(resultAsText({ content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] })).toBe('a\n\nb');
    expect(resultAsText({ content: [], structuredContent: { x: 1 } })).toContain('"structuredContent"');
  });
});

describe('sizes', () => {
  it('computes decoded size from base64 and formats it', () => {
    expect(base64Bytes('AAAA')).toBe(3);
    expect(base64Bytes('AAA=')).toBe(2);
    expect(base64Bytes('AA==')).toBe(1);
    expect(formatBytes(3)).toBe('3 bytes');
    expect(formatBytes(2048)).toBe('2.0 KiB');
  });
});
