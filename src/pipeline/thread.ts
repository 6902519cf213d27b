/**
 * A question's thread in the prompt (moved out of pipeline/ask.ts, behaviour unchanged): the
 * room the thread and the question have beside the repository, the thread's earlier turns, and
 * which of them fit with the question, as tokens.
 */
import type { CacheStore, ThreadTurn } from '../cache/store';
import { EngineError } from '../engine/errors';
import type { EngineModel } from '../engine/model';
import { concatTokens, type LayoutTokens } from '../prompt/prompt';
import { CLI_OPTION_NAMES, type OptionNames } from './context-size';

/**
 * Share of the prompt (the context less the answer room, `AskRequest.answerRoom`) always left to the repository
 * prefix. A thread's earlier turns and the question use at most the rest; older turns are
 * dropped first, whole.
 */
export const REPOSITORY_SHARE = 0.5;

/** The question alone does not fit the room a question has (see {@link REPOSITORY_SHARE}). */
export class QuestionTooLongError extends EngineError {
  constructor(message: string) {
    super(message);
    this.name = 'QuestionTooLongError';
  }
}

/**
 * Room for a thread's earlier turns and the question [tokens]: the prompt's share that the
 * repository does not keep ({@link REPOSITORY_SHARE}), the prompt being the context less the
 * answer room (`AskRequest.answerRoom`: the tokens kept free for the answer, not the question's
 * own `maxTokens`, so that the thread's fit, and so the packing, does not depend on the answer length).
 * @param contextSize the context [tokens].
 * @param headTokens the prompt's head (system prompt) [tokens].
 * @param answerRoom tokens kept free for the answer [tokens].
 * @returns the room [tokens], > 0.
 * @throws EngineError when the answer and the prompt's head leave no room at all, naming the options to change.
 */
export function threadRoom(contextSize: number, headTokens: number, answerRoom: number, names: OptionNames = CLI_OPTION_NAMES): number {
  const prompt = contextSize - answerRoom;
  const room = Math.min(Math.floor(prompt * (1 - REPOSITORY_SHARE)), prompt - headTokens);
  if (room <= 0) {
    throw new EngineError(
      `the context (${contextSize} tokens) leaves no room for a question once the answer's ${answerRoom} tokens are kept free: raise ${names.contextSize} or lower ${names.answerRoom}`,
    );
  }
  return room;
}

/**
 * The earlier turns of a thread (or of the thread it was forked from, while it has none of its
 * own). A thread written under another cache key (another model, engine or template) keeps its
 * text, but its answers' token ids are another tokenizer's: they are tokenized again.
 * @param key the cache key, asked for only when the thread has turns (making it hashes the model
 *   and writes its fingerprint memo: a new thread's first question does neither here).
 */
export function threadHistory(model: EngineModel, key: () => string, store: CacheStore | undefined, threadId: string | undefined, forkFrom: string | undefined): ThreadTurn[] {
  if (!store || !threadId) return [];
  const own = store.threadIndex(threadId);
  const index = own && own.turns.length > 0 ? own : forkFrom ? store.threadIndex(forkFrom) : undefined;
  if (!index) return [];
  if (index.key === key()) return index.turns;
  return index.turns.map((t) => ({ ...t, answerTokens: Array.from(model.tokenize(t.answer)) }));
}

/** The part of a thread that goes into the prompt (see {@link fitThread}). */
export interface FittedThread {
  /** The most recent earlier turns that fit, in order. */
  turns: ThreadTurn[];
  /** Earlier turns left out (the oldest ones). */
  dropped: number;
  /** Tokens of the kept turns and the question (what follows the repository). */
  tokens: Int32Array;
  /** The room the thread had [tokens]. */
  room: number;
}

/**
 * Tokens of a thread's turns after the repository, from turns already tokenized: for turn i, its
 * opening (`between` for the first, `afterAnswer` after that), the question, the tail, then the
 * answer's tokens as decoded (omitted for the turn being asked). The same stream as
 * `threadTokens` (prompt/prompt.ts), without tokenizing anything again.
 */
function joinTurns(layout: LayoutTokens, turns: readonly { question: ArrayLike<number>; answerTokens?: ArrayLike<number> }[]): Int32Array {
  const parts: ArrayLike<number>[] = [];
  turns.forEach((t, i) => {
    parts.push(i === 0 ? layout.between : layout.afterAnswer, t.question, layout.tail);
    if (t.answerTokens) parts.push(t.answerTokens);
  });
  return concatTokens(parts);
}

/**
 * Keeps the most recent whole turns of a thread that fit `room` tokens together with the
 * question (`questionTokens`, the question as tokenized once); older turns are dropped first.
 * Each earlier turn's question is tokenized once.
 * @throws QuestionTooLongError when the question alone does not fit.
 */
export function fitThread(
  model: EngineModel,
  layout: LayoutTokens,
  history: readonly ThreadTurn[],
  questionTokens: Int32Array,
  room: number,
  names: OptionNames = CLI_OPTION_NAMES,
): FittedThread {
  const current = layout.between.length + questionTokens.length + layout.tail.length;
  if (current > room) {
    throw new QuestionTooLongError(
      `the question takes ${current} tokens but the room for a question is ${room} tokens (half of the context less the answer's room, ${names.answerRoom}; the repository keeps the other half): shorten it or raise ${names.contextSize}`,
    );
  }
  // a turn's tokens do not depend on its neighbours except for its opening (`between` for the
  // first turn, `afterAnswer` after it), so count each kept turn with the opening it would get
  const keptQuestions: Int32Array[] = [];
  let used = current - layout.between.length + layout.afterAnswer.length;
  while (keptQuestions.length < history.length) {
    const t = history[history.length - 1 - keptQuestions.length]!;
    const question = model.tokenize(t.question);
    const n = layout.afterAnswer.length + question.length + layout.tail.length + t.answerTokens.length;
    if (used + n - layout.afterAnswer.length + layout.between.length > room) break;
    used += n;
    keptQuestions.unshift(question);
  }
  const kept = keptQuestions.length;
  const turns = history.slice(history.length - kept);
  const tokens = joinTurns(layout, [...turns.map((t, i) => ({ question: keptQuestions[i]!, answerTokens: t.answerTokens })), { question: questionTokens }]);
  return { turns, dropped: history.length - kept, tokens, room };
}
