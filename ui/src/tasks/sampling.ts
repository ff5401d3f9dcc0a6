/**
 * A sampling request (`sampling/createMessage`) as the review form shows it: read from the
 * question's `request.params` as the server sent them, without trusting their shape. Every text is
 * kept as text (the component renders it inert); images and audio are named with their type and
 * size, never decoded or loaded. What the engine decided of the request (`asks.sampling`) gives
 * the figures.
 */
import { call } from '../lib/ipc';
import type { SampledReply } from '../lib/bindings/SampledReply';
import type { JsonValue, Question } from '../lib/types';

export type Block =
  | { kind: 'text'; text: string }
  | { kind: 'media'; label: string }
  | { kind: 'tool'; label: string };

export type Review = {
  systemPrompt: string | null;
  maxTokens: number;
  messages: { role: string; blocks: Block[] }[];
  hints: string[];
  /** Said when the server asked to see more than its own messages; Taskdeck sends none of it. */
  context: string | null;
  tools: string[];
};

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function block(b: unknown): Block {
  if (!isObj(b)) return { kind: 'text', text: '' };
  const data = typeof b.data === 'string' ? b.data : '';
  const mime = typeof b.mimeType === 'string' ? b.mimeType : 'unknown type';
  switch (b.type) {
    case 'text':
      return { kind: 'text', text: typeof b.text === 'string' ? b.text : '' };
    case 'image':
    case 'audio':
      // Base64: about three bytes for every four characters.
      return { kind: 'media', label: `${b.type} (${mime}, ${Math.floor((data.length * 3) / 4)} bytes)` };
    case 'tool_use':
      return { kind: 'tool', label: `asks to call the tool ${typeof b.name === 'string' ? b.name : '?'}` };
    case 'tool_result':
      return { kind: 'tool', label: `result of the tool call ${typeof b.toolUseId === 'string' ? b.toolUseId : '?'}` };
    default:
      return { kind: 'tool', label: `content of an unknown kind (${typeof b.type === 'string' ? b.type : '?'})` };
  }
}

/** The review of a sampling question, or `null` for any other question. */
export function samplingReview(q: Question): Review | null {
  if (q.asks.kind !== 'sampling') return null;
  const a = q.asks.sampling;
  const params = isObj(q.request.params) ? q.request.params : {};
  const messages = (Array.isArray(params.messages) ? params.messages : []).map((m) => {
    const msg = isObj(m) ? m : {};
    const content = Array.isArray(msg.content) ? msg.content : [msg.content];
    return { role: typeof msg.role === 'string' ? msg.role : '?', blocks: content.map(block) };
  });
  const context =
    a.include_context === 'thisServer' || a.include_context === 'allServers'
      ? 'The server asked to see other context too; Taskdeck sends none of it: only your reply goes back.'
      : null;
  return { systemPrompt: a.system_prompt, maxTokens: a.max_tokens, messages, hints: a.model_hints, context, tools: a.tools };
}

/** What the reply box sends: the shorthand the engine reads as the assistant's message. */
export function replyContent(text: string): { text: string } | null {
  return text.trim() === '' ? null : { text };
}

/** A model's completion as the shell returns it (`sample_task`). */
export type Sampled = Pick<SampledReply, 'model' | 'text' | 'result'>;

/**
 * What "Return to the server" sends: the model's whole reply when the user left its text as the
 * model wrote it (its model name and stop reason go back with it), else the text in the box as
 * the user's own reply. `null` when there is nothing to send.
 */
export function returnedContent(text: string, completion: Sampled | null): { [key: string]: JsonValue } | null {
  const r = completion?.result;
  if (completion && text === completion.text && typeof r === 'object' && r !== null && !Array.isArray(r)) return r;
  return replyContent(text);
}

/** Why the model cannot be asked, or `null` when it can: said beside the disabled button. */
export function modelUnavailable(model: string | null | undefined): string | null {
  if (model === undefined) return 'Looking for a configured model…';
  if (model === null) return 'No model is configured: add one in Settings → Models, or write the reply yourself.';
  return null;
}

export const samplingModel = (params: JsonValue) => call('sampling_model', { params });
/** `key`: the question's key, so that of several pending questions the one shown is sampled. */
export const sampleTask = (id: string, key: string) => call('sample_task', { id, key });
