/**
 * Markdown a server sent, read into a small tree the view renders with components, never as HTML.
 * `marked`'s lexer does the parsing (its output is only tokens; its HTML renderer is never called);
 * this module turns the tokens into `MdNode`s, within bounds, with everything that could act on its
 * own made into text: raw HTML is its source text, an image is its alt text and address, a link is
 * its text and its address shown beside it (see `MdNode` `link`).
 */
import { Lexer, type Token, type Tokens } from 'marked';
import { inertText } from '../lib/text';

export type Align = 'left' | 'center' | 'right' | null;

export type MdNode =
  | { k: 'heading'; level: number; c: MdNode[] }
  | { k: 'paragraph'; c: MdNode[] }
  | { k: 'list'; ordered: boolean; start: number; items: MdItem[] }
  | { k: 'code'; lang: string | null; text: string }
  | { k: 'quote'; c: MdNode[] }
  | { k: 'table'; align: Align[]; head: MdNode[][]; rows: MdNode[][][] }
  | { k: 'rule' }
  | { k: 'text'; text: string }
  /** Raw HTML (a block or a tag), shown as the source it is. */
  | { k: 'html'; text: string; block: boolean }
  | { k: 'strong' | 'emphasis' | 'delete' | 'span'; c: MdNode[] }
  | { k: 'inline-code'; text: string }
  /**
   * A link's text, and its address as text beside it: the app's `open_url` opens only what the
   * engine offers for a task (a URL question, a result's `resource_link`), so a link inside text
   * is never something to click; what a user sees is where it would go.
   */
  | { k: 'link'; url: string; c: MdNode[]; same: boolean }
  /** Not loaded: only a result's own image content is an image. */
  | { k: 'image'; alt: string; url: string }
  | { k: 'break' };

export type MdItem = { checked: boolean | null; c: MdNode[] };

export type MdDoc = {
  nodes: MdNode[];
  /** Some of the text or of the tree was left out (see the bounds); "show all" reads all of it. */
  cut: boolean;
  /** The tree could not be read (nested too deep for the parser): shown as plain text instead. */
  failed: boolean;
};

/** What the first rendering reads of a text: a huge result must not freeze the page. */
export const FIRST_CHARS = 50_000;
export const FIRST_NODES = 3_000;
/** "Show all" still stops here; past it the raw text and the export have the rest. */
export const ALL_CHARS = 2_000_000;
export const ALL_NODES = 200_000;
/** Containers (lists, quotes, emphasis) deeper than this are shown as their text. */
export const MAX_DEPTH = 12;

const MARKDOWN_TYPES = new Set(['text/markdown', 'text/x-markdown', 'text/md']);

/**
 * Whether a text is Markdown. A declared type decides (`text/markdown` yes, any other no);
 * otherwise the text must show a block sign of Markdown (a heading, a fence, a table, a list of two
 * items, a quote) or two inline ones (emphasis, a link, inline code). Plain prose, logs and JSON stay
 * plain: a lone `*` or `#` is not enough.
 */
export function isMarkdown(text: string, mimeType: string | null = null): boolean {
  if (mimeType) return MARKDOWN_TYPES.has(mimeType.toLowerCase().split(';')[0]!.trim());
  const head = text.slice(0, 20_000);
  if (/^\s*[[{]/.test(head) && /[\]}]\s*$/.test(text.slice(-100))) return false;
  if (/^#{1,6}[ \t]+\S/m.test(head)) return true;
  if (/^(```|~~~)/m.test(head)) return true;
  if (/^\|?[ \t]*:?-{3,}:?[ \t]*\|/m.test(head) && /^\|.*\|[ \t]*$/m.test(head)) return true;
  const items = head.match(/^[ \t]*([-*+]|\d{1,9}[.)])[ \t]+\S/gm)?.length ?? 0;
  if (items >= 2) return true;
  if (/^>[ \t]?\S/m.test(head) && /^>.*\n>/m.test(head)) return true;
  const inline =
    (head.match(/\*\*[^*\n]+\*\*|__[^_\n]+__/g)?.length ?? 0) +
    (head.match(/\[[^\]\n]+\]\([^)\s]+\)/g)?.length ?? 0) +
    (head.match(/`[^`\n]+`/g)?.length ?? 0) +
    (head.match(/(^|\s)_[^_\s][^_\n]*_(?=\s|$|[.,;:!?])/gm)?.length ?? 0);
  return inline >= 2;
}

/** Reads `text` into a tree, at most `maxChars` of it (cut at a line) and `maxNodes` nodes. */
export function parseMarkdown(text: string, maxChars = FIRST_CHARS, maxNodes = FIRST_NODES): MdDoc {
  let source = text;
  let cut = false;
  if (source.length > maxChars) {
    const line = source.lastIndexOf('\n', maxChars);
    source = source.slice(0, line > maxChars / 2 ? line : maxChars);
    cut = true;
  }
  let tokens: Token[];
  try {
    tokens = new Lexer({ gfm: true, breaks: false }).lex(source);
  } catch {
    // The lexer recurses per nesting level; thousands of `>` overflow its stack.
    return { nodes: [{ k: 'code', lang: null, text: source }], cut, failed: true };
  }
  const budget = { left: maxNodes, cut: false };
  const nodes = blocks(tokens, 0, budget);
  return { nodes, cut: cut || budget.cut, failed: false };
}

type Budget = { left: number; cut: boolean };

function spend(b: Budget): boolean {
  if (b.left <= 0) {
    b.cut = true;
    return false;
  }
  b.left -= 1;
  return true;
}

function blocks(tokens: readonly Token[], depth: number, b: Budget): MdNode[] {
  const out: MdNode[] = [];
  for (const t of tokens) {
    if (t.type === 'space' || t.type === 'def') continue;
    if (!spend(b)) break;
    out.push(block(t, depth, b));
  }
  return out;
}

function block(t: Token, depth: number, b: Budget): MdNode {
  if (depth >= MAX_DEPTH) return { k: 'text', text: clean(plain(t)) };
  switch (t.type) {
    case 'heading': {
      const h = t as Tokens.Heading;
      return { k: 'heading', level: Math.min(6, Math.max(1, h.depth)), c: inlines(h.tokens, depth + 1, b) };
    }
    case 'paragraph':
      return { k: 'paragraph', c: inlines((t as Tokens.Paragraph).tokens, depth + 1, b) };
    case 'text': {
      // A tight list item's text: inline tokens under a block token.
      const x = t as Tokens.Text;
      return { k: 'paragraph', c: x.tokens ? inlines(x.tokens, depth + 1, b) : [{ k: 'text', text: clean(decode(x.text)) }] };
    }
    case 'list': {
      const l = t as Tokens.List;
      const items: MdItem[] = [];
      for (const item of l.items) {
        if (!spend(b)) break;
        const rest = item.tokens.filter((x) => x.type !== 'checkbox');
        items.push({ checked: item.task ? item.checked === true : null, c: blocks(rest, depth + 1, b) });
      }
      return { k: 'list', ordered: l.ordered, start: typeof l.start === 'number' ? l.start : 1, items };
    }
    case 'code': {
      const c = t as Tokens.Code;
      return { k: 'code', lang: c.lang ? clean(c.lang).slice(0, 40) || null : null, text: clean(c.text) };
    }
    case 'blockquote':
      return { k: 'quote', c: blocks((t as Tokens.Blockquote).tokens, depth + 1, b) };
    case 'table': {
      const tb = t as Tokens.Table;
      const head = tb.header.map((cell) => inlines(cell.tokens, depth + 1, b));
      const rows: MdNode[][][] = [];
      for (const row of tb.rows) {
        if (!spend(b)) break;
        rows.push(row.map((cell) => inlines(cell.tokens, depth + 1, b)));
      }
      return { k: 'table', align: tb.align, head, rows };
    }
    case 'hr':
      return { k: 'rule' };
    case 'html':
      return { k: 'html', text: clean((t as Tokens.HTML).raw.replace(/\n+$/, '')), block: true };
    default:
      return { k: 'text', text: clean(plain(t)) };
  }
}

function inlines(tokens: readonly Token[] | undefined, depth: number, b: Budget): MdNode[] {
  const out: MdNode[] = [];
  for (const t of tokens ?? []) {
    if (!spend(b)) break;
    out.push(inline(t, depth, b));
  }
  return out;
}

function inline(t: Token, depth: number, b: Budget): MdNode {
  if (depth >= MAX_DEPTH) return { k: 'text', text: clean(plain(t)) };
  switch (t.type) {
    case 'text':
    case 'escape': {
      const x = t as Tokens.Text;
      if (x.tokens && x.tokens.length > 0) return { k: 'span', c: inlines(x.tokens, depth + 1, b) };
      return { k: 'text', text: clean(t.type === 'escape' ? x.text : decode(x.text)) };
    }
    case 'strong':
      return { k: 'strong', c: inlines((t as Tokens.Strong).tokens, depth + 1, b) };
    case 'em':
      return { k: 'emphasis', c: inlines((t as Tokens.Em).tokens, depth + 1, b) };
    case 'del':
      return { k: 'delete', c: inlines((t as Tokens.Del).tokens, depth + 1, b) };
    case 'codespan':
      return { k: 'inline-code', text: clean((t as Tokens.Codespan).text) };
    case 'br':
      return { k: 'break' };
    case 'link': {
      const l = t as Tokens.Link;
      const url = clean(decode(l.href));
      const c = inlines(l.tokens, depth + 1, b);
      return { k: 'link', url, c, same: l.autolink === true || plain(l) === l.href || decode(l.text) === url };
    }
    case 'image': {
      const i = t as Tokens.Image;
      return { k: 'image', alt: clean(decode(i.text)), url: clean(decode(i.href)) };
    }
    case 'html':
      return { k: 'html', text: clean((t as Tokens.Tag).raw), block: false };
    default:
      return { k: 'text', text: clean(plain(t)) };
  }
}

/** A token's words, without recursion (a token nested thousands deep must not overflow the stack). */
export function plain(t: Token): string {
  const out: string[] = [];
  const stack: Token[] = [t];
  let length = 0;
  while (stack.length > 0 && length < FIRST_CHARS) {
    const x = stack.pop()!;
    const children: Token[] = x.type === 'list' ? (x as Tokens.List).items : x.type === 'table' ? [] : ((x as Tokens.Generic).tokens ?? []);
    if (children.length > 0) {
      // Popped after the children: a block's words end with a line break.
      if (x.type === 'list_item' || x.type === 'paragraph' || x.type === 'heading') stack.push({ type: 'text', raw: '\n', text: '\n' });
      for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]!);
      continue;
    }
    const text = x.type === 'table' || x.type === 'html' ? x.raw : typeof (x as Tokens.Generic).text === 'string' ? (x as Tokens.Generic).text : x.raw;
    out.push(text);
    length += text.length;
  }
  return out.join('').trim();
}

const NAMED: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0', copy: '©', reg: '®', hellip: '…', mdash: '—', ndash: '–' };

/** Character references as the text they stand for (the lexer leaves them for an HTML renderer). */
export function decode(text: string): string {
  if (!text.includes('&')) return text;
  return text.replace(/&(#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[a-zA-Z]{2,8});/g, (whole, ref: string) => {
    if (ref[0] === '#') {
      const code = ref[1] === 'x' || ref[1] === 'X' ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10);
      return code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff) ? String.fromCodePoint(code) : '\ufffd';
    }
    return NAMED[ref] ?? whole;
  });
}

/** Server text with its hidden characters removed (`inertText`), never cut here: the bounds above cut. */
function clean(text: string): string {
  return inertText(text, Number.MAX_SAFE_INTEGER);
}
