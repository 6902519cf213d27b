/**
 * One question about a repository, end to end (README, "How it works"):
 * pack → restore the longest cached prefix (memory, then disk) → prefill the rest → append the
 * thread and the question → SnapKV → decode → save the new prefix (in the background) and the
 * thread. Follow-ups either re-snap from the uncompressed prefix (`resnap`, query-aware) or
 * append to the thread's compressed cache (`continue`, fastest).
 * This file packs the repository and fits the thread (the question is tokenized once, here);
 * stages/ holds the rest, one file per stage: restore → prefill → snap → decode → persist.
 * Used by the CLI and the extension; knows nothing about either.
 */
import os from 'node:os';
import { cacheKey, PROMPT_VERSION } from '../cache/identity';
import type { CacheOutcome, CacheStore, ThreadTurn } from '../cache/store';
import { packRepository, type PackOptions, type PackResult } from '../context/pack';
import { retrieveChunks } from '../context/retrieve/retrieve';
import { EngineError } from '../engine/errors';
import type { EngineModel } from '../engine/model';
import { estimateContextBytes } from '../engine/memory';
import type { KvCacheType } from '../engine/native';
import type { FollowUpMode } from '../config/settings';
import { SNAP_DEFAULTS, type SnapOptions } from '../config/snap-options';
import { createSession, type EngineSession, type SessionOptions } from '../engine/session';
import { concatTokens, promptLayout, tokenizeLayout, type LayoutTokens } from '../prompt/prompt';
import type { ContextReport } from './context-report';
import { decode } from './stages/decode';
import { persistAnswer, persistPrefix } from './stages/persist';
import { prefillPrefix, prefillQuestion } from './stages/prefill';
import type { Question } from './stages/question';
import { restore } from './stages/restore';
import { snap } from './stages/snap';
import { askStats } from './stages/stats';

/** The SnapKV defaults ({@link SNAP_DEFAULTS}), under the name the tests and benchmarks import from the pipeline. */
export const DEFAULT_SNAP: Readonly<SnapOptions> = SNAP_DEFAULTS;

/** How a follow-up uses the thread (the settings' `FollowUpMode`): re-snap from the full prefix, or continue the compressed cache. */
export type { FollowUpMode };

/** The request options an error message may tell the user to change. */
export type AskOption = 'contextSize' | 'maxTokens';

/**
 * How each front end names an option in its error messages: the CLI's flags (the default), the
 * extension's settings (`reposnap.contextSize`), so that a message never names what the user cannot set.
 * `forceContextSize` names the override of the training-context guard, where the front end has one.
 */
export type OptionNames = Record<AskOption, string> & { forceContextSize?: string };

/** The CLI's names: `--context-size`, `--max-tokens`, `--force-context-size`. */
export const CLI_OPTION_NAMES: OptionNames = { contextSize: '--context-size', maxTokens: '--max-tokens', forceContextSize: '--force-context-size' };

/** The context size is above the model's training context or what this machine's memory holds. */
export class ContextSizeError extends EngineError {
  constructor(message: string) {
    super(message);
    this.name = 'ContextSizeError';
  }
}

/** llama.cpp's `n_ctx` is a uint32 and cell indices are int32: no context is larger. */
export const MAX_CONTEXT_SIZE = 2 ** 31 - 1;

/**
 * Share of the prompt (the context less the answer's `maxTokens`) always left to the repository
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

/** Inputs of {@link askRepository}. */
export interface AskRequest {
  repo: string;
  question: string;
  model: EngineModel;
  snap: SnapOptions;
  /** Context size [tokens]; default min(model's training context, 8192). See {@link checkContextSize}. */
  contextSize?: number;
  /** Allow a context size above the model's training context (answers degrade past it). Default false. */
  forceContextSize?: boolean;
  maxTokens?: number;
  temperature?: number;
  topP?: number;
  seed?: number;
  session?: Omit<SessionOptions, 'contextSize' | 'snapWindow'>;
  /** Per-file size cap [bytes]. */
  maxFileBytes?: number;
  /** What to pack beyond .gitignore: include/exclude globs (e.g. VS Code's files.exclude), defaults, order, packing (issue 15). */
  pack?: Pick<PackOptions, 'include' | 'exclude' | 'defaultExcludes' | 'skipGenerated' | 'order' | 'packing' | 'recentFiles' | 'rankedShares' | 'tagsCache'>;
  /**
   * With `pack.packing: 'ranked'`: the share of the context, in [0, 1), kept for the question's
   * retrieval section (the BM25-best chunks of files not in full, after the cached prefix and
   * before the thread; `retrieveChunks`). Default 0 (none).
   */
  retrievalShare?: number;
  /** The workspace's cache; without it every question starts cold. */
  store?: CacheStore;
  /** Thread the question belongs to (its earlier turns are in the store). */
  threadId?: string;
  /**
   * A thread whose turns a new thread starts from (an explanation continued in chat): used while
   * `threadId` has no turns of its own yet; the first answer saves them under `threadId`.
   */
  forkFrom?: string;
  /** Called after SnapKV compacted the cache, before decoding (tests and benchmarks read the kept positions). */
  afterSnap?: (session: EngineSession) => void;
  /** How error messages name options; default {@link CLI_OPTION_NAMES}. */
  optionNames?: OptionNames;
  /** Default 'resnap'. */
  followUp?: FollowUpMode;
  /**
   * Only bring the cached repository prefix up to date (restore, prefill what changed, save):
   * no question, no answer. The file watcher calls this so that the next question is a hit.
   */
  prepareOnly?: boolean;
  signal?: AbortSignal;
}

/** Progress events, in order. */
export type AskEvent =
  | { kind: 'pack'; phase: 'walk' | 'read' | 'tokenize'; done: number; total?: number }
  | { kind: 'packed'; pack: PackResult; promptTokens: number }
  | { kind: 'cache'; outcome: CacheOutcome; reusedTokens: number }
  | { kind: 'prefill'; done: number; total: number; tokensPerSecond: number }
  | { kind: 'snap'; L: number; B: number; ms: number; compacted: boolean }
  | { kind: 'notice'; message: string }
  | { kind: 'token'; text: string };

/** Measurements of one answered question (the CLI's stats line). */
export interface AskStats {
  /** Prompt tokens (repository prefix + thread + question). */
  L: number;
  /** Tokens of the repository prefix (head + packed files), the part the cache store keeps uncompressed. */
  prefixTokens: number;
  /**
   * Cells kept per layer and KV head after SnapKV (L with full attention); for an interleaved
   * sliding-window model (Gemma 2/3, Cohere 2, gpt-oss) the global layers', the ones SnapKV compacts.
   */
  B: number;
  /**
   * Interleaved sliding-window models only (issue 17; absent for others): cells the sliding-window
   * layers hold for the sequence after SnapKV, never compacted: the positions the window does not
   * mask at the last one, min(L, n_swa) (`SessionStats.swaCells`, llama.cpp's iSWA cache).
   */
  swaCells?: number;
  /** Interleaved sliding-window models only: the sliding-window layers' window n_swa [tokens] (the model's `nSwa`). */
  swaWindow?: number;
  ratio: number;
  files: number;
  skipped: number;
  /** Earlier turns of the thread left out of the prompt (oldest first) so that the repository keeps its share. */
  droppedTurns: number;
  packMs: number;
  /** How the cache served the question. */
  cache: CacheOutcome;
  /** Tokens restored from the cache instead of prefilled. */
  reusedTokens: number;
  /** Tokens prefilled for this question. */
  prefilledTokens: number;
  /** Restoring the cached state [ms]. */
  restoreMs: number;
  prefillMs: number;
  prefillTokS: number;
  snapMs: number;
  /** Time to first token from the start of the question [ms]. */
  ttftMs: number;
  decodeTokens: number;
  decodeMs: number;
  decodeTokS: number;
  nKvBefore: number;
  nKvAfter: number;
  /** K and V bytes of the sequence before and after SnapKV, exact; an iSWA model's sliding-window layers included. */
  kvBytesBefore: number;
  kvBytesAfter: number;
  snap: boolean;
  stopReason: string;
  /**
   * What the model read and what SnapKV kept of it: every file with its status, tokens and kept
   * share, and a summary (see context-report.ts). Absent for a prepare-only request.
   */
  context?: ContextReport;
}

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

/**
 * Room for a thread's earlier turns and the question [tokens]: the prompt's share that the
 * repository does not keep ({@link REPOSITORY_SHARE}), the prompt being the context less the
 * answer's `maxTokens`.
 * @throws EngineError when the answer and the prompt's head leave no room at all, naming the options to change.
 */
export function threadRoom(contextSize: number, headTokens: number, maxTokens: number, names: OptionNames = CLI_OPTION_NAMES): number {
  const prompt = contextSize - maxTokens;
  const room = Math.min(Math.floor(prompt * (1 - REPOSITORY_SHARE)), prompt - headTokens);
  if (room <= 0) {
    throw new EngineError(
      `the context (${contextSize} tokens) leaves no room for a question once the answer's ${maxTokens} tokens are kept free: raise ${names.contextSize} or lower ${names.maxTokens}`,
    );
  }
  return room;
}

/**
 * The earlier turns of a thread (or of the thread it was forked from, while it has none of its
 * own). A thread written under another cache key (another model, engine or template) keeps its
 * text, but its answers' token ids are another tokenizer's: they are tokenized again.
 */
function threadHistory(model: EngineModel, key: string, store: CacheStore | undefined, threadId: string | undefined, forkFrom: string | undefined): ThreadTurn[] {
  if (!store || !threadId) return [];
  const own = store.threadIndex(threadId);
  const index = own && own.turns.length > 0 ? own : forkFrom ? store.threadIndex(forkFrom) : undefined;
  if (!index) return [];
  if (index.key === key) return index.turns;
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
      `the question takes ${current} tokens but the room for a question is ${room} tokens (half of the context less the answer's ${names.maxTokens}; the repository keeps the other half): shorten it or raise ${names.contextSize}`,
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

/**
 * Answers one question. Calls `onEvent` for progress and each text piece. A question in a thread
 * holds the thread's lock in the store (across processes) from reading the thread's turns to
 * saving its own, so two questions in one thread at once keep both turns.
 * @throws EngineError for user-facing failures (context too small, …); AbortError on cancel.
 */
export async function askRepository(req: AskRequest, onEvent: (e: AskEvent) => void): Promise<AskStats> {
  const onWait = () => onEvent({ kind: 'notice', message: `waiting for another question in thread ${req.threadId} to be answered` });
  const lock = req.store && req.threadId && !req.prepareOnly ? await req.store.lockThread(req.threadId, { signal: req.signal, onWait }) : undefined;
  try {
    return await answerQuestion(req, onEvent);
  } finally {
    await lock?.release();
  }
}

/** {@link askRepository} without the thread's lock. */
async function answerQuestion(req: AskRequest, onEvent: (e: AskEvent) => void): Promise<AskStats> {
  const t0 = performance.now();
  const model = req.model;
  const contextSize = req.contextSize ?? defaultContextSize(model);
  const maxTokens = req.maxTokens ?? 256;
  const names = req.optionNames ?? CLI_OPTION_NAMES;
  checkContextSize(model, contextSize, {
    force: req.forceContextSize ?? false,
    kvCacheType: req.session?.kvCacheType ?? 'f16',
    flashAttention: req.session?.flashAttention !== 'off',
    window: req.snap.enabled ? req.snap.window : 0,
    availableBytes: os.freemem(),
    names,
  });

  const session = createSession(model, { ...req.session, contextSize, snapWindow: req.snap.enabled ? req.snap.window : 0 });
  try {
    return await prepareAndAnswer(req, session, t0, contextSize, maxTokens, names, onEvent);
  } finally {
    session.dispose();
  }
}

/** {@link answerQuestion} once the session exists: thread, pack, then {@link answer}. */
async function prepareAndAnswer(
  req: AskRequest,
  session: EngineSession,
  t0: number,
  contextSize: number,
  maxTokens: number,
  names: OptionNames,
  onEvent: (e: AskEvent) => void,
): Promise<AskStats> {
  const model = req.model;
  const store = req.store;
  const key = cacheKey({ ...session.identity(), chatTemplate: model.info.chatTemplate ?? '', promptVersion: PROMPT_VERSION });
  const layout = tokenizeLayout(model, promptLayout(model));
  const history = req.prepareOnly ? [] : threadHistory(model, key, store, req.threadId, req.forkFrom);
  // the question's one tokenization: the thread's fit, the prompt, and a continued thread's turn use it
  const questionTokens = model.tokenize(req.question);
  const fit = fitThread(model, layout, history, questionTokens, threadRoom(contextSize, layout.head.length, maxTokens, names), names);
  const earlier = fit.turns;
  if (fit.dropped > 0) {
    onEvent({ kind: 'notice', message: `the ${fit.dropped} oldest turn${fit.dropped === 1 ? '' : 's'} of the thread left the prompt so that the repository keeps half of the prompt` });
  }
  const suffix = fit.tokens;
  // the room kept for the thread and the question does not depend on this question's length, so
  // that every short question packs the same files (and finds the same cached prefix)
  const questionRoom = Math.max(suffix.length, Math.min(questionReserve(contextSize), fit.room));
  const reserve = layout.head.length + questionRoom + maxTokens;
  // the retrieval room does not depend on the question either (nor on prepareOnly): same files, same prefix
  const retrievalShare = req.retrievalShare ?? 0;
  if (!(retrievalShare >= 0 && retrievalShare < 1)) throw new RangeError(`retrievalShare must be in [0, 1), got ${String(req.retrievalShare)}`);
  const retrievalRoom = req.pack?.packing === 'ranked' ? Math.floor(contextSize * retrievalShare) : 0;
  const tokenBudget = contextSize - reserve - retrievalRoom;

  // tokenize each file section once: the budget is exact and the prompt is the concatenation
  const sectionTokens = new Map<string, Int32Array>();
  const pack = await packRepository(req.repo, {
    ...req.pack,
    tokenBudget,
    maxFileBytes: req.maxFileBytes,
    signal: req.signal,
    countTokens: (text) => {
      const t = model.tokenize(text);
      // keep only what can still be packed (over-budget sections are dropped anyway)
      if (t.length <= tokenBudget) sectionTokens.set(text, t);
      return t.length;
    },
    onProgress: (p) => onEvent({ kind: 'pack', ...p }),
  });
  const sectionToks = pack.sections.map((s) => sectionTokens.get(s.text) ?? model.tokenize(s.text));
  const prefix = concatTokens([layout.head, ...sectionToks]);
  // the question's retrieval section (issue 15) goes after the cached prefix, before the thread
  let retrieval: Int32Array = new Int32Array(0);
  let retrievedFiles: { path: string; tokens: number; offset: number }[] = [];
  let retrievalText = '';
  if (retrievalRoom > 0 && !req.prepareOnly && pack.retrievable.length > 0) {
    const retrieved = await retrieveChunks(pack.retrievable, req.question, { budget: retrievalRoom, countTokens: (t) => model.tokenize(t).length, signal: req.signal });
    if (retrieved.text !== '') retrieval = model.tokenize(retrieved.text);
    retrievalText = retrieved.text;
    retrievedFiles = retrieved.spans;
  }
  const questionPart = concatTokens([retrieval, suffix]);
  const packMs = performance.now() - t0;
  onEvent({ kind: 'packed', pack, promptTokens: prefix.length + questionPart.length });

  return answer({
    session,
    req,
    key,
    layout,
    prefix,
    suffix: questionPart,
    questionTokens,
    retrieval: { tokens: retrieval.length, files: retrievedFiles },
    retrievalText,
    sectionTokens: sectionToks,
    pack,
    packMs,
    t0,
    maxTokens,
    earlier,
    dropped: fit.dropped,
    history,
    onEvent,
  });
}

/**
 * The stages of one answer, in order (one file each in stages/): restore what the cache holds,
 * prefill the rest of the repository prefix and save it, then (unless only the prefix is being
 * prepared) prefill the question part, snap, decode, and save the thread and the question's record.
 */
async function answer(q: Question): Promise<AskStats> {
  const { session } = q;
  const tp = performance.now();
  const restored = await restore(q);
  if (!restored.continued) {
    await prefillPrefix(q, restored);
    await persistPrefix(q, restored);
    if (q.req.prepareOnly) {
      const st = session.stats();
      const prefillMs = performance.now() - tp - restored.restoreMs;
      const L = q.prefix.length;
      return askStats(q, { restored, prefilled: session.position - restored.reused, prefillMs, L, B: L, snapMs: 0, before: st, after: st });
    }
  }
  const prefilled = await prefillQuestion(q, restored);
  const prefillMs = performance.now() - tp - restored.restoreMs;
  const snapped = await snap(q, restored, prefilled);
  const after = session.stats();
  const decoded = await decode(q);
  const stats = askStats(q, {
    restored,
    prefilled: prefilled.prefilled,
    prefillMs,
    L: prefilled.L,
    B: snapped.B,
    snapMs: snapped.snapMs,
    before: prefilled.before,
    after,
    answer: { decoded, attention: snapped.attention },
  });
  await persistAnswer(q, decoded, stats);
  return stats;
}
