import { describe, expect, it } from 'vitest';
import { Submission, newKey } from './submission';

/** Stands in for the engine's rule: one task per idempotency key, however often it is asked. */
function engineLike() {
  const tasks = new Map<string, string>();
  let started = 0;
  const run = async (key: string) => {
    await new Promise((r) => setTimeout(r, 5));
    let id = tasks.get(key);
    if (id === undefined) {
      started += 1;
      id = `task-${started}`;
      tasks.set(key, id);
    }
    return id;
  };
  return { run, started: () => started, keys: () => [...tasks.keys()] };
}

describe('a run form submission', () => {
  it('makes one task of a double submit', async () => {
    const engine = engineLike();
    const submission = new Submission<string>();
    const keysSent: string[] = [];
    const start = (key: string) => {
      keysSent.push(key);
      return engine.run(key);
    };
    const [a, b] = await Promise.all([submission.submit(start), submission.submit(start)]);
    expect(a).toBe(b);
    expect(engine.started()).toBe(1);
    expect(keysSent).toHaveLength(1);
  });

  it('retries a failed submit under the same key, and starts a new run after a started one', async () => {
    const engine = engineLike();
    const submission = new Submission<string>();
    const first = submission.key;
    await expect(submission.submit(() => Promise.reject(new Error('server_timeout')))).rejects.toThrow();
    expect(submission.key).toBe(first);
    const sent: string[] = [];
    const id = await submission.submit((key) => (sent.push(key), engine.run(key)));
    expect(sent).toEqual([first]);
    expect(submission.key).not.toBe(first);
    const next = await submission.submit((key) => engine.run(key));
    expect(next).not.toBe(id);
    expect(engine.started()).toBe(2);
  });

  it('makes keys that do not repeat', () => {
    const keys = new Set(Array.from({ length: 1000 }, newKey));
    expect(keys.size).toBe(1000);
    for (const k of keys) expect(k).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});
