/**
 * The context of one question (moved out of pipeline/ask.ts, behaviour unchanged): the default
 * size, the room kept for the question, the refusal of a size the model or the machine cannot
 * take, and how each front end names the options its messages tell the user to change.
 */
import { ContextOverflowError, EngineError } from '../engine/errors';
import type { EngineModel } from '../engine/model';
import { estimateContextBytes } from '../engine/memory';
import type { KvCacheType } from '../engine/native';

/** The request options an error message may tell the user to change. */
export type AskOption = 'contextSize' | 'maxTokens' | 'answerRoom';

/**
 * How each front end names an option in its error messages: the CLI's flags (the default), the
 * extension's settings (`reposnap.contextSize`), so that a message never names what the user cannot set.
 * `forceContextSize` names the override of the training-context guard, where the front end has one.
 * `answerRoom` names what sets {@link AskRequest.answerRoom} (the CLI's `--answer-room`; in the
 * extension the `reposnap.maxTokens` setting, which is its answer room).
 */
export type OptionNames = Record<AskOption, string> & { forceContextSize?: string };

/** The CLI's names: `--context-size`, `--max-tokens`, `--answer-room`, `--force-context-size`. */
export const CLI_OPTION_NAMES: OptionNames = { contextSize: '--context-size', maxTokens: '--max-tokens', answerRoom: '--answer-room', forceContextSize: '--force-context-size' };

/** The answer length limit when a request sets none (`AskRequest.maxTokens`, the CLI's `--max-tokens`) [tokens]. */
export const DEFAULT_MAX_TOKENS = 256;

/**
 * Tokens the packer keeps free for the answer when the request sets no `answerRoom`: the default
 * answer length ({@link DEFAULT_MAX_TOKENS}, 256), at most an eighth of the context (64 at a
 * 512-token context), like {@link questionReserve}.
 *
 * The repository prefix is packed for this room, not for the question's `maxTokens`, so that two
 * questions that differ only in their answer length pack the same files and share one cached
 * prefix (a second `--max-tokens` used to cost a cold prefill of the whole repository). A longer
 * answer is served from what the prompt leaves free ({@link checkAnswerRoom}).
 * @param contextSize the context [tokens], ≥ 1.
 * @returns the room [tokens], ≥ 0.
 */
export function defaultAnswerRoom(contextSize: number): number {
  return Math.min(DEFAULT_MAX_TOKENS, Math.floor(contextSize / 8));
}

/** The answer's `maxTokens` does not fit the context left after the prompt. */
export class AnswerRoomError extends ContextOverflowError {
  constructor(
    message: string,
    /** The largest `maxTokens` that fits [tokens] (0 when the prompt fills the context). */
    readonly fits: number,
  ) {
    super(message);
    this.name = 'ContextOverflowError';
  }
}

/**
 * Refuses an answer length the context cannot hold after the prompt, before anything is
 * prefilled: the answer would otherwise stop at the end of the context (`stop=contextFull`), cut
 * short without a word. A `maxTokens` up to the room the prefix was packed for always fits (the
 * packer kept it free); a larger one fits when the prompt left enough free.
 * @param contextSize the context [tokens].
 * @param promptTokens L: the prompt's tokens, or a continued thread's position after its new turn [tokens].
 * @param maxTokens the answer length asked for [tokens].
 * @param answerRoom the room the prefix was packed for [tokens] (named in the message).
 * @throws AnswerRoomError (code `context_overflow`) when promptTokens + maxTokens > contextSize,
 *   saying how many tokens fit and which options to change.
 */
export function checkAnswerRoom(contextSize: number, promptTokens: number, maxTokens: number, answerRoom: number, names: OptionNames): void {
  const free = Math.max(0, contextSize - promptTokens);
  if (maxTokens <= free) return;
  throw new AnswerRoomError(
    `${names.maxTokens} ${maxTokens} does not fit: the prompt takes ${promptTokens} of the context's ${contextSize} tokens, which leaves ${free} for the answer. ` +
      `Ask for ${free} or fewer, or raise ${names.answerRoom} (${answerRoom} now: the room the repository is packed for; more packs less of it) or ${names.contextSize}`,
    free,
  );
}

/** The context size is above the model's training context or what this machine's memory holds. */
export class ContextSizeError extends EngineError {
  constructor(message: string) {
    super(message);
    this.name = 'ContextSizeError';
  }
}

/** llama.cpp's `n_ctx` is a uint32 and cell indices are int32: no context is larger. */
export const MAX_CONTEXT_SIZE = 2 ** 31 - 1;

/** Context size used when none is given: the model's training context, at most 8192 tokens. */
export function defaultContextSize(model: EngineModel): number {
  const train = model.info.nCtxTrain > 0 ? model.info.nCtxTrain : 4096;
  return Math.min(train, 8192);
}

/**
 * Tokens kept free for the thread and the question: an eighth of the context, at most 1024.
 * A longer thread or question takes what it needs from the repository's share.
 */
export function questionReserve(contextSize: number): number {
  return Math.min(1024, Math.floor(contextSize / 8));
}

/** Inputs of {@link checkContextSize} besides the model and the size. */
export interface ContextCheck {
  /** Allow sizes above the training context. */
  force: boolean;
  kvCacheType: KvCacheType;
  flashAttention: boolean;
  /** SnapKV observation window, 0 without SnapKV. */
  window: number;
  /** Memory the context may take [bytes] (`os.freemem()`: MemAvailable on Linux). */
  availableBytes: number;
  names: OptionNames;
}

/**
 * Refuses a context size before anything is allocated: not a positive integer up to
 * {@link MAX_CONTEXT_SIZE}; above the model's training context (`<arch>.context_length`) unless
 * forced; or when the KV cache and the largest compute buffer ({@link estimateContextBytes}, a lower
 * bound) exceed the available memory (CPU models only: a GPU's memory is its own).
 * @throws ContextSizeError naming the option to change.
 */
export function checkContextSize(model: EngineModel, contextSize: number, c: ContextCheck): void {
  if (!Number.isInteger(contextSize) || contextSize < 1 || contextSize > MAX_CONTEXT_SIZE) {
    throw new ContextSizeError(`the context size ${contextSize} is not a number of tokens from 1 to ${MAX_CONTEXT_SIZE}: change ${c.names.contextSize}`);
  }
  const train = model.meta.contextLength;
  if (train > 0 && contextSize > train && !c.force) {
    throw new ContextSizeError(
      `the context size ${contextSize} is above the model's training context (${train} tokens), past which its answers degrade: lower ${c.names.contextSize}${c.names.forceContextSize ? ` (or pass ${c.names.forceContextSize})` : ''}`,
    );
  }
  if (model.gpuLayers > 0) return;
  const need = estimateContextBytes(model.meta, { contextSize, kvCacheType: c.kvCacheType, flashAttention: c.flashAttention, ubatch: 512, window: c.window });
  if (need.total > c.availableBytes) {
    const gib = (b: number) => `${(b / 2 ** 30).toFixed(1)} GiB`;
    throw new ContextSizeError(
      `a context of ${contextSize} tokens needs at least ${gib(need.total)} (KV cache ${gib(need.kv)}, attention scores ${gib(need.compute)}) but ${gib(c.availableBytes)} of memory is available: lower ${c.names.contextSize}`,
    );
  }
}
