import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

// Everything Taskdeck shows comes, sooner or later, from a tool server it does not control. Rendering
// any of it as HTML would hand that server the webview, so raw HTML rendering is banned outright.
function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return /\.(svelte|ts)$/.test(name) && !name.endsWith('.test.ts') ? [path] : [];
  });
}

describe('UI sources', () => {
  it('never render raw HTML', () => {
    const root = join(import.meta.dirname, '..');
    const offenders = sources(root).filter((file) => {
      const text = readFileSync(file, 'utf8');
      return text.includes('{@html') || /\.innerHTML\s*=|insertAdjacentHTML|outerHTML\s*=/.test(text);
    });
    expect(offenders).toEqual([]);
  });

  it('take only tokens from the Markdown parser, never its HTML', () => {
    const root = join(import.meta.dirname, '..');
    const offenders = sources(root).filter((file) => {
      const text = readFileSync(file, 'utf8');
      const imports = [...text.matchAll(/import\s*\{([^}]*)\}\s*from\s*'marked'/g)].flatMap((m) => m[1]!.split(',').map((n) => n.trim().replace(/^type\s+/, '')));
      const marked = imports.filter((n) => n !== '' && !['Lexer', 'Token', 'Tokens'].includes(n));
      return marked.length > 0 || /from\s*'marked'/.test(text.replace(/import\s*(type\s*)?\{[^}]*\}\s*from\s*'marked'/g, ''));
    });
    expect(offenders).toEqual([]);
  });
});
