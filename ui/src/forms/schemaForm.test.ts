import { describe, expect, it } from 'vitest';
import type { JsonValue } from '../lib/types';
import { buildForm, collect, emptyValue, initialValues, lostInForm, parseJsonObject, type Field, type FormValues } from './schemaForm';

function fields(schema: JsonValue): Field[] {
  const m = buildForm(schema);
  if (!m.ok) throw new Error(m.reason);
  return m.fields;
}

function run(schema: JsonValue, values: FormValues) {
  return collect(fields(schema), values);
}

// The everything server's trigger-elicitation-request form: every field type the elicitation schema allows.
const everything: JsonValue = {
  type: 'object',
  properties: {
    name: { title: 'String', type: 'string', description: 'Your full, legal name' },
    check: { title: 'Boolean', type: 'boolean', description: 'Agree to the terms and conditions' },
    firstLine: { title: 'String with default', type: 'string', default: 'It was a dark and stormy night.' },
    email: { title: 'String with email format', type: 'string', format: 'email' },
    homepage: { type: 'string', format: 'uri', title: 'String with uri format' },
    birthdate: { title: 'String with date format', type: 'string', format: 'date' },
    integer: { title: 'Integer', type: 'integer', minimum: 1, maximum: 100, default: 42 },
    number: { title: 'Number in range 1-1000', type: 'number', minimum: 0, maximum: 1000, default: 3.14 },
    untitledSingleSelectEnum: { type: 'string', title: 'Untitled', enum: ['Monica', 'Rachel', 'Joey'], default: 'Monica' },
    untitledMultipleSelectEnum: {
      type: 'array',
      title: 'Instruments',
      minItems: 1,
      maxItems: 3,
      items: { type: 'string', enum: ['Guitar', 'Piano', 'Violin', 'Drums', 'Bass'] },
      default: ['Guitar'],
    },
    titledSingleSelectEnum: {
      type: 'string',
      title: 'Hero',
      oneOf: [
        { const: 'hero-1', title: 'Superman' },
        { const: 'hero-2', title: 'Green Lantern' },
      ],
      default: 'hero-1',
    },
    titledMultipleSelectEnum: {
      type: 'array',
      title: 'Fish',
      minItems: 1,
      maxItems: 3,
      items: { anyOf: [{ const: 'fish-1', title: 'Tuna' }, { const: 'fish-2', title: 'Salmon' }, { const: 'fish-3', title: 'Trout' }] },
      default: ['fish-1'],
    },
    legacyTitledEnum: { type: 'string', title: 'Pet', enum: ['pet-1', 'pet-2'], enumNames: ['Cats', 'Dogs'], default: 'pet-1' },
  },
  required: ['name'],
};

describe("the everything server's big form", () => {
  const fs = fields(everything);
  const byName = Object.fromEntries(fs.map((f) => [f.name, f]));

  it('gets one field of the right kind per property, in order, with titles and requiredness', () => {
    expect(fs.map((f) => [f.name, f.kind])).toEqual([
      ['name', 'text'],
      ['check', 'boolean'],
      ['firstLine', 'text'],
      ['email', 'text'],
      ['homepage', 'text'],
      ['birthdate', 'text'],
      ['integer', 'integer'],
      ['number', 'number'],
      ['untitledSingleSelectEnum', 'select'],
      ['untitledMultipleSelectEnum', 'multiselect'],
      ['titledSingleSelectEnum', 'select'],
      ['titledMultipleSelectEnum', 'multiselect'],
      ['legacyTitledEnum', 'select'],
    ]);
    expect(byName.name).toMatchObject({ title: 'String', description: 'Your full, legal name', required: true });
    expect(byName.email).toMatchObject({ format: 'email', required: false });
    expect(byName.birthdate).toMatchObject({ format: 'date' });
  });

  it('labels titled enums by title, legacy enumNames included, and sends the value', () => {
    expect(byName.titledSingleSelectEnum).toMatchObject({ options: [{ value: 'hero-1', label: 'Superman' }, { value: 'hero-2', label: 'Green Lantern' }] });
    expect(byName.legacyTitledEnum).toMatchObject({ options: [{ value: 'pet-1', label: 'Cats' }, { value: 'pet-2', label: 'Dogs' }] });
    expect(byName.titledMultipleSelectEnum).toMatchObject({ options: [{ value: 'fish-1', label: 'Tuna' }, {}, {}], minItems: 1, maxItems: 3 });
    expect(byName.untitledSingleSelectEnum).toMatchObject({ options: [{ value: 'Monica', label: 'Monica' }, {}, {}] });
  });

  it('starts from the defaults', () => {
    const v = initialValues(fs);
    expect(v).toMatchObject({
      name: '',
      check: false,
      firstLine: 'It was a dark and stormy night.',
      integer: '42',
      number: '3.14',
      untitledSingleSelectEnum: '0',
      untitledMultipleSelectEnum: [0],
      titledSingleSelectEnum: '0',
      titledMultipleSelectEnum: [0],
      legacyTitledEnum: '0',
    });
  });

  it('refuses to send without the required name, and says so next to it', () => {
    const out = collect(fs, initialValues(fs));
    expect(out.errors).toEqual({ name: 'Required' });
  });

  it('sends typed values once filled in', () => {
    const v = initialValues(fs);
    v.name = 'Ada';
    v.email = 'ada@example.com';
    v.birthdate = '1815-12-10';
    v.titledMultipleSelectEnum = [2, 0];
    const out = collect(fs, v);
    expect(out.errors).toEqual({});
    expect(out.value).toEqual({
      name: 'Ada',
      check: false,
      firstLine: 'It was a dark and stormy night.',
      email: 'ada@example.com',
      birthdate: '1815-12-10',
      integer: 42,
      number: 3.14,
      untitledSingleSelectEnum: 'Monica',
      untitledMultipleSelectEnum: ['Guitar'],
      titledSingleSelectEnum: 'hero-1',
      titledMultipleSelectEnum: ['fish-1', 'fish-3'],
      legacyTitledEnum: 'pet-1',
    });
  });

  it('checks formats, ranges and item counts', () => {
    const v = initialValues(fs);
    Object.assign(v, {
      name: 'Ada',
      email: 'not-an-email',
      homepage: 'example dot com',
      birthdate: '2024-02-30',
      integer: '101',
      number: '-1',
      untitledMultipleSelectEnum: [0, 1, 2, 3],
      titledMultipleSelectEnum: [],
    });
    expect(Object.keys(collect(fs, v).errors).sort()).toEqual(
      ['birthdate', 'email', 'homepage', 'integer', 'number', 'titledMultipleSelectEnum', 'untitledMultipleSelectEnum'].sort(),
    );
  });
});

describe('single fields', () => {
  it('integers refuse fractions and text', () => {
    const s = { type: 'object', properties: { n: { type: 'integer' } } };
    expect(run(s, { n: '2.5' }).errors).toEqual({ n: 'Enter a whole number' });
    expect(run(s, { n: '12a' }).errors).toEqual({ n: 'Enter a number' });
    expect(run(s, { n: ' 7 ' }).value).toEqual({ n: 7 });
  });

  it('numbers honour exclusive bounds', () => {
    const s = { type: 'object', properties: { x: { type: 'number', exclusiveMinimum: 0, exclusiveMaximum: 1 } } };
    expect(run(s, { x: '0' }).errors.x).toBe('More than 0');
    expect(run(s, { x: '1' }).errors.x).toBe('Less than 1');
    expect(run(s, { x: '0.5' }).value).toEqual({ x: 0.5 });
  });

  it('leaves out empty optional fields instead of sending empty strings', () => {
    const s = { type: 'object', properties: { a: { type: 'string' }, b: { type: 'number' }, c: { type: 'string', enum: ['x'] } } };
    expect(run(s, { a: '', b: '', c: '' })).toEqual({ value: {}, errors: {} });
  });

  it('counts length in characters, not UTF-16 units', () => {
    const s = { type: 'object', properties: { t: { type: 'string', minLength: 2, maxLength: 3 } } };
    expect(run(s, { t: '😀😀' }).errors).toEqual({});
    expect(run(s, { t: 'a' }).errors.t).toBe('At least 2 characters');
    expect(run(s, { t: 'abcd' }).errors.t).toBe('At most 3 characters');
  });

  it('never compiles a server’s pattern: the engine checks it on submit', () => {
    expect(run({ type: 'object', properties: { z: { type: 'string', pattern: '^[0-9]{5}$' } } }, { z: '123' }).errors).toEqual({});
    // A backtracking regex engine takes exponential time on this; the page must not run it at all.
    const started = performance.now();
    const evil = { type: 'object', properties: { z: { type: 'string', pattern: '^(a|a)+$' } } };
    expect(run(evil, { z: `${'a'.repeat(40)}b` }).errors).toEqual({});
    expect(performance.now() - started).toBeLessThan(1000);
    expect(JSON.stringify(fields(evil))).not.toContain('(a|a)');
  });

  it('sends a date-time as RFC 3339 and shows a default in local time', () => {
    const s = { type: 'object', properties: { when: { type: 'string', format: 'date-time', default: '2030-05-06T07:08:00Z' } } };
    const fs = fields(s);
    const v = initialValues(fs);
    expect(v.when).toMatch(/^2030-05-0\dT\d\d:08$/);
    expect(collect(fs, v).value.when).toBe('2030-05-06T07:08:00.000Z');
  });

  it('accepts a nullable type spelled as a list', () => {
    expect(fields({ type: 'object', properties: { s: { type: ['string', 'null'] } } })[0]!.kind).toBe('text');
  });

  it('makes a select of a numeric enum, sending the number', () => {
    const s = { type: 'object', properties: { level: { type: 'integer', enum: [1, 2, 3] } }, required: ['level'] };
    expect(run(s, { level: '' }).errors.level).toBe('Choose one');
    expect(run(s, { level: '2' }).value).toEqual({ level: 3 });
  });

  it('a required boolean left unticked is false, not missing', () => {
    expect(run({ type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] }, { ok: false }).value).toEqual({ ok: false });
  });
});

describe('run forms: lists and nested objects', () => {
  const schema = {
    type: 'object',
    properties: {
      tags: { type: 'array', items: { type: 'string', minLength: 1 }, maxItems: 2 },
      sizes: { type: 'array', items: { type: 'integer' }, minItems: 1 },
      address: {
        type: 'object',
        properties: { city: { type: 'string' }, zip: { type: 'string', pattern: '^[0-9]+$' } },
        required: ['city'],
      },
    },
    required: ['address'],
  };

  it('builds list and fieldset fields with dotted paths', () => {
    const fs = fields(schema);
    expect(fs.map((f) => f.kind)).toEqual(['list', 'list', 'object']);
    const address = fs[2]!;
    expect(address.kind === 'object' && address.fields.map((f) => f.path)).toEqual(['address.city', 'address.zip']);
  });

  it('collects rows and nested values, reporting each by path', () => {
    const fs = fields(schema);
    const v = initialValues(fs);
    expect(v).toEqual({ tags: [], sizes: [], address: { city: '', zip: '' } });
    v.tags = ['a', '', 'c'];
    v.sizes = ['1', 'x'];
    v.address = { city: '', zip: '12a' };
    const out = collect(fs, v);
    expect(out.errors).toEqual({
      'tags.1': 'Required',
      tags: 'At most 2 items',
      'sizes.1': 'Enter a number',
      'address.city': 'Required',
    });
  });

  it('sends a valid form as plain JSON', () => {
    const fs = fields(schema);
    const out = collect(fs, { tags: ['a'], sizes: ['3', '4'], address: { city: 'Oslo', zip: '' } });
    expect(out).toEqual({ value: { tags: ['a'], sizes: [3, 4], address: { city: 'Oslo' } }, errors: {} });
  });

  it('a new row starts empty', () => {
    const list = fields(schema)[1]!;
    expect(list.kind === 'list' && emptyValue(list.item)).toBe('');
  });

  it('round-trips through the JSON editor: what the JSON leaves out stays empty', () => {
    const fs = fields({ type: 'object', properties: { n: { type: 'integer', default: 5 }, s: { type: 'string' }, l: { type: 'array', items: { type: 'number' } } } });
    const v = initialValues(fs, { s: 'hi', l: [1.5] });
    expect(v).toEqual({ n: '', s: 'hi', l: ['1.5'] });
    expect(collect(fs, v).value).toEqual({ s: 'hi', l: [1.5] });
  });
});

describe('schemas a form cannot express', () => {
  it.each([
    [{ type: 'object', properties: { a: { $ref: '#/$defs/A' } } }, 'a: uses $ref'],
    [{ type: 'object', properties: { a: { oneOf: [{ type: 'string' }, { type: 'number' }] } } }, 'a: a choice between schemas'],
    [{ type: 'object', properties: { a: { type: 'array', items: { type: 'object' } } } }, 'a: an array of object'],
    [{ type: 'object', properties: { a: { type: ['string', 'number'] } } }, 'a: more than one type'],
    [{ type: 'object', anyOf: [{ required: ['a'] }] }, 'the arguments: uses anyOf'],
    [{ type: 'object', additionalProperties: { type: 'string' } }, 'the arguments: free-form keys'],
    [{ type: 'object', properties: { a: {} } }, 'a: no type'],
  ])('%j → JSON editor (%s)', (schema, reason) => {
    expect(buildForm(schema as JsonValue)).toEqual({ ok: false, reason });
  });

  it('an empty schema is a form with no fields', () => {
    expect(buildForm({})).toEqual({ ok: true, fields: [] });
    expect(buildForm({ type: 'object' })).toEqual({ ok: true, fields: [] });
  });

  it('stops nesting at the depth limit', () => {
    const deep = { type: 'object', properties: { a: { type: 'object', properties: { b: { type: 'object', properties: {} } } } } };
    expect(buildForm(deep, 2)).toEqual({ ok: false, reason: 'a.b: nested too deep for a form' });
  });
});

describe('the JSON editor', () => {
  it('accepts an object, and empty text as {}', () => {
    expect(parseJsonObject('{"a": 1}')).toEqual({ ok: true, value: { a: 1 } });
    expect(parseJsonObject('  ')).toEqual({ ok: true, value: {} });
  });
  it('refuses broken JSON and non-objects with a reason', () => {
    expect(parseJsonObject('{a:1}')).toMatchObject({ ok: false, error: expect.stringMatching(/^Not valid JSON/) });
    expect(parseJsonObject('[1]')).toEqual({ ok: false, error: 'The arguments must be a JSON object, { … }' });
  });
});

describe('switching between the JSON editor and the form', () => {
  const fs = () =>
    fields({
      type: 'object',
      properties: {
        n: { type: 'integer' },
        s: { type: 'string' },
        when: { type: 'string', format: 'date-time' },
        colour: { type: 'string', enum: ['red', 'blue'] },
        box: { type: 'object', properties: { w: { type: 'number' } } },
      },
    });

  it('finds nothing to lose in JSON the form can hold', () => {
    expect(lostInForm(fs(), { n: 3, s: 'hi', when: '2026-11-30T10:00:00.000Z', colour: 'blue', box: { w: 1.5 } })).toEqual([]);
    expect(lostInForm(fs(), {})).toEqual([]);
    // The same instant in another spelling is not a loss; another instant would be.
    expect(lostInForm(fs(), { when: '2026-11-30T12:00:00+02:00' })).toEqual([]);
  });

  it('names keys without a field and values a field cannot show', () => {
    expect(lostInForm(fs(), { n: 'three', extra: true, colour: 'green', box: { w: 1, h: 2 }, s: 'kept' })).toEqual([
      'n',
      'extra',
      'colour',
      'box',
    ]);
  });
});
