/**
 * Whether the answer room fits the context: the room kept free for the answer
 * (`AskRequest.answerRoom`, the CLI's `--answer-room`) against the prompt's head and the question,
 * checked before anything is packed, with a message whose numbers can be followed at every size.
 */
import { ContextSizeError, defaultAnswerRoom, type OptionNames } from './context-size';
import { QuestionTooLongError, REPOSITORY_SHARE } from './thread';

/**
 * The prompt's least size besides the answer room [tokens]: its head (system prompt and chat
 * template) and the question with its template, which takes at most half of the prompt (the
 * repository keeps the other half, {@link REPOSITORY_SHARE}): max(2·question, head + question).
 * @param headTokens the prompt's head [tokens].
 * @param questionTokens the question with the template around it [tokens].
 */
export function minPromptTokens(headTokens: number, questionTokens: number): number {
  return Math.max(Math.ceil(questionTokens / (1 - REPOSITORY_SHARE)), headTokens + questionTokens);
}

/**
 * The smallest context size that holds a prompt of `minPrompt` tokens besides the answer room
 * [tokens]: with `answerRoom` given, max(2·answerRoom, answerRoom + minPrompt) (the answer room
 * is at most half of the context); without one, for {@link defaultAnswerRoom} at that size.
 */
export function minContextSize(minPrompt: number, answerRoom: number | undefined): number {
  if (answerRoom !== undefined) return Math.max(2 * answerRoom, answerRoom + minPrompt);
  // C − defaultAnswerRoom(C) never decreases as C grows: the first C that leaves minPrompt
  let c = minPrompt;
  while (c - defaultAnswerRoom(c) < minPrompt) c++;
  return c;
}

/** Sizes of the prompt's parts that {@link checkAnswerRoomSize} weighs [tokens]. */
export interface PromptParts {
  /** The prompt's head (system prompt and chat template). */
  head: number;
  /** The template around the question (before and after it). */
  questionTemplate: number;
  /** The question itself. */
  question: number;
}

/**
 * Refuses an answer room the context cannot hold, before anything is packed: more than half of the
 * context (the prompt keeps the other half), or so much that the rest cannot hold the prompt's head
 * and the question ({@link minPromptTokens}). The message names the option, the limit and what to
 * do, each number one that works for this question: lower the answer room to the largest that fits
 * (said only when one does: at a small enough context none does) or raise the context size to the
 * smallest that fits ({@link minContextSize}: for the room as given, or for the default room at that
 * size when none was given).
 * @param contextSize the context [tokens].
 * @param answerRoom the room the request set, or undefined for {@link defaultAnswerRoom} [tokens].
 * @throws QuestionTooLongError (code `question_too_long`) when a one-token question would fit:
 *   the question's length is the cause, and shortening it is said first; ContextSizeError (code
 *   `context_size`) otherwise.
 */
export function checkAnswerRoomSize(contextSize: number, answerRoom: number | undefined, parts: PromptParts, names: OptionNames): void {
  const room = answerRoom ?? defaultAnswerRoom(contextSize);
  const half = Math.floor(contextSize / 2);
  // the largest answer room that leaves a question of q tokens (with its template) its place; < 0: none does
  const largestRoom = (q: number) => Math.min(half, contextSize - minPromptTokens(parts.head, q));
  const question = parts.questionTemplate + parts.question;
  const fits = largestRoom(question);
  if (room <= fits) return;
  const minPrompt = minPromptTokens(parts.head, question);
  const lower = fits >= 0 ? [`lower ${names.answerRoom} to ${fits} or less`] : [];
  const raise = `raise ${names.contextSize} to ${minContextSize(minPrompt, answerRoom)} or more`;
  if (room <= largestRoom(parts.questionTemplate + 1)) {
    // a one-token question would fit: this one is too long (the room is at most half of the context here)
    const questionRoom = Math.min(Math.floor((contextSize - room) * (1 - REPOSITORY_SHARE)), contextSize - room - parts.head);
    throw new QuestionTooLongError(
      `the question takes ${question} tokens but the room for a question is ${questionRoom} tokens (half of the context less the answer's room, ${names.answerRoom}; the repository keeps the other half): ${anyOf(['shorten it', ...lower, raise])}`,
    );
  }
  const what = answerRoom === undefined ? `the answer's room (${room} tokens by default, ${names.answerRoom})` : `${names.answerRoom} ${room}`;
  const prompt = `the prompt needs at least ${minPrompt} tokens (its head, the system prompt and chat template, takes ${parts.head}; the question ${question})`;
  if (fits < 0) {
    throw new ContextSizeError(`the context (${contextSize} tokens) is too small for this model's prompt: ${prompt}, besides ${what}: ${raise}`);
  }
  const why = room > half ? `is more than half of the context (${contextSize} tokens; the prompt keeps the other half)` : `leaves ${contextSize - room} of the context's ${contextSize} tokens, and ${prompt}`;
  throw new ContextSizeError(`${what} ${why}: ${anyOf([...lower, raise])}`);
}

/** `a`, `a, or b`, `a, b, or c` (the options themselves say "or less", "or more"). */
function anyOf(options: string[]): string {
  return options.length === 1 ? options[0]! : `${options.slice(0, -1).join(', ')}, or ${options.at(-1)}`;
}
