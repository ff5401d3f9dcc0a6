const INVISIBLE =
  // eslint-disable-next-line no-control-regex, no-misleading-character-class -- matching these characters is the point
  /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u00AD\u034F\u061C\u115F\u1160\u17B4\u17B5\u180B-\u180F\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u206F\u3164\uFEFF\uFFA0\uFFF9-\uFFFB\u{E0000}-\u{E007F}]/gu;

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

  // C0/C1 controls except tab and newline; bidi marks, embeddings, overrides and isolates; and the
  // invisible characters that make two names look alike (zero-width spaces and joiners, word
  // joiners, invisible operators, the soft hyphen, the byte-order mark, Hangul fillers, tags). An
  // emoji joined by U+200D shows as its parts: a fair price for `ad\u200Bmin` showing as `admin`
  // only when it is.
  const cleaned = text.replace(INVISIBLE, '');
  // A string no longer in UTF-16 units than the limit is no longer in characters either: only a
  // longer one pays for splitting into characters, which every row's name and message would
  // otherwise do each time a scroll hands the row another task.
  if (cleaned.length <= maxLength) return cleaned;
  const chars = Array.from(cleaned);
  return chars.length > maxLength ? `${chars.slice(0, maxLength - 1).join('')}…` : cleaned;
}
