import { describe, expect, it } from 'vitest';
import type { FormModel } from '../lib/types';
import { liveErrors, questionFields } from './questionForm';
import { collect, initialValues, type Field } from './schemaForm';

// The form model the engine builds of the demo server's diagnose_incident question plus one field
// of each other kind (as `FormModel::from_schema` serialises it; see crates/protocol/src/form.rs).
const model: FormModel = {
  status: 'ready',
  fields: [
    {
      name: 'service',
      title: 'Affected service',
      description: null,
      required: true,
      default: null,
      kind: {
        type: 'choice',
        options: [
          { value: 'checkout', label: 'Checkout API' },
          { value: 'auth', label: null },
        ],
      },
    },
    { name: 'notes', title: null, description: 'What you saw', required: false, default: null, kind: { type: 'text', format: null, min_length: null, max_length: 5, pattern: null } },
    { name: 'email', title: null, description: null, required: false, default: null, kind: { type: 'text', format: 'email', min_length: null, max_length: null, pattern: null } },
    { name: 'page', title: 'Page someone', description: null, required: false, default: true, kind: { type: 'boolean' } },
    {
      name: 'count',
      title: null,
      description: null,
      required: false,
      default: 42,
      kind: { type: 'number', integer: true, minimum: 1, maximum: 100, exclusive_minimum: null, exclusive_maximum: null },
    },
    {
      name: 'fish',
      title: 'Fish',
      description: null,
      required: false,
      default: ['fish-1'],
      kind: { type: 'multi', options: [{ value: 'fish-1', label: 'Tuna' }, { value: 'fish-2', label: 'Salmon' }], min_items: 1, max_items: 1 },
    },
  ],
};

function fields(m: FormModel = model): Field[] {
  const f = questionFields(m);
  if (!f.ok) throw new Error(f.reason);
  return f.fields;
}

describe('the question form from the engine’s form model', () => {
  it('renders each field kind the model names, with titles, labels and defaults', () => {
    const [service, notes, email, page, count, fish] = fields();
    expect(service).toMatchObject({ kind: 'select', title: 'Affected service', required: true, options: [{ label: 'Checkout API' }, { label: 'auth' }] });
    expect(notes).toMatchObject({ kind: 'text', title: 'notes', description: 'What you saw', maxLength: 5, minLength: undefined });
    expect(email).toMatchObject({ kind: 'text', format: 'email' });
    expect(page).toMatchObject({ kind: 'boolean', default: true });
    expect(count).toMatchObject({ kind: 'integer', minimum: 1, maximum: 100, default: 42 });
    expect(fish).toMatchObject({ kind: 'multiselect', minItems: 1, maxItems: 1 });
    expect(initialValues(fields())).toEqual({ service: '', notes: '', email: '', page: true, count: '42', fish: [0] });
  });

  it('validates against the model: required choice, length, format, integer bounds, item counts', () => {
    const fs = fields();
    const out = collect(fs, { service: '', notes: 'too long', email: 'nope', page: false, count: '101', fish: [0, 1] });
    expect(Object.keys(out.errors).sort()).toEqual(['count', 'email', 'fish', 'notes', 'service']);
    const ok = collect(fs, { service: '0', notes: 'ok', email: 'a@b.example', page: false, count: '7', fish: [1] });
    expect(ok).toEqual({ value: { service: 'checkout', notes: 'ok', email: 'a@b.example', page: false, count: 7, fish: ['fish-2'] }, errors: {} });
  });

  it('shows problems as the user types, but an untouched required field only once they try to send', () => {
    const fs = fields();
    const values = { ...initialValues(fs), email: 'half@' };
    expect(liveErrors(fs, values, false)).toEqual({ email: expect.stringContaining('email') });
    expect(Object.keys(liveErrors(fs, values, true)).sort()).toEqual(['email', 'service']);
    expect(liveErrors(fs, { ...values, email: 'half@way.example' }, false)).toEqual({});
  });

  it('a server’s pattern is not checked in the page: the engine refuses a mismatch on submit', () => {
    const withPattern: FormModel = {
      status: 'ready',
      fields: [
        { name: 'z', title: null, description: null, required: true, default: null, kind: { type: 'text', format: null, min_length: null, max_length: null, pattern: '^(a|a)+$' } },
      ],
    };
    const built = questionFields(withPattern);
    if (!built.ok) throw new Error(built.reason);
    expect(JSON.stringify(built.fields)).not.toContain('(a|a)');
    const started = performance.now();
    expect(collect(built.fields, { z: `${'a'.repeat(40)}b` })).toEqual({ value: { z: `${'a'.repeat(40)}b` }, errors: {} });
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it('a schema the model could not read gives its reason instead of a form', () => {
    expect(questionFields({ status: 'unsupported', reason: 'a: type object' })).toEqual({ ok: false, reason: 'a: type object' });
  });
});
