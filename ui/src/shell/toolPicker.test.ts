import { describe, expect, it } from 'vitest';
import type { ToolInfo } from '../lib/types';
import { picks } from './toolPicker';

const tool = (name: string, description: string | null = null, title: string | null = null) =>
  ({ name, title, description, input_schema: {}, task_support: null }) as unknown as ToolInfo;

const lists = [
  { server: 'demo', tools: [tool('generate_report', 'A long report'), tool('diagnose_incident', 'Asks which service'), tool('slow_count')] },
  { server: 'everything', tools: [tool('echo', 'Echoes back'), tool('report_usage', null, 'Usage report')] },
];

describe('the tool picker', () => {
  it('lists every loaded tool, server by server, with no query', () => {
    expect(picks(lists, '').map((p) => `${p.server}/${p.tool.name}`)).toEqual([
      'demo/generate_report',
      'demo/diagnose_incident',
      'demo/slow_count',
      'everything/echo',
      'everything/report_usage',
    ]);
  });

  it('puts names that start with the query first, then names holding it, then descriptions and titles', () => {
    expect(picks(lists, 'report').map((p) => p.tool.name)).toEqual(['report_usage', 'generate_report']);
    expect(picks(lists, 'rep').map((p) => p.tool.name)).toEqual(['report_usage', 'generate_report']);
    expect(picks(lists, 'service').map((p) => p.tool.name)).toEqual(['diagnose_incident']);
  });

  it('needs every word, in any case', () => {
    expect(picks(lists, 'LONG report').map((p) => p.tool.name)).toEqual(['generate_report']);
    expect(picks(lists, 'nothing like this')).toEqual([]);
  });

  it('shows a bounded number', () => {
    const many = [{ server: 's', tools: Array.from({ length: 300 }, (_, i) => tool(`t${i}`)) }];
    expect(picks(many, '', 50)).toHaveLength(50);
  });
});
