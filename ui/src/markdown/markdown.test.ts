import { render } from 'svelte/server';
import { describe, expect, it } from 'vitest';
import MarkdownView from './MarkdownView.svelte';
import { ALL_CHARS, FIRST_CHARS, isMarkdown, parseMarkdown, type MdNode } from './markdown';

// Without the comments Svelte leaves for hydration, so the markup reads as the DOM would.
const html = (text: string) => render(MarkdownView, { props: { text } }).body.replace(/<!--[^]*?-->/g, '');
const kinds = (nodes: readonly MdNode[]) => nodes.map((n) => n.k);

/**
 * Every element the rendering made, with its attribute names. Svelte writes a `<` of text as `&lt;`,
 * so every `<` left in the markup opens an element (or a comment Svelte uses as a marker).
 */
function elements(markup: string): { tag: string; attrs: string[] }[] {
  return [...markup.matchAll(/<([a-zA-Z][a-zA-Z0-9-]*)([^>]*)>/g)].map((m) => ({
    tag: m[1]!.toLowerCase(),
    attrs: [...m[2]!.matchAll(/([^\s=]+)(?:="[^"]*")?/g)].map((a) => a[1]!.toLowerCase()).filter((a) => a !== '/'),
  }));
}
const TAGS = new Set(['div', 'p', 'h4', 'h5', 'h6', 'ul', 'ol', 'li', 'span', 'pre', 'code', 'blockquote', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'hr', 'strong', 'em', 'del', 'br', 'button']);
const ATTRS = new Set(['class', 'data-testid', 'data-md', 'start', 'style', 'type', 'title']);

/** The rendering holds only Taskdeck's own elements, with no address, handler or inline script. */
function expectInert(markup: string) {
  const made = elements(markup);
  expect(made.filter((e) => !TAGS.has(e.tag)).map((e) => e.tag)).toEqual([]);
  expect(made.flatMap((e) => e.attrs).filter((a) => !ATTRS.has(a))).toEqual([]);
  for (const m of markup.matchAll(/style="([^"]*)"/g)) expect(m[1]).toMatch(/^text-align: (left|center|right);$/);
  // The one title is Taskdeck's own words; a server's never becomes an attribute.
  for (const m of markup.matchAll(/title="([^"]*)"/g)) expect(m[1]).toMatch(/^A link in the text/);
}

describe('when a text is Markdown', () => {
  it('is told by its headings, fences, tables, lists, quotes or inline marks', () => {
    expect(isMarkdown('# Report: x\n\n## Collecting sources\nGathered.')).toBe(true);
    expect(isMarkdown('Run this:\n```\nmake\n```')).toBe(true);
    expect(isMarkdown('| a | b |\n|---|---|\n| 1 | 2 |')).toBe(true);
    expect(isMarkdown('Steps:\n- one\n- two')).toBe(true);
    expect(isMarkdown('> quoted\n> again')).toBe(true);
    expect(isMarkdown('This is **bold** and `code` here.')).toBe(true);
  });

  it('keeps plain text, logs and JSON plain', () => {
    expect(isMarkdown('Diagnosis for Auth gateway: error rate rose after the last deploy.\nYour notes: seen since 09:00')).toBe(false);
    expect(isMarkdown('Counted to 5.')).toBe(false);
    expect(isMarkdown('2 * 3 = 6, and #1 is first')).toBe(false);
    expect(isMarkdown('{"items": ["- a", "- b"], "title": "# x"}')).toBe(false);
    expect(isMarkdown('- only one item')).toBe(false);
  });

  it('follows a declared type over the text', () => {
    expect(isMarkdown('plain words', 'text/markdown')).toBe(true);
    expect(isMarkdown('# looks like a heading', 'text/plain')).toBe(false);
    expect(isMarkdown('x', 'text/markdown; charset=utf-8')).toBe(true);
  });
});

describe('the Markdown renderer', () => {
  it('renders headings, paragraphs and emphasis', () => {
    const doc = parseMarkdown('# Title\n\nSome *soft* and **strong** and ~~gone~~ words.\n\n### Third');
    expect(kinds(doc.nodes)).toEqual(['heading', 'paragraph', 'heading']);
    const out = html('# Title\n\nSome *soft* and **strong** and ~~gone~~ words.\n\n### Third');
    expect(out).toMatch(/<h4[^>]*>Title<\/h4>/);
    expect(out).toMatch(/<h6[^>]*>Third<\/h6>/);
    expect(out).toContain('<em>soft</em>');
    expect(out).toContain('<strong>strong</strong>');
    expect(out).toContain('<del>gone</del>');
    expectInert(out);
  });

  it('renders ordered, nested and task lists, task items as text', () => {
    const out = html('3. three\n4. four\n   - nested\n     - deeper\n\n- [x] done\n- [ ] to do');
    expect(out).toMatch(/<ol[^>]*start="3"/);
    expect(out.match(/<ul/g)?.length).toBe(3);
    expect(out).toContain('☑');
    expect(out).toContain('☐');
    expect(out).not.toContain('<input');
    expectInert(out);
  });

  it('renders block and inline code as text, with the language named', () => {
    const out = html('Use `<b>` here.\n\n```html\n<script>alert(1)</script>\n```');
    expect(out).toContain('&lt;b>');
    expect(out).toContain('html</span>');
    expect(out).toContain('&lt;script>alert(1)&lt;/script>');
    expectInert(out);
  });

  it('renders GFM tables with their alignment', () => {
    const out = html('| Name | Count |\n|:-----|------:|\n| a | 1 |\n| b | 2 |');
    expect(out).toContain('<th style="text-align: left;">Name</th>');
    expect(out).toContain('<td style="text-align: right;">2</td>');
    expectInert(out);
  });

  it('renders block quotes and thematic breaks', () => {
    const out = html('> quoted **text**\n\n---\n\nafter');
    expect(out).toMatch(/<blockquote[^>]*><p[^>]*>quoted <strong>text<\/strong>/);
    expect(out).toContain('<hr');
    expectInert(out);
  });

  it('shows a link as its text with the address beside it, never as an anchor', () => {
    const doc = parseMarkdown('See [the docs](https://docs.example/a?b=1&amp;c=2) and https://plain.example/x.');
    const para = doc.nodes[0] as Extract<MdNode, { k: 'paragraph' }>;
    const links = para.c.filter((n) => n.k === 'link');
    expect(links).toMatchObject([
      { k: 'link', url: 'https://docs.example/a?b=1&c=2', same: false },
      { k: 'link', url: 'https://plain.example/x', same: true },
    ]);
    const out = html('See [the docs](https://docs.example/a).');
    expect(out).toContain('the docs');
    expect(out).toContain('(https://docs.example/a)');
    expectInert(out);
  });

  it('resolves reference links and shows images as alt text and address, not loaded', () => {
    const out = html('Read [the guide][g]. ![A chart](https://img.example/c.png)\n\n[g]: https://guide.example/ "Guide"');
    expect(out).toContain('(https://guide.example/)');
    expect(out).toContain('[image: A chart]');
    expect(out).toContain('(https://img.example/c.png)');
    expectInert(out);
  });

  it('decodes character references into the characters they stand for', () => {
    const out = html('# Fish &amp; chips &#x263A; &lt;b&gt;\n\n- a\n- b');
    expect(out).toContain('Fish &amp; chips ☺ &lt;b>');
  });

  it('shows an unknown token kind as its text', () => {
    // A footnote-like line marked does not know is a paragraph of its words, not lost.
    const doc = parseMarkdown('[^1]: a note\n\nbody');
    expect(JSON.stringify(doc.nodes)).toContain('a note');
  });
});

describe('hostile Markdown', () => {
  const payloads: [string, string][] = [
    ['a script block', '# Hi\n\n<script>alert(document.cookie)</script>\n\n- a\n- b'],
    ['an image with onerror', '# Hi\n\n<img src=x onerror="alert(1)">\n\ntext <img src=x onerror=alert(2)> inline'],
    ['a javascript: link', '# Hi\n\n[click me](javascript:alert(1)) and [x](  JaVaScRiPt:alert(1) ) and <javascript:alert(1)>'],
    ['a data: link and image', '# Hi\n\n[d](data:text/html;base64,PHNjcmlwdD4=) ![i](data:image/svg+xml,<svg onload=alert(1)>)'],
    ['an HTML block', '<div onclick="alert(1)">\n<iframe src="https://evil.example"></iframe>\n<style>body{display:none}</style>\n</div>\n\n# after'],
    ['a link with markup in its title', '[t](https://x.example "<img src=x onerror=alert(1)>")\n\n# h'],
    ['markup in a table cell', '| a |\n|---|\n| <svg onload=alert(1)> |'],
    ['markup in a heading and a code fence language', '# <b onmouseover=alert(1)>x</b>\n\n```"><img src=x onerror=alert(1)>\ncode\n```'],
    ['a bidi override in a link', '[safe.example](https://evil.example/\u202Eexe.txt)\n\n# h'],
  ];
  for (const [name, text] of payloads) {
    it(`renders ${name} inert`, () => {
      expectInert(html(text));
    });
  }

  it('shows raw HTML as the source text it is', () => {
    const out = html('<script>alert(1)</script>\n\n# h');
    expect(out).toContain('&lt;script>alert(1)&lt;/script>');
    expect(html('[x](https://evil.example/\u202Eexe.txt)\n\n# h')).not.toContain('\u202E');
  });

  it('renders deeply nested quotes and lists without overflowing, as text past the depth bound', () => {
    const quotes = `${'> '.repeat(3000)}deep\n\n# h`;
    expectInert(html(quotes));
    const lists = Array.from({ length: 200 }, (_, i) => `${'  '.repeat(i)}- level ${i}`).join('\n');
    const out = html(lists);
    expectInert(out);
    expect(out).toContain('level 199');
    expect((out.match(/<ul/g) ?? []).length).toBeLessThan(20);
    const emphasis = `${'*'.repeat(5000)}x${'*'.repeat(5000)}\n\n# h`;
    expectInert(html(emphasis));
  });

  it('renders a huge result in part, with "show all" on demand', () => {
    const huge = '# Big\n\n' + Array.from({ length: 20_000 }, (_, i) => `- item ${i}`).join('\n');
    const t = Date.now();
    const first = parseMarkdown(huge);
    expect(Date.now() - t).toBeLessThan(3000);
    expect(first.cut).toBe(true);
    expect(html(huge)).toContain('data-testid="markdown-show-all"');
    const all = parseMarkdown(huge, ALL_CHARS, 1_000_000);
    expect(all.cut).toBe(false);
    expect(JSON.stringify(all.nodes)).toContain('item 19999');
    expect(huge.length).toBeGreaterThan(FIRST_CHARS);
  });
});
