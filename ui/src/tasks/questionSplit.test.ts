import { render } from 'svelte/server';
import { describe, expect, it } from 'vitest';
import type { FormModel, Question } from '../lib/types';
import QuestionForm from './QuestionForm.svelte';
import TaskDetail from './TaskDetail.svelte';
import { task } from '../lib/testing';

// The demo server's diagnose_incident question, as the engine stores it.
const form: FormModel = {
  status: 'ready',
  fields: [
    {
      name: 'service',
      title: 'Affected service',
      description: null,
      required: true,
      default: null,
      kind: { type: 'choice', options: [{ value: 'checkout', label: 'Checkout API' }, { value: 'auth', label: null }] },
    },
  ],
};
const question: Question = {
  key: 'q1',
  task_id: 't1',
  message: 'Which service is affected?',
  asks: { kind: 'form', schema: { type: 'object' }, form },
  request: { method: 'elicitation/create', params: { message: 'Which service is affected?' } },
};
const asking = task({ id: 't1', status: 'input_required', question: { key: 'q1', message: 'Which service is affected?', kind: 'form' } });

describe('the question: a summary in the list, the whole question in the detail', () => {
  it('the form is built from the whole question, not from the summary', () => {
    const { body } = render(QuestionForm, { props: { task: asking, question } });
    expect(body).toContain('name="service"');
    expect(body).toContain('Checkout API');
    expect(body).toContain('Which service is affected?');
  });

  it('the detail pane waits for the record rather than building a form from the summary', () => {
    const { body } = render(TaskDetail, { props: { task: asking, onclose: () => {}, onrerun: () => {} } });
    expect(body).toContain('data-testid="question-loading"');
    expect(body).not.toContain('data-testid="question-form"');
  });
});
