/**
 * JSON Schema → form model, and form values → JSON with validation. `buildForm` reads a tool's
 * `inputSchema` for the run form; the question form does not read its schema here but gets its
 * fields from the engine's form model (`questionForm.ts`). Both render through `FieldInput` and
 * validate through `collect`.
 *
 * What a form cannot express honestly ($ref, combinators over objects, tuples, maps) is reported
 * as unsupported with the path, so the caller falls back to the JSON editor instead of guessing.
 */
import type { JsonValue } from '../lib/types';

export type Option = { value: JsonValue; label: string };
export type StringFormat = 'email' | 'uri' | 'date' | 'date-time';

type Base = {
  /** Property name: also the input's `name` attribute end-to-end tests look for. */
  name: string;
  /** Dotted path from the root (`address.city`, `tags.2`), the key of this field's error. */
  path: string;
  title: string;
  description: string | null;
  required: boolean;
  default: JsonValue | undefined;
};

export type TextField = Base & {
  kind: 'text';
  format: StringFormat | null;
  minLength?: number;
  maxLength?: number;
  // No `pattern`: a server's regular expression is never compiled in the page, where a crafted one
  // could stall it (backtracking). The engine checks it, in linear time, on submit, and its refusal
  // names the field.
};
export type NumberField = Base & {
  kind: 'number' | 'integer';
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
};
export type BooleanField = Base & { kind: 'boolean' };
export type SelectField = Base & { kind: 'select'; options: Option[] };
export type MultiSelectField = Base & { kind: 'multiselect'; options: Option[]; minItems?: number; maxItems?: number };
export type ListField = Base & { kind: 'list'; item: Field; minItems?: number; maxItems?: number };
export type ObjectField = Base & { kind: 'object'; fields: Field[] };
export type Field = TextField | NumberField | BooleanField | SelectField | MultiSelectField | ListField | ObjectField;

/**
 * What the inputs hold. Text and numbers stay as typed (so "12a" can be reported rather than lost),
 * a select holds its option's index as a string ('' for none), a multi-select the chosen indices.
 */
export type FormValue = string | boolean | number[] | FormValue[] | FormValues;
export type FormValues = { [name: string]: FormValue };

export type FormModel = { ok: true; fields: Field[] } | { ok: false; reason: string };

type Schema = { [key: string]: JsonValue | undefined };

const isObj = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const str = (v: unknown): string | null => (typeof v === 'string' && v.trim() !== '' ? v : null);

class Unsupported extends Error {}

/** Builds the form for an object schema. Nested objects go at most `maxDepth` levels deep. */
export function buildForm(schema: JsonValue | undefined, maxDepth = 4): FormModel {
  try {
    if (schema === undefined || schema === null || (isObj(schema) && Object.keys(schema).length === 0)) {
      return { ok: true, fields: [] };
    }
    if (!isObj(schema)) throw new Unsupported('the schema is not an object');
    return { ok: true, fields: objectFields(schema, '', maxDepth) };
  } catch (e) {
    if (e instanceof Unsupported) return { ok: false, reason: e.message };
    throw e;
  }
}

function objectFields(schema: Schema, prefix: string, depth: number): Field[] {
  const where = prefix || 'the arguments';
  if (schema.type !== undefined && schema.type !== 'object') throw new Unsupported(`${where}: not an object`);
  for (const k of ['$ref', 'oneOf', 'anyOf', 'allOf', 'not', 'if', 'patternProperties'] as const) {
    if (schema[k] !== undefined) throw new Unsupported(`${where}: uses ${k}`);
  }
  if (isObj(schema.additionalProperties) && !isObj(schema.properties)) {
    throw new Unsupported(`${where}: free-form keys`);
  }
  const props = isObj(schema.properties) ? schema.properties : {};
  const required = new Set(Array.isArray(schema.required) ? schema.required.filter((r) => typeof r === 'string') : []);
  return Object.entries(props).map(([name, sub]) => {
    const path = prefix ? `${prefix}.${name}` : name;
    if (!isObj(sub)) throw new Unsupported(`${path}: not a schema`);
    return field(sub, name, path, required.has(name), depth);
  });
}

/** The single non-null type of a property, accepting the common `["string", "null"]` spelling. */
function typeOf(schema: Schema, path: string): string | undefined {
  const t = schema.type;
  if (t === undefined || typeof t === 'string') return t;
  if (Array.isArray(t)) {
    const real = t.filter((x) => x !== 'null');
    if (real.length === 1 && typeof real[0] === 'string') return real[0];
  }
  throw new Unsupported(`${path}: more than one type`);
}

/** `oneOf`/`anyOf` lists of `{const, title}`: the titled-enum spelling. Null when it is not one. */
function constOptions(list: JsonValue | undefined): Option[] | null {
  if (!Array.isArray(list) || list.length === 0) return null;
  const out: Option[] = [];
  for (const item of list) {
    if (!isObj(item) || !('const' in item)) return null;
    const value = item.const as JsonValue;
    out.push({ value, label: str(item.title) ?? String(value) });
  }
  return out;
}

function enumOptions(schema: Schema): Option[] | null {
  if (Array.isArray(schema.enum)) {
    const names = Array.isArray(schema.enumNames) && schema.enumNames.length === schema.enum.length ? schema.enumNames : null;
    return schema.enum.map((value, i) => ({ value, label: str(names?.[i]) ?? String(value) }));
  }
  return constOptions(schema.oneOf) ?? constOptions(schema.anyOf);
}

function field(schema: Schema, name: string, path: string, required: boolean, depth: number): Field {
  if (schema.$ref !== undefined || schema.allOf !== undefined) throw new Unsupported(`${path}: uses ${schema.$ref !== undefined ? '$ref' : 'allOf'}`);
  const base: Base = {
    name,
    path,
    title: str(schema.title) ?? name,
    description: str(schema.description),
    required,
    default: schema.default,
  };
  const type = typeOf(schema, path);
  const options = enumOptions(schema);
  if (options && type !== 'array') return { ...base, kind: 'select', options };
  if ((schema.oneOf !== undefined || schema.anyOf !== undefined) && !options) throw new Unsupported(`${path}: a choice between schemas`);

  switch (type) {
    case 'string': {
      const f = str(schema.format);
      const format = f === 'email' || f === 'uri' || f === 'date' || f === 'date-time' ? f : null;
      return { ...base, kind: 'text', format, minLength: num(schema.minLength), maxLength: num(schema.maxLength) };
    }
    case 'number':
    case 'integer':
      return {
        ...base,
        kind: type,
        minimum: num(schema.minimum),
        maximum: num(schema.maximum),
        exclusiveMinimum: num(schema.exclusiveMinimum),
        exclusiveMaximum: num(schema.exclusiveMaximum),
      };
    case 'boolean':
      return { ...base, kind: 'boolean' };
    case 'array': {
      const items = schema.items;
      if (!isObj(items)) throw new Unsupported(`${path}: an array without one item schema`);
      const limits = { minItems: num(schema.minItems), maxItems: num(schema.maxItems) };
      const choices = enumOptions(items);
      if (choices) return { ...base, kind: 'multiselect', options: choices, ...limits };
      const itemType = typeOf(items, `${path}[]`);
      if (itemType === 'object' || itemType === 'array' || itemType === undefined) throw new Unsupported(`${path}: an array of ${itemType ?? 'anything'}`);
      return { ...base, kind: 'list', item: field(items, name, `${path}[]`, true, depth), ...limits };
    }
    case 'object':
      if (depth <= 1) throw new Unsupported(`${path}: nested too deep for a form`);
      return { ...base, kind: 'object', fields: objectFields(schema, path, depth - 1) };
    default:
      throw new Unsupported(`${path}: ${type === undefined ? 'no type' : `type ${type}`}`);
  }
}

const sameJson = (a: JsonValue | undefined, b: JsonValue | undefined) => JSON.stringify(a) === JSON.stringify(b);

/** `<input type="datetime-local">` wants local `YYYY-MM-DDTHH:MM`; the schema speaks RFC 3339. */
export function toLocalDateTime(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}

/**
 * The inputs' starting values: from `from` when given (switching from the JSON editor back to the
 * form: what the JSON leaves out stays empty), else from the schema's defaults.
 */
export function initialValues(fields: readonly Field[], from?: JsonValue): FormValues {
  const source = from === undefined ? undefined : isObj(from) ? from : {};
  const out: FormValues = {};
  for (const f of fields) out[f.name] = initialValue(f, source === undefined ? f.default : source[f.name], source !== undefined);
  return out;
}

function initialValue(f: Field, v: JsonValue | undefined, explicit: boolean): FormValue {
  switch (f.kind) {
    case 'text':
      if (typeof v !== 'string') return '';
      return f.format === 'date-time' ? toLocalDateTime(v) : v;
    case 'number':
    case 'integer':
      return typeof v === 'number' ? String(v) : '';
    case 'boolean':
      return v === true;
    case 'select': {
      const i = f.options.findIndex((o) => sameJson(o.value, v));
      return i < 0 ? '' : String(i);
    }
    case 'multiselect':
      return Array.isArray(v) ? f.options.flatMap((o, i) => (v.some((x) => sameJson(x, o.value)) ? [i] : [])) : [];
    case 'list':
      return Array.isArray(v) ? v.map((x) => initialValue(f.item, x, explicit)) : [];
    case 'object':
      // An object's own default, or explicit values, speak for all its fields; else each field's default.
      return explicit || isObj(v) ? initialValues(f.fields, isObj(v) ? v : {}) : initialValues(f.fields);
  }
}

/** An empty value for one more row of a list. */
export function emptyValue(f: Field): FormValue {
  return initialValue(f, undefined, true);
}

export type Collected = { value: { [key: string]: JsonValue }; errors: Record<string, string> };

/**
 * Reads the form into the JSON to send, checking what the schema asks for. `errors` is keyed by
 * field path; the value is best effort even with errors, so the JSON editor can take it over.
 */
/**
 * The top-level keys of `args` that the form cannot hold as they are (no field for them, or a value
 * the field cannot show, such as text in a number field): switching such JSON to the form would drop
 * or change them.
 */
export function lostInForm(fields: readonly Field[], args: { [key: string]: JsonValue }): string[] {
  const back = collect(fields, initialValues(fields, args)).value;
  return Object.keys(args).filter((k) => !sameJson(back[k], args[k]) && !sameInstant(fields, k, back[k], args[k]));
}

// The form writes a date-time back in its own spelling (UTC, milliseconds); the same instant
// written another way is not a loss.
function sameInstant(fields: readonly Field[], name: string, a: JsonValue | undefined, b: JsonValue | undefined): boolean {
  const f = fields.find((x) => x.name === name);
  if (f?.kind !== 'text' || f.format !== 'date-time' || typeof a !== 'string' || typeof b !== 'string') return false;
  const [ta, tb] = [Date.parse(a), Date.parse(b)];
  return !Number.isNaN(ta) && ta === tb;
}

export function collect(fields: readonly Field[], values: FormValues): Collected {
  const errors: Record<string, string> = {};
  return { value: collectObject(fields, values, errors), errors };
}

function collectObject(fields: readonly Field[], values: FormValues, errors: Record<string, string>): { [key: string]: JsonValue } {
  const out: { [key: string]: JsonValue } = {};
  for (const f of fields) {
    const v = collectField(f, values[f.name], errors);
    if (v !== undefined) out[f.name] = v;
  }
  return out;
}

const chars = (s: string) => Array.from(s).length;
const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

export const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

function formatError(format: StringFormat, s: string): string | null {
  switch (format) {
    case 'email':
      return EMAIL.test(s) ? null : 'Enter an email address, like name@example.com';
    case 'uri':
      try {
        new URL(s);
        return null;
      } catch {
        return 'Enter a full address, like https://example.com';
      }
    case 'date': {
      const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(s);
      const d = m ? new Date(Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!)) : null;
      return d && d.getUTCDate() === +m![3]! && d.getUTCMonth() === +m![2]! - 1 ? null : 'Enter a date as YYYY-MM-DD';
    }
    case 'date-time':
      return Number.isNaN(new Date(s).getTime()) ? 'Enter a date and time' : null;
  }
}

function collectField(f: Field, raw: FormValue | undefined, errors: Record<string, string>): JsonValue | undefined {
  const fail = (message: string) => {
    errors[f.path] = message;
    return undefined;
  };
  switch (f.kind) {
    case 'text': {
      const s = typeof raw === 'string' ? raw : '';
      if (s === '') return f.required ? fail('Required') : undefined;
      if (f.minLength !== undefined && chars(s) < f.minLength) return fail(`At least ${plural(f.minLength, 'character')}`), s;
      if (f.maxLength !== undefined && chars(s) > f.maxLength) return fail(`At most ${plural(f.maxLength, 'character')}`), s;
      if (f.format) {
        const bad = formatError(f.format, s);
        if (bad) return fail(bad), s;
        if (f.format === 'date-time') return new Date(s).toISOString();
      }
      return s;
    }
    case 'number':
    case 'integer': {
      const s = typeof raw === 'string' ? raw.trim() : '';
      if (s === '') return f.required ? fail('Required') : undefined;
      const n = Number(s);
      if (!Number.isFinite(n)) return fail('Enter a number');
      if (f.kind === 'integer' && !Number.isInteger(n)) return fail('Enter a whole number');
      if (f.minimum !== undefined && n < f.minimum) return fail(`At least ${f.minimum}`), n;
      if (f.maximum !== undefined && n > f.maximum) return fail(`At most ${f.maximum}`), n;
      if (f.exclusiveMinimum !== undefined && n <= f.exclusiveMinimum) return fail(`More than ${f.exclusiveMinimum}`), n;
      if (f.exclusiveMaximum !== undefined && n >= f.exclusiveMaximum) return fail(`Less than ${f.exclusiveMaximum}`), n;
      return n;
    }
    case 'boolean':
      return raw === true;
    case 'select': {
      const option = typeof raw === 'string' && raw !== '' ? f.options[Number(raw)] : undefined;
      if (!option) return f.required ? fail('Choose one') : undefined;
      return option.value;
    }
    case 'multiselect': {
      const picked = Array.isArray(raw) ? f.options.filter((_, i) => (raw as unknown[]).includes(i)).map((o) => o.value) : [];
      if (picked.length === 0 && !f.required && !f.minItems) return undefined;
      if (picked.length === 0 && f.required) return fail('Choose at least one'), picked;
      if (f.minItems !== undefined && picked.length < f.minItems) return fail(`Choose at least ${f.minItems}`), picked;
      if (f.maxItems !== undefined && picked.length > f.maxItems) return fail(`Choose at most ${f.maxItems}`), picked;
      return picked;
    }
    case 'list': {
      const rows = Array.isArray(raw) ? (raw as FormValue[]) : [];
      if (rows.length === 0 && !f.required && !f.minItems) return undefined;
      const out: JsonValue[] = [];
      rows.forEach((row, i) => {
        const item = { ...f.item, path: `${f.path}.${i}` } as Field;
        const v = collectField(item, row, errors);
        if (v !== undefined) out.push(v);
      });
      if (f.minItems !== undefined && rows.length < f.minItems) return fail(`Add at least ${plural(f.minItems, 'item')}`), out;
      if (f.maxItems !== undefined && rows.length > f.maxItems) return fail(`At most ${plural(f.maxItems, 'item')}`), out;
      return out;
    }
    case 'object': {
      const inner = typeof raw === 'object' && raw !== null && !Array.isArray(raw) ? raw : {};
      const v = collectObject(f.fields, inner, errors);
      return Object.keys(v).length > 0 || f.required ? v : undefined;
    }
  }
}

/** The JSON editor's text as arguments: it must parse, and be an object. */
export function parseJsonObject(text: string): { ok: true; value: { [key: string]: JsonValue } } | { ok: false; error: string } {
  let value: unknown;
  try {
    value = text.trim() === '' ? {} : JSON.parse(text);
  } catch (e) {
    return { ok: false, error: `Not valid JSON: ${e instanceof Error ? e.message : String(e)}` };
  }
  if (!isObj(value)) return { ok: false, error: 'The arguments must be a JSON object, { … }' };
  return { ok: true, value: value as { [key: string]: JsonValue } };
}
