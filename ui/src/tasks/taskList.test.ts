import { describe, expect, it } from 'vitest';
import { elapsedMs, filterTasks, progressPercent, taskMessage } from './taskList';
import { task } from '../lib/testing';

const at = (s: number) => new Date(Date.UTC(2025, 0, 1, 0, 0, s)).toISOString();

describe('filtering and searching tasks', () => {
  const list = [
    task({ id: 'aaa-1', tool: 'generate_report', status: 'working', status_message: 'Drafting the summary' }),
    task({ id: 'bbb-2', tool: 'diagnose_incident', status: 'input_required', question: { key: 'q', message: null, kind: 'roots' } }),
    task({ id: 'ccc-3', tool: 'count', server: 'other', status: 'completed' }),
    task({ id: 'ddd-4', tool: 'flaky_export', status: 'failed', progress: { progress: 60, total: 100, message: 'Exporting rows' } }),
  ];
  const ids = (f: Parameters<typeof filterTasks>[1]) => filterTasks(list, f).map((t) => t.id);
  const none = { status: 'all' as const, server: null, query: '' };

  it('filters by status, running meaning not finished', () => {
    expect(ids({ ...none, status: 'active' })).toEqual(['aaa-1', 'bbb-2']);
    expect(ids({ ...none, status: 'needs_input' })).toEqual(['bbb-2']);
    expect(ids({ ...none, status: 'failed' })).toEqual(['ddd-4']);
  });

  it('filters by server', () => {
    expect(ids({ ...none, server: 'other' })).toEqual(['ccc-3']);
  });

  it('searches tool, server, messages and id, case-insensitively, every word', () => {
    expect(ids({ ...none, query: 'DRAFTING' })).toEqual(['aaa-1']);
    expect(ids({ ...none, query: 'exporting' })).toEqual(['ddd-4']);
    expect(ids({ ...none, query: 'ccc' })).toEqual(['ccc-3']);
    expect(ids({ ...none, query: 'demo incident' })).toEqual(['bbb-2']);
    expect(ids({ ...none, query: 'nothing-like-this' })).toEqual([]);
  });

  it('returns the list itself when nothing filters', () => {
    expect(filterTasks(list, none)).toBe(list);
  });
});

describe('what a row shows', () => {
  it('counts a running task up to now and a finished one to its end', () => {
    const running = task({ id: 'r', created_at: at(0) });
    expect(elapsedMs(running, Date.parse(at(30)))).toBe(30_000);
    const done = task({ id: 'd', created_at: at(0), updated_at: at(12), status: 'completed' });
    expect(elapsedMs(done, Date.parse(at(500)))).toBe(12_000);
  });

  it('has a determinate bar only when the total is known', () => {
    expect(progressPercent(task({ id: 'p', progress: { progress: 3, total: 4, message: null } }))).toBe(75);
    expect(progressPercent(task({ id: 'p', progress: { progress: 3, total: null, message: null } }))).toBeNull();
    expect(progressPercent(task({ id: 'p', progress: { progress: 9, total: 4, message: null } }))).toBe(100);
    expect(progressPercent(task({ id: 'p' }))).toBeNull();
  });

  it('shows the error message for a failed task, else the status message', () => {
    expect(taskMessage(task({ id: 'f', status: 'failed', error: { code: null, message: 'boom', reason: null } }))).toBe('boom');
    expect(taskMessage(task({ id: 'w', progress: { progress: 1, total: null, message: 'reading' } }))).toBe('reading');
  });

  it('drops the last status message of a completed task, which no longer describes it', () => {
    expect(taskMessage(task({ id: 'c', status: 'completed', status_message: 'Waiting for you to pick' }))).toBe('');
    expect(taskMessage(task({ id: 'x', status: 'cancelled', status_message: 'Cancelled by the user' }))).toBe('Cancelled by the user');
  });
});
