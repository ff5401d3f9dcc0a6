import { render } from 'svelte/server';
import { describe, expect, it } from 'vitest';
import type { JsonValue } from '../lib/types';
import ResultView from './ResultView.svelte';
import { resultAsText } from './result';

const view = (result: JsonValue) => render(ResultView, { props: { result, server: 'demo', taskId: 't1' } }).body.replace(/<!--[^]*?-->/g, '');
const REPORT = '# Report: x\n\n## Collecting sources\nGathered three sources.\n\n- one\n- two';

describe('a result’s text', () => {
  it('is formatted when it is Markdown, with the raw toggle beside it', () => {
    const out = view({ content: [{ type: 'text', text: REPORT }] });
    expect(out).toContain('data-testid="result-markdown"');
    expect(out).toContain('data-testid="result-raw-toggle"');
    expect(out).not.toContain('data-testid="result-text"');
    expect(out).not.toContain('# Report');
  });

  it('stays plain text when it is not, with no toggle', () => {
    const out = view({ content: [{ type: 'text', text: 'Diagnosis for Auth gateway: the pool is exhausted.' }] });
    expect(out).toContain('data-testid="result-text"');
    expect(out).not.toContain('result-markdown');
    expect(out).not.toContain('result-raw-toggle');
  });

  it('follows an embedded resource’s declared type', () => {
    const md = view({ content: [{ type: 'resource', resource: { uri: 'file:///r.md', mimeType: 'text/markdown', text: 'plain words only' } }] });
    expect(md).toContain('result-markdown');
    const plain = view({ content: [{ type: 'resource', resource: { uri: 'file:///r.txt', mimeType: 'text/plain', text: REPORT } }] });
    expect(plain).not.toContain('result-markdown');
  });

  it('is copied as the server wrote it, Markdown signs included', () => {
    expect(resultAsText({ content: [{ type: 'text', text: REPORT }] })).toBe(REPORT);
  });
});
