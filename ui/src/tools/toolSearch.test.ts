import { describe, expect, it } from 'vitest';
import { task } from '../lib/testing';
import type { ToolInfo } from '../lib/types';
import { queryWords, recentTools, supportWords, toolMatches } from './toolSearch';

const tool = (name: string, title: string | null, description: string | null): ToolInfo => ({ name, title, description, task_support: null, input_schema: {} });
const tools = [
  tool('generate_report', 'Generate a report', 'Writes a Markdown report on a topic, in four stages.'),
  tool('diagnose_incident', null, 'Diagnoses an incident on one service.'),
  tool('notes_search', 'Search notes', null),
];
const find = (q: string) => tools.filter((t) => toolMatches(t, queryWords(q))).map((t) => t.name);

describe('finding a tool', () => {
  it('matches names, titles and descriptions, in any case', () => {
    expect(find('REPORT')).toEqual(['generate_report']);
    expect(find('search')).toEqual(['notes_search']);
    expect(find('incident')).toEqual(['diagnose_incident']);
    expect(find('markdown')).toEqual(['generate_report']);
  });

  it('needs every word of the query to match', () => {
    expect(find('report stages')).toEqual(['generate_report']);
    expect(find('report service')).toEqual([]);
    expect(find('  ')).toEqual(tools.map((t) => t.name));
  });

  it('says in words whether a tool runs as a task', () => {
    expect(supportWords('required').short).toBe('runs as a task');
    expect(supportWords('optional').short).toBe('can run as a task');
    expect(supportWords('forbidden').short).toBe('never a task');
    expect(supportWords(null).short).toBe('server decides');
  });
});

describe('the tools run most recently', () => {
  it('are the newest tasks’ tools, each once, newest first', () => {
    const tasks = [
      task({ id: '4', tool: 'count', server: 'demo', created_at: '2026-01-04T00:00:00Z' }),
      task({ id: '3', tool: 'generate_report', server: 'demo' }),
      task({ id: '2', tool: 'count', server: 'demo' }),
      task({ id: '1', tool: 'count', server: 'other' }),
    ];
    expect(recentTools(tasks).map((r) => `${r.tool}@${r.server}`)).toEqual(['count@demo', 'generate_report@demo', 'count@other']);
    expect(recentTools(tasks, 1)).toEqual([{ server: 'demo', tool: 'count', at: '2026-01-04T00:00:00Z' }]);
    expect(recentTools([])).toEqual([]);
  });
});
