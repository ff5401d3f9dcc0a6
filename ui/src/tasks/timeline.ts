/**
 * A task's events in plain words: one sentence per event, said the way a user would, never the
 * engine's vocabulary. One wording function per `EventKind`; `timeline` folds consecutive identical
 * steps into one line with a count. The server's own status word and the raw event stay with each
 * line for the disclosure beside it.
 */
import { inertText } from '../lib/text';
import { formatElapsed } from '../lib/time';
import type { EventKind, JsonValue, Question, TaskEvent } from '../lib/types';

export type Tone = 'plain' | 'step' | 'ask' | 'done' | 'bad';

/** What one event says. `values` are an answer's fields, titled, with the labels that were chosen. */
export type Said = { text: string; tone: Tone; values?: { field: string; value: string }[] };

export type Line = Said & {
  /** The first event of the line (a folded line stands for `count` events). */
  id: number;
  at: string;
  /** Since the task started. */
  elapsedMs: number;
  count: number;
  serverStatus: string | null;
  events: TaskEvent[];
};

type Obj = { [k: string]: JsonValue | undefined };
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | null => (typeof v === 'string' && v.trim() !== '' ? v : null);
const data = (e: TaskEvent): Obj => (isObj(e.data) ? e.data : {});
const t = (v: string | null, max = 300) => inertText(v ?? '', max);

/** What the task's earlier events tell the wording of a later one: the questions asked so far. */
export type Context = {
  /** Question params by key, from the `question` events before this one. */
  asked: Map<string, JsonValue>;
  /** The whole pending question from the record, when it is here (its form model labels answers). */
  pending: Question | null;
  startedAt: number;
};

const WORDING: Record<EventKind, (e: TaskEvent, ctx: Context) => Said> = {
  created: (e) => {
    const mode = data(e).mode;
    return { text: mode === 'call' ? 'Started as a plain call' : 'Started as a task', tone: 'plain' };
  },
  remote: (e) => {
    const d = data(e);
    if (str(d.remote_task_id)) return { text: 'The server accepted the task', tone: 'plain' };
    return { text: 'Sent to the server', tone: 'plain' };
  },
  status: (e) => {
    const message = str(data(e).message);
    if (message) return { text: t(message), tone: 'step' };
    if (e.to_status === 'input_required') return { text: 'Waiting for your answer', tone: 'ask' };
    if (e.from_status === 'input_required') return { text: 'Working again', tone: 'step' };
    return { text: 'Working', tone: 'step' };
  },
  question: (e) => {
    const d = data(e);
    const request = isObj(d.request) ? d.request : {};
    const params = request.params;
    // The question's own words first; the event's `message` is the task's status message then.
    const message = (isObj(params) ? str(params.message) : null) ?? str(d.message);
    const method = str(request.method) ?? '';
    if (method !== 'elicitation/create') {
      if (method === 'sampling/createMessage') return { text: 'Asked for a reply from a language model', tone: 'ask' };
      if (method === 'roots/list') return { text: 'Asked which folders it may use', tone: 'ask' };
      return { text: `Asked something Taskdeck cannot answer (${t(method, 80)})`, tone: 'ask' };
    }
    if (params === null || params === undefined) {
      return { text: message ? `Asked a question too large to show: ${t(message)}` : 'Asked a question too large to show', tone: 'ask' };
    }
    if (isObj(params) && params.mode === 'url') {
      const host = hostOf(str(params.url));
      const where = host ? `to open a page on ${host}` : 'to open a web page';
      return { text: message ? `Asked you ${where}: ${t(message)}` : `Asked you ${where}`, tone: 'ask' };
    }
    return { text: message ? `Asked: ${t(message)}` : 'Asked a question', tone: 'ask' };
  },
  answer: (e, ctx) => {
    const d = data(e);
    const response = isObj(d.response) ? d.response : {};
    const action = response.action;
    if (action === 'decline') return { text: 'You declined to answer', tone: 'plain' };
    if (action === 'cancel') return { text: 'You dismissed the question', tone: 'plain' };
    const key = str(d.key) ?? '';
    const params = ctx.asked.get(key);
    if (isObj(params) && params.mode === 'url') return { text: 'You agreed to open the page', tone: 'plain' };
    const content = isObj(response.content) ? response.content : {};
    const values = answerValues(content, schemaOf(params), ctx.pending?.key === key ? ctx.pending : null);
    if (values.length === 0) return { text: 'You answered', tone: 'plain' };
    // The sentence names what was chosen; the titled values are listed under it.
    const main = values.filter((v) => v.value !== '').slice(0, 3).map((v) => v.value);
    return { text: `You answered: ${main.join(', ')}`, tone: 'plain', values };
  },
  result: (e, ctx) => {
    const d = data(e);
    const took = formatElapsed(Date.parse(e.at) - ctx.startedAt);
    if (d.is_error === true || e.to_status === 'failed') return { text: `The tool reported an error after ${took}`, tone: 'bad' };
    return { text: `Completed in ${took}`, tone: 'done' };
  },
  failed: (e) => {
    const error = isObj(data(e).error) ? (data(e).error as Obj) : {};
    return { text: failure(str(error.reason), str(error.message)), tone: 'bad' };
  },
  cancelled: (e) => {
    const reason = str(data(e).reason);
    if (reason === null || reason === 'cancelled by the user') return { text: 'Cancelled by you', tone: 'bad' };
    if (reason.startsWith('cancelled here')) return { text: `Cancelled by you; ${t(reason.replace(/^cancelled here[;:]?\s*/, ''))}`, tone: 'bad' };
    if (reason === 'cancelled') return { text: 'Cancelled by the server', tone: 'bad' };
    return { text: `Cancelled by the server: ${t(reason)}`, tone: 'bad' };
  },
  reclaimed: (e) => {
    const reason = str(data(e).reason);
    return { text: reason ? `Taskdeck gave up on the task: ${t(reason)}` : 'Taskdeck gave up on the task', tone: 'bad' };
  },
  dropped: (e) => {
    const n = data(e).dropped;
    const count = typeof n === 'number' ? n : null;
    return {
      text: count === null ? 'Some earlier steps were not kept' : `${count.toLocaleString()} earlier ${count === 1 ? 'step was' : 'steps were'} not kept (the log keeps 1,000)`,
      tone: 'plain',
    };
  },
};

const REASONS: Record<string, string> = {
  INTERRUPTED: 'Interrupted: Taskdeck stopped before the server confirmed the task, so it cannot be continued',
  UNKNOWN_TO_SERVER: 'Failed: the server no longer knows this task',
  NO_RESULT: 'Failed: the server said the task ended but sent no result',
  SERVER_UNAVAILABLE: 'Failed: the server could not be reached',
  RESPONSE_TOO_LARGE: 'Failed: the server’s answer was too large to read',
  SERVER_UNREADABLE: 'Failed: the server’s answers could not be read',
  SERVER_UNRESPONSIVE: 'Failed: the server stopped answering',
};

function failure(reason: string | null, message: string | null): string {
  if (reason === 'tool result has isError: true') return message ? `Failed: the tool reported an error: ${t(message)}` : 'Failed: the tool reported an error';
  if (reason !== null && REASONS[reason]) return REASONS[reason]!;
  return message ? `Failed: ${t(message)}` : 'Failed';
}

function hostOf(url: string | null): string | null {
  if (!url) return null;
  try {
    return inertText(new URL(url).hostname, 120) || null;
  } catch {
    return null;
  }
}

function schemaOf(params: JsonValue | undefined): Obj {
  if (!isObj(params)) return {};
  const schema = params.requestedSchema;
  return isObj(schema) && isObj(schema.properties) ? schema.properties : {};
}

/**
 * An answer's values by field title with the chosen option's label: from the record's form model
 * when it is the pending question, else from the question's schema as it was asked.
 */
export function answerValues(content: Obj, properties: Obj, pending: Question | null): { field: string; value: string }[] {
  const form = pending?.asks.kind === 'form' && pending.asks.form.status === 'ready' ? pending.asks.form.fields : null;
  return Object.entries(content).map(([name, value]) => {
    const field = form?.find((f) => f.name === name);
    const prop = isObj(properties[name]) ? (properties[name] as Obj) : {};
    const title = field?.title ?? str(prop.title) ?? name;
    const label = (v: JsonValue | undefined): string => {
      if (field && (field.kind.type === 'choice' || field.kind.type === 'multi')) {
        const option = field.kind.options.find((o) => JSON.stringify(o.value) === JSON.stringify(v));
        if (option?.label) return option.label;
      }
      const options = Array.isArray(prop.oneOf) ? prop.oneOf : Array.isArray(prop.anyOf) ? prop.anyOf : null;
      const titled = options?.find((o) => isObj(o) && JSON.stringify(o.const) === JSON.stringify(v));
      if (isObj(titled) && str(titled.title)) return titled.title as string;
      if (Array.isArray(prop.enum) && Array.isArray(prop.enumNames)) {
        const i = prop.enum.findIndex((o) => JSON.stringify(o) === JSON.stringify(v));
        if (i >= 0 && typeof prop.enumNames[i] === 'string') return prop.enumNames[i] as string;
      }
      if (typeof v === 'boolean') return v ? 'yes' : 'no';
      if (typeof v === 'string') return v;
      if (Array.isArray(v)) return v.map(label).join(', ');
      return JSON.stringify(v) ?? '';
    };
    const itemsProp = isObj(prop.items) ? (prop.items as Obj) : null;
    let shown: string;
    if (Array.isArray(value) && itemsProp && !form) {
      shown = value.map((v) => answerValues({ v }, { v: itemsProp as JsonValue }, null)[0]!.value).join(', ');
    } else {
      shown = label(value);
    }
    return { field: inertText(title, 120), value: inertText(shown, 300) };
  });
}

/** One event in words, given what came before it. */
export function describe(e: TaskEvent, ctx: Context): Said {
  const wording = WORDING[e.kind];
  return wording ? wording(e, ctx) : { text: `Something happened (${t(String(e.kind), 40)})`, tone: 'plain' };
}

/** The server's own word for the status, when the event carries one. */
export function serverStatus(e: TaskEvent): string | null {
  return str(data(e).server_status);
}

/** The timeline: events in order, in words, consecutive identical steps folded into one line. */
export function timeline(events: readonly TaskEvent[], createdAt: string, pending: Question | null = null): Line[] {
  const first = events.find((e) => e.kind === 'created')?.at ?? createdAt;
  const startedAt = Date.parse(first);
  const ctx: Context = { asked: new Map(), pending, startedAt };
  const lines: Line[] = [];
  for (const e of events) {
    const said = describe(e, ctx);
    if (e.kind === 'question') {
      const d = data(e);
      const request = isObj(d.request) ? d.request : {};
      ctx.asked.set(str(d.key) ?? '', request.params ?? null);
    }
    const last = lines[lines.length - 1];
    if (last && e.kind === 'status' && last.events[0]!.kind === 'status' && last.text === said.text) {
      last.count += 1;
      last.events.push(e);
      continue;
    }
    lines.push({ ...said, id: e.id, at: e.at, elapsedMs: Date.parse(e.at) - startedAt, count: 1, serverStatus: serverStatus(e), events: [e] });
  }
  return lines;
}
