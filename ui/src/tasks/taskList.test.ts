import { describe, expect, it } from 'vitest';
import { elapsedMs, progressPercent, taskMessage } from './taskList';
import { task } from '../lib/testing';

const at = (s: number) => new Date(Date.UTC(2025, 0, 1, 0, 0, s)).toISOString();

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
