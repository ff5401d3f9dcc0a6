/**
 * The question form's fields, from the form model the engine built of the elicitation's
 * `requestedSchema` (`crates/protocol/src/form.rs`, the one reading of that schema, which the CLI
 * prompts from too). They become the fields `schemaForm` renders and checks, so the question form
 * validates against exactly what the model says; this module reads no JSON Schema itself.
 */
import type { FormChoice, FormField, FormModel, JsonValue } from '../lib/types';
import { collect, type Field, type FormModel as Fields, type FormValue, type FormValues, type Option } from './schemaForm';

const opt = <T>(v: T | null): T | undefined => (v === null ? undefined : v);

function option(c: FormChoice): Option {
  return { value: c.value, label: c.label ?? (typeof c.value === 'string' ? c.value : JSON.stringify(c.value)) };
}

function field(f: FormField): Field {
  const base = {
    name: f.name,
    path: f.name,
    title: f.title ?? f.name,
    description: f.description,
    required: f.required,
    default: opt<JsonValue>(f.default),
  };
  const k = f.kind;
  switch (k.type) {
    case 'text':
      return { ...base, kind: 'text', format: k.format, minLength: opt(k.min_length), maxLength: opt(k.max_length) };
    case 'number':
      return {
        ...base,
        kind: k.integer ? 'integer' : 'number',
        minimum: opt(k.minimum),
        maximum: opt(k.maximum),
        exclusiveMinimum: opt(k.exclusive_minimum),
        exclusiveMaximum: opt(k.exclusive_maximum),
      };
    case 'boolean':
      return { ...base, kind: 'boolean' };
    case 'choice':
      return { ...base, kind: 'select', options: k.options.map(option) };
    case 'multi':
      return { ...base, kind: 'multiselect', options: k.options.map(option), minItems: opt(k.min_items), maxItems: opt(k.max_items) };
  }
}

/** The fields to render, or why there is no form (the model's own reason). */
export function questionFields(model: FormModel): Fields {
  return model.status === 'ready' ? { ok: true, fields: model.fields.map(field) } : { ok: false, reason: model.reason };
}

const filled = (v: FormValue | undefined): boolean => (typeof v === 'string' ? v.trim() !== '' : Array.isArray(v) ? v.length > 0 : false);

/**
 * The messages to show while the user types: every field's once they have tried to send, before
 * that only those of fields they have filled in (an empty form is not a page of "Required").
 */
export function liveErrors(fields: readonly Field[], values: FormValues, attempted: boolean): Record<string, string> {
  const { errors } = collect(fields, values);
  return Object.fromEntries(Object.entries(errors).filter(([path]) => attempted || filled(values[path])));
}
