/**
 * The tool picker behind `N`: every tool of every server whose list is loaded, filtered by the words
 * typed (as the Tools view's search matches them), best first: a name that starts with the query,
 * then a name that holds it, then a title or description that does.
 */
import type { ToolInfo } from '../lib/types';
import { queryWords, toolMatches } from '../tools/toolSearch';

export type Pick = { server: string; tool: ToolInfo };

/** How many picks are shown at once; the rest are found by typing more. */
export const PICKS_SHOWN = 50;

export function picks(lists: readonly { server: string; tools: readonly ToolInfo[] }[], query: string, limit = PICKS_SHOWN): Pick[] {
  const words = queryWords(query);
  const first = words[0] ?? '';
  const rank = (t: ToolInfo) => {
    const name = t.name.toLowerCase();
    if (first === '') return 0;
    if (name.startsWith(first)) return 0;
    if (name.includes(first)) return 1;
    return 2;
  };
  const all: (Pick & { rank: number; at: number })[] = [];
  for (const { server, tools } of lists) {
    for (const tool of tools) {
      if (toolMatches(tool, words)) all.push({ server, tool, rank: rank(tool), at: all.length });
    }
  }
  all.sort((a, b) => a.rank - b.rank || a.at - b.at);
  return all.slice(0, limit).map(({ server, tool }) => ({ server, tool }));
}
