/**
 * Turns anything a server sent (names, descriptions, status messages, errors) into plain text for
 * display. Svelte's `{value}` already renders text, never markup; this also removes what could make
 * that text lie about itself: control characters, and bidirectional overrides that can reorder a
 * name on screen (`evil\u202Etxt.exe`). Long values are cut so one server cannot flood the layout.
 *
 * Server-provided content goes through here and is rendered with `{…}`, never with Svelte's raw-HTML
 * tag: `inert.test.ts` fails the build if that tag, or an innerHTML assignment, appears in the UI.
 */
export function inertText(value: unknown, maxLength = 500): string {
  let text: string;
  if (typeof value === 'string') text = value;
  else if (value === null || value === undefined) text = '';
  else if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') text = String(value);
  else {
    try {
      text = JSON.stringify(value) ?? '';
    } catch {
      text = '';
    }
  }

  // C0/C1 controls except tab and newline, and the Unicode bidi embedding/override/isolate marks.
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  const cleaned = text.replace(/[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u202A-\u202E\u2066-\u2069]/g, '');
  const chars = Array.from(cleaned);
  return chars.length > maxLength ? `${chars.slice(0, maxLength - 1).join('')}…` : cleaned;
}
