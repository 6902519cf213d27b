/**
 * The answer room against the context (src/pipeline/answer-room.ts): the least prompt, the least
 * context for a room, and the refusal's advice, on numbers worked out by hand.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkAnswerRoomSize, CLI_OPTION_NAMES, ContextSizeError, minContextSize, minPromptTokens, QuestionTooLongError } from '../../src/pipeline/ask';

// the tiny model's prompt: a 186-token head, 19 tokens of template around the question, 'q' 2 tokens
const parts = { head: 186, questionTemplate: 19, question: 2 };
const EXTENSION = { contextSize: 'the reposnap.contextSize setting', maxTokens: 'reposnap.maxTokens', answerRoom: 'the reposnap.maxTokens setting' };

test('the least prompt: the head and the question, the question at most half of it', () => {
  assert.equal(minPromptTokens(186, 21), 207); // 186 + 21 > 2 · 21
  assert.equal(minPromptTokens(10, 100), 200); // 2 · 100 > 10 + 100
});

test('the least context: twice a given room at most, or the default room (an eighth, at most 256) at that size', () => {
  assert.equal(minContextSize(207, 60), 267); // 60 + 207 > 2 · 60
  assert.equal(minContextSize(10, 1500), 3000); // 2 · 1500 > 1500 + 10
  // 236 − floor(236 / 8) = 236 − 29 = 207; 235 − 29 = 206 < 207
  assert.equal(minContextSize(207, undefined), 236);
  // above 2048 the default room is 256: 3256 − 256 = 3000; 3255 − 256 = 2999
  assert.equal(minContextSize(3000, undefined), 3256);
  assert.equal(minContextSize(0, 0), 0);
});

test('a room that fits passes: half of the context, or what the head and the question leave', () => {
  checkAnswerRoomSize(2048, 1024, parts, CLI_OPTION_NAMES);
  checkAnswerRoomSize(236, undefined, parts, CLI_OPTION_NAMES);
  checkAnswerRoomSize(266, 59, parts, CLI_OPTION_NAMES); // 266 − 59 = 207
  checkAnswerRoomSize(207, 0, parts, CLI_OPTION_NAMES);
});

test('more than half of the context: the flag, the limit, a lower room or a larger context', () => {
  assert.throws(
    () => checkAnswerRoomSize(2048, 1025, parts, CLI_OPTION_NAMES),
    (e: Error) =>
      e instanceof ContextSizeError &&
      e.message === '--answer-room 1025 is more than half of the context (2048 tokens; the prompt keeps the other half): lower --answer-room to 1024 or less, or raise --context-size to 2050 or more',
  );
});

test('a context below the head: only a larger context is advised, for the default room at that size', () => {
  for (const [room, what, least] of [
    [undefined, "the answer's room (8 tokens by default, --answer-room)", 236],
    [0, '--answer-room 0', 207],
    [60, '--answer-room 60', 267],
  ] as const) {
    assert.throws(
      () => checkAnswerRoomSize(64, room, parts, CLI_OPTION_NAMES),
      (e: Error) =>
        e instanceof ContextSizeError &&
        e.message ===
          `the context (64 tokens) is too small for this model's prompt: the prompt needs at least 207 tokens (its head, the system prompt and chat template, takes 186; the question 21), besides ${what}: raise --context-size to ${least} or more`,
    );
  }
});

test("a room that leaves the head but not this question: the question's error, with the room that fits and the context that does", () => {
  // 235: the default room is 29, 235 − 29 = 206 < 207; a one-token question (20) would fit
  assert.throws(
    () => checkAnswerRoomSize(235, undefined, parts, CLI_OPTION_NAMES),
    (e: Error) =>
      e instanceof QuestionTooLongError &&
      e.message ===
        "the question takes 21 tokens but the room for a question is 20 tokens (half of the context less the answer's room, --answer-room; the repository keeps the other half): shorten it, lower --answer-room to 28 or less, or raise --context-size to 236 or more",
  );
  // a long question, the extension's names: no room fits it at 2048 (it needs 2 · 1919 = 3838 of
  // the prompt), 256 + 3838 = 4094 does; the room for a question is min((2048 − 256) / 2, 2048 − 256 − 186) = 896
  assert.throws(
    () => checkAnswerRoomSize(2048, 256, { ...parts, question: 1900 }, EXTENSION),
    (e: Error) =>
      e instanceof QuestionTooLongError &&
      e.message ===
        "the question takes 1919 tokens but the room for a question is 896 tokens (half of the context less the answer's room, the reposnap.maxTokens setting; the repository keeps the other half): shorten it, or raise the reposnap.contextSize setting to 4094 or more",
  );
});

test('a room that leaves less than the head and the question, within half of the context', () => {
  assert.throws(
    () => checkAnswerRoomSize(400, 194, parts, CLI_OPTION_NAMES),
    (e: Error) => e instanceof QuestionTooLongError && e.message.endsWith('shorten it, lower --answer-room to 193 or less, or raise --context-size to 401 or more'),
  );
  // a 500-token head and a 10-token question at 600: a room of 90 leaves 510 = 500 + 10, one of 100 leaves 500
  const big = { head: 500, questionTemplate: 9, question: 1 };
  checkAnswerRoomSize(600, 90, big, CLI_OPTION_NAMES);
  assert.throws(
    () => checkAnswerRoomSize(600, 100, big, CLI_OPTION_NAMES),
    (e: Error) =>
      e instanceof ContextSizeError &&
      e.message ===
        '--answer-room 100 leaves 500 of the context\'s 600 tokens, and the prompt needs at least 510 tokens (its head, the system prompt and chat template, takes 500; the question 10): lower --answer-room to 90 or less, or raise --context-size to 610 or more',
  );
});
