/** Several pending questions answered at once (`answer_task_all`, over `Engine::answer_all`). */
import { call } from '../lib/ipc';
import type { ElicitAnswer } from '../lib/types';

/** One answer per pending question, in the order of the task's `questions`. */
export type Answers = ElicitAnswer[];

export const answerTaskAll = (id: string, answers: Answers) => call('answer_task_all', { id, answers });

/**
 * Which question an `invalid_answer` is about: the engine names it by its place first (`/1/service`
 * is the second question's `service`). `null` when the path names none.
 */
export function failedQuestion(path: string | null | undefined): number | null {
  const m = /^\/(\d+)(?:\/|$)/.exec(path ?? '');
  return m ? Number(m[1]) : null;
}
