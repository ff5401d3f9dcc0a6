/**
 * Finding a tool among hundreds: the search over names, titles and descriptions, the words for how a
 * tool runs, and the tools run most recently (read from the tasks the engine store already holds).
 */
import type { TaskSummary, TaskSupport, ToolInfo } from '../lib/types';

/** The words of a query, lowercased; every one must be found for a tool to match. */
export function queryWords(query: string): string[] {
  return query.toLowerCase().split(/\s+/).filter((w) => w !== '');
}

/** Whether every word of the query is in the tool's name, title or description (any case). */
export function toolMatches(tool: ToolInfo, words: readonly string[]): boolean {
  if (words.length === 0) return true;
  const hay = `${tool.name}\n${tool.title ?? ''}\n${tool.description ?? ''}`.toLowerCase();
  return words.every((w) => hay.includes(w));
}

/** How a tool runs, in words: whether it runs as a task (a long job followed in the Tasks view). */
export function supportWords(s: TaskSupport | null): { short: string; long: string } {
  switch (s) {
    case 'required':
      return { short: 'runs as a task', long: 'Always runs as a task: it may take long, and you can follow it in Tasks.' };
    case 'optional':
      return { short: 'can run as a task', long: 'May run as a task or answer at once; Taskdeck runs it as a task, so you can follow it in Tasks.' };
    case 'forbidden':
      return { short: 'never a task', long: 'Never runs as a task: it answers at once.' };
    default:
      return { short: 'server decides', long: 'The server decides on each call whether it runs as a task.' };
  }
}

export type RecentTool = { server: string; tool: string; at: string };

/** The tools run most recently, newest first, each once; `tasks` is newest first as the store keeps it. */
export function recentTools(tasks: readonly TaskSummary[], limit = 5, scan = 500): RecentTool[] {
  const seen = new Set<string>();
  const out: RecentTool[] = [];
  for (const t of tasks.slice(0, scan)) {
    const key = JSON.stringify([t.server, t.tool]);
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ server: t.server, tool: t.tool, at: t.created_at });
    if (out.length >= limit) break;
  }
  return out;
}
