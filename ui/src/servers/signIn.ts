/**
 * Signing in to a remote server from the window, as plain logic the components only show: the
 * flow (find out where the sign-in goes, ask the user naming the server and the authorization
 * server's host, then the browser), its cancelling at either step, and the words for a server's
 * auth state. The commands are passed in, so the tests drive the flow without the app.
 */
import { call, errorText } from '../lib/ipc';
import { inertText } from '../lib/text';
import type { SignInPrompt } from '../lib/bindings/SignInPrompt';
import type { SignInResult } from '../lib/bindings/SignInResult';
import type { SignInState } from '../lib/bindings/SignInState';
import type { TaskSummary } from '../lib/types';

export type { SignInPrompt, SignInResult, SignInState };

/** The commands the flow calls (the app's, or a test's). */
export type SignInCommands = {
  findOut: (server: string) => Promise<SignInPrompt | null>;
  go: (server: string) => Promise<SignInResult>;
  cancel: (server: string) => Promise<boolean>;
};

export const appCommands: SignInCommands = {
  findOut: (server) => call('find_out_sign_in', { server }),
  go: (server) => call('continue_sign_in', { server }),
  cancel: (server) => call('cancel_sign_in', { server }),
};

export const signInState = (server: string) => call('sign_in_state', { server });
export const signOut = (server: string) => call('sign_out', { server });

/** Where one sign-in is. */
export type Step =
  | { at: 'idle' }
  | { at: 'finding' }
  /** Asking the user: nothing is open yet. */
  | { at: 'asking'; prompt: SignInPrompt }
  /** The browser is open; the redirect is awaited. */
  | { at: 'browser'; prompt: SignInPrompt }
  | { at: 'done'; ok: boolean; message: string };

/**
 * One server's sign-in, step by step. `onchange` is told every step; the component shows it.
 * A step that arrives after a cancel is dropped, so a late answer cannot bring back a closed prompt.
 */
export class SignInFlow {
  step: Step = { at: 'idle' };
  private generation = 0;

  constructor(
    readonly server: string,
    private readonly commands: SignInCommands,
    private readonly onchange: (step: Step) => void = () => {},
  ) {}

  private set(step: Step, generation: number) {
    if (generation !== this.generation) return;
    this.step = step;
    this.onchange(step);
  }

  /** Finds out where the sign-in goes, and asks (or says none is needed). */
  async start(): Promise<void> {
    const g = ++this.generation;
    this.set({ at: 'finding' }, g);
    try {
      const prompt = await this.commands.findOut(this.server);
      if (prompt === null) this.set({ at: 'done', ok: true, message: `${inertText(this.server, 60)} needs no sign-in.` }, g);
      else this.set({ at: 'asking', prompt }, g);
    } catch (e) {
      this.set({ at: 'done', ok: false, message: errorText(e) }, g);
    }
  }

  /** The user agreed: the browser opens, and the redirect is awaited. */
  async proceed(): Promise<void> {
    if (this.step.at !== 'asking') return;
    const g = this.generation;
    const prompt = this.step.prompt;
    this.set({ at: 'browser', prompt }, g);
    try {
      const result = await this.commands.go(this.server);
      this.set({ at: 'done', ok: result.end === 'signed_in' || result.end === 'not_needed', message: endMessage(result) }, g);
    } catch (e) {
      this.set({ at: 'done', ok: false, message: errorText(e) }, g);
    }
  }

  /** Gives up at any step: the prompt closes, or the engine stops waiting for the browser. */
  async cancel(): Promise<void> {
    const was = this.step.at;
    const g = ++this.generation;
    this.set(was === 'idle' || was === 'done' ? { at: 'idle' } : { at: 'done', ok: false, message: 'The sign-in was cancelled.' }, g);
    if (was === 'asking' || was === 'browser' || was === 'finding') {
      try {
        await this.commands.cancel(this.server);
      } catch {
        // Nothing was under way any more.
      }
    }
  }

  dismiss() {
    this.set({ at: 'idle' }, ++this.generation);
  }
}

function endMessage(r: SignInResult): string {
  if (r.message) return inertText(r.message, 600);
  switch (r.end) {
    case 'signed_in':
      return 'Signed in.';
    case 'not_needed':
      return 'No sign-in is needed.';
    case 'cancelled':
      return 'The sign-in was cancelled.';
    case 'failed':
      return 'The sign-in did not succeed.';
  }
}

/** The question asked before the browser opens: the server, and where the user's password goes. */
export function promptText(p: SignInPrompt): string {
  const server = inertText(p.server, 60);
  const host = inertText(p.authorization_host, 200);
  const why = p.step_up ? ' It asks for more permissions than the current sign-in has.' : '';
  return `Sign in to ${server}? Your browser will open ${host}, the authorization server ${server} uses.${why}`;
}

/** `in 5 min`, `in 2 h`, `expired`: when a sign-in's access token ends, from `now` (ms). */
export function expiresText(expiresAt: number | null, now: number): string | null {
  if (expiresAt === null) return null;
  const s = Math.round(expiresAt - now / 1000);
  if (s <= 0) return 'expired';
  if (s < 90) return `in ${s} s`;
  if (s < 90 * 60) return `in ${Math.round(s / 60)} min`;
  if (s < 48 * 3600) return `in ${Math.round(s / 3600)} h`;
  return `in ${Math.round(s / 86400)} days`;
}

/** One line for a server's auth state. */
export function authText(s: SignInState, now: number): string {
  switch (s.auth) {
    case 'sign_in_needed':
      return 'Sign-in needed';
    case 'none':
      return 'Not signed in';
    case 'signed_in': {
      const who = s.account ? ` as ${inertText(s.account, 120)}` : '';
      const by = s.issuer_host ? ` (${inertText(s.issuer_host, 200)})` : '';
      const ends = expiresText(s.expires_at, now);
      const expiry = ends === null ? '' : ends === 'expired' ? (s.renewable ? ' · renews on next use' : ' · expired') : ` · expires ${ends}`;
      return `Signed in${who}${by}${expiry}`;
    }
  }
}

/** The engine's status message for a task whose server wants a sign-in begins with this. */
export const SIGN_IN_NEEDED = 'Sign-in needed';

/** The task has not ended and waits for a sign-in to its server. */
export function waitsForSignIn(task: Pick<TaskSummary, 'status' | 'status_message'>): boolean {
  const over = task.status === 'completed' || task.status === 'failed' || task.status === 'cancelled';
  return !over && (task.status_message ?? '').startsWith(SIGN_IN_NEEDED);
}
