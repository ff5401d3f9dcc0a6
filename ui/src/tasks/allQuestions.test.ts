import { describe, expect, it } from 'vitest';
import { failedQuestion } from './allQuestions';

describe('answering several questions at once', () => {
  it('names the question an invalid answer is about by its place', () => {
    expect(failedQuestion('/1/service')).toBe(1);
    expect(failedQuestion('/0')).toBe(0);
    expect(failedQuestion('')).toBeNull();
    expect(failedQuestion(null)).toBeNull();
    expect(failedQuestion('/service')).toBeNull();
  });
});
