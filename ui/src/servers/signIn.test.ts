import { describe, expect, it } from 'vitest';
import { authText, expiresText, promptText, SignInFlow, waitsForSignIn, type SignInCommands, type SignInPrompt, type SignInState, type Step } from './signIn';

const prompt: SignInPrompt = { server: 'notes', authorization_host: 'auth.example.org', issuer: 'https://auth.example.org', scopes: ['read'], step_up: false };
const state = (over: Partial<SignInState> = {}): SignInState => ({
  server: 'notes',
  remote: true,
  auth: 'signed_in',
  issuer_host: 'auth.example.org',
  account: null,
  expires_at: null,
  renewable: false,
  scopes: [],
  ...over,
});

/** Commands whose answers the test releases by hand, recording what was called. */
function fake() {
  const calls: string[] = [];
  let release: (r: Awaited<ReturnType<SignInCommands['go']>>) => void = () => {};
  const commands: SignInCommands = {
    findOut: async (s) => {
      calls.push(`findOut ${s}`);
      return prompt;
    },
    go: (s) => {
      calls.push(`go ${s}`);
      return new Promise((r) => (release = r));
    },
    cancel: async (s) => {
      calls.push(`cancel ${s}`);
      return true;
    },
  };
  return { calls, commands, finish: (r: Parameters<typeof release>[0]) => release(r) };
}

describe('signing in from the window', () => {
  it('asks before the browser opens, naming the server and the authorization server’s host', async () => {
    const f = fake();
    const steps: Step['at'][] = [];
    const flow = new SignInFlow('notes', f.commands, (s) => steps.push(s.at));
    await flow.start();
    expect(flow.step).toEqual({ at: 'asking', prompt });
    expect(f.calls).toEqual(['findOut notes']);
    expect(promptText(prompt)).toContain('notes');
    expect(promptText(prompt)).toContain('auth.example.org');

    const going = flow.proceed();
    expect(flow.step.at).toBe('browser');
    f.finish({ end: 'signed_in', message: 'Signed in by https://auth.example.org.', state: state() });
    await going;
    expect(flow.step).toEqual({ at: 'done', ok: true, message: 'Signed in by https://auth.example.org.' });
    expect(steps).toEqual(['finding', 'asking', 'browser', 'done']);
  });

  it('cancelled at the prompt, opens nothing', async () => {
    const f = fake();
    const flow = new SignInFlow('notes', f.commands);
    await flow.start();
    await flow.cancel();
    expect(f.calls).toEqual(['findOut notes', 'cancel notes']);
    expect(flow.step).toEqual({ at: 'done', ok: false, message: 'The sign-in was cancelled.' });
    await flow.proceed();
    expect(f.calls).not.toContain('go notes');
  });

  it('cancelled while the browser is open, says so at once and ignores the late answer', async () => {
    const f = fake();
    const flow = new SignInFlow('notes', f.commands);
    await flow.start();
    const going = flow.proceed();
    await flow.cancel();
    expect(f.calls).toContain('cancel notes');
    expect(flow.step).toEqual({ at: 'done', ok: false, message: 'The sign-in was cancelled.' });
    f.finish({ end: 'cancelled', message: 'The sign-in was cancelled.', state: state({ auth: 'sign_in_needed' }) });
    await going;
    expect(flow.step.at).toBe('done');
  });

  it('a browser closed without signing in ends with the engine’s message, not a hang', async () => {
    const f = fake();
    const flow = new SignInFlow('notes', f.commands);
    await flow.start();
    const going = flow.proceed();
    f.finish({ end: 'failed', message: 'Could not sign in to notes: no sign-in came back within 300s (was the browser closed?)', state: state({ auth: 'sign_in_needed' }) });
    await going;
    expect(flow.step).toMatchObject({ at: 'done', ok: false });
    expect((flow.step as { message: string }).message).toContain('was the browser closed?');
  });

  it('a server that needs none, or that cannot be reached, says so without a prompt', async () => {
    const none = new SignInFlow('local', { ...fake().commands, findOut: async () => null });
    await none.start();
    expect(none.step).toEqual({ at: 'done', ok: true, message: 'local needs no sign-in.' });
    const down = new SignInFlow('notes', {
      ...fake().commands,
      findOut: async () => Promise.reject({ code: 'server', message: 'cannot sign in to notes: could not reach the server' }),
    });
    await down.start();
    expect(down.step).toEqual({ at: 'done', ok: false, message: 'cannot sign in to notes: could not reach the server' });
  });
});

describe('a server’s auth state in words', () => {
  const now = Date.UTC(2026, 11, 1, 12, 0, 0);
  const at = (s: number) => now / 1000 + s;
  it('names who, where and until when, where known', () => {
    expect(authText(state({ account: 'ada@example.org', expires_at: at(600) }), now)).toBe('Signed in as ada@example.org (auth.example.org) · expires in 10 min');
    expect(authText(state(), now)).toBe('Signed in (auth.example.org)');
    expect(authText(state({ expires_at: at(-5), renewable: true }), now)).toBe('Signed in (auth.example.org) · renews on next use');
    expect(authText(state({ expires_at: at(-5) }), now)).toBe('Signed in (auth.example.org) · expired');
    expect(authText(state({ auth: 'sign_in_needed' }), now)).toBe('Sign-in needed');
    expect(authText(state({ auth: 'none', issuer_host: null }), now)).toBe('Not signed in');
  });

  it('keeps a server’s text inert', () => {
    const shown = authText(state({ account: 'a\u202Eb\u0007c' }), now);
    expect(shown).not.toContain('\u202E');
    expect(shown).not.toContain('\u0007');
  });

  it('counts down the expiry in a readable unit', () => {
    expect(expiresText(null, now)).toBeNull();
    expect(expiresText(at(30), now)).toBe('in 30 s');
    expect(expiresText(at(7200), now)).toBe('in 2 h');
    expect(expiresText(at(5 * 86400), now)).toBe('in 5 days');
    expect(expiresText(at(0), now)).toBe('expired');
  });
});

describe('a task that waits for a sign-in', () => {
  it('is one not over whose status message says so', () => {
    const msg = 'Sign-in needed: run `taskdeck-cli login notes` (or sign in from the app)';
    expect(waitsForSignIn({ status: 'working', status_message: msg })).toBe(true);
    expect(waitsForSignIn({ status: 'input_required', status_message: msg })).toBe(true);
    expect(waitsForSignIn({ status: 'completed', status_message: msg })).toBe(false);
    expect(waitsForSignIn({ status: 'working', status_message: 'Working on it' })).toBe(false);
    expect(waitsForSignIn({ status: 'working', status_message: null })).toBe(false);
  });
});
