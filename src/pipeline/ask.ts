/**
 * One question about a repository, end to end (docs/engine.md, "How it works"):
 * pack → restore the longest cached prefix (memory, then disk) → prefill the rest → append the
 * thread and the question → SnapKV → decode → save the new prefix (in the background) and the
 * thread. Follow-ups either re-snap from the uncompressed prefix (`resnap`, query-aware) or
 * append to the thread's compressed cache (`continue`, fastest).
 * This file packs the repository and fits the thread (the question is tokenized once, here);
 * stages/ holds the rest, one file per stage: restore (with retrieve, the question's retrieval
 * section, unless the thread's cache is continued) → prefill → snap → decode → persist;
 * request.ts the request, events and stats, context-size.ts the context's checks, thread.ts the
 * thread's fit (all re-exported here).
 * Used by the CLI and the extension; knows nothing about either.
 */
import os from 'node:os';
import { cacheKey, PROMPT_VERSION } from '../cache/identity';
import { SecretRefusedError, throwIfAborted } from '../context/errors';
import { packRepository } from '../context/pack';
import { quotedFileRefusal } from '../context/quoted';
import type { FollowUpMode } from '../config/settings';
import { SNAP_DEFAULTS, type SnapOptions } from '../config/snap-options';
import { createSession, type EngineSession } from '../engine/session';
import { concatTokens, promptLayout, tokenizeLayout } from '../prompt/prompt';
import { afterEdit } from './after-edit';
import { checkAnswerRoomSize } from './answer-room';
import { checkContextSize, CLI_OPTION_NAMES, defaultAnswerRoom, defaultContextSize, DEFAULT_MAX_TOKENS, questionReserve, type OptionNames } from './context-size';
import type { AskEvent, AskRequest, AskStats } from './request';
import { decode } from './stages/decode';
import { persistAnswer, persistPrefix } from './stages/persist';
import { prefillPrefix, prefillQuestion, questionPrefill } from './stages/prefill';
import type { Question } from './stages/question';
import { restore } from './stages/restore';
import { retrieve } from './stages/retrieve';
import { snap } from './stages/snap';
import { answerContext, askStats } from './stages/stats';
import { fitThread, threadHistory, threadRoom } from './thread';

export {
  AnswerRoomError,
  checkAnswerRoom,
  checkContextSize,
  CLI_OPTION_NAMES,
  ContextSizeError,
  defaultAnswerRoom,
  defaultContextSize,
  DEFAULT_MAX_TOKENS,
  MAX_CONTEXT_SIZE,
  questionReserve,
  type AskOption,
  type ContextCheck,
  type OptionNames,
} from './context-size';
export { checkAnswerRoomSize, minContextSize, minPromptTokens, type PromptParts } from './answer-room';
export type { AskEvent, AskRequest, AskStats } from './request';
export { fitThread, QuestionTooLongError, REPOSITORY_SHARE, threadRoom, type FittedThread } from './thread';

/** The SnapKV defaults ({@link SNAP_DEFAULTS}), under the name the tests and benchmarks import from the pipeline. */
export const DEFAULT_SNAP: Readonly<SnapOptions> = SNAP_DEFAULTS;

/** How a follow-up uses the thread (the settings' `FollowUpMode`): re-snap from the full prefix, or continue the compressed cache. */
export type { FollowUpMode };

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
  const maxTokens = req.maxTokens ?? DEFAULT_MAX_TOKENS;
  const names = req.optionNames ?? CLI_OPTION_NAMES;
  const answerRoom = req.answerRoom ?? defaultAnswerRoom(contextSize);
  if (!(Number.isInteger(answerRoom) && answerRoom >= 0)) throw new RangeError(`answerRoom must be an integer >= 0, got ${String(req.answerRoom)}`);
  checkContextSize(model, contextSize, {
    force: req.forceContextSize ?? false,
    kvCacheType: req.session?.kvCacheType ?? 'f16',
    flashAttention: req.session?.flashAttention !== 'off',
    window: req.snap.enabled ? req.snap.window : 0,
    availableBytes: os.freemem(),
    names,
  });

  // the model's fingerprint is remembered in the cache the question uses (its root), or nowhere
  const session = createSession(model, { ...req.session, contextSize, snapWindow: req.snap.enabled ? req.snap.window : 0, fingerprintMemo: req.store ? req.store.fingerprintMemo : null });
  try {
    return await prepareAndAnswer(req, session, t0, contextSize, { maxTokens, answerRoom }, names, onEvent);
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
  answerSize: { maxTokens: number; answerRoom: number },
  names: OptionNames,
  onEvent: (e: AskEvent) => void,
): Promise<AskStats> {
  const model = req.model;
  const store = req.store;
  const { maxTokens, answerRoom } = answerSize;
  // the key names the model by its SHA-256 (session.identity()): only a store needs it, so a
  // question without the cache neither hashes the model nor writes its fingerprint anywhere; and
  // it is made once the repository is packed (before, only the turns of a thread need it), so that
  // a question cancelled while packing writes nothing to the cache root (the fingerprint memo)
  let cachedKey: string | undefined;
  const keyOf = (): string => (cachedKey ??= store ? cacheKey({ ...session.identity(), chatTemplate: model.info.chatTemplate ?? '', promptVersion: PROMPT_VERSION }) : '');
  const layout = tokenizeLayout(model, promptLayout(model));
  const history = req.prepareOnly ? [] : threadHistory(model, keyOf, store, req.threadId, req.forkFrom);
  // the question's one tokenization: the thread's fit, the prompt, and a continued thread's turn use it
  const questionTokens = model.tokenize(req.question);
  // an answer room the context cannot hold beside this question is refused with the limit, before anything is packed
  checkAnswerRoomSize(contextSize, req.answerRoom, { head: layout.head.length, questionTemplate: layout.between.length + layout.tail.length, question: questionTokens.length }, names);
  // the thread's room and the packing depend on the answer room, never on this question's
  // maxTokens: questions that differ only in their answer length share one cached prefix
  const fit = fitThread(model, layout, history, questionTokens, threadRoom(contextSize, layout.head.length, answerRoom, names), names);
  const earlier = fit.turns;
  if (fit.dropped > 0) {
    onEvent({ kind: 'notice', message: `the ${fit.dropped} oldest turn${fit.dropped === 1 ? '' : 's'} of the thread left the prompt so that the repository keeps half of the prompt` });
  }
  // the room kept for the thread and the question does not depend on this question's length, so
  // that every short question packs the same files (and finds the same cached prefix)
  const questionRoom = Math.max(fit.tokens.length, Math.min(questionReserve(contextSize), fit.room));
  const reserve = layout.head.length + questionRoom + answerRoom;
  // the retrieval room does not depend on the question either (nor on prepareOnly): same files, same prefix
  const retrievalShare = req.retrievalShare ?? 0;
  if (!(retrievalShare >= 0 && retrievalShare < 1)) throw new RangeError(`retrievalShare must be in [0, 1), got ${String(req.retrievalShare)}`);
  // ranked (asked, or chosen by auto) keeps the retrieval room out of the files' budget; auto
  // decides whether smallest-first fits against the whole of it (then no retrieval room)
  const packing = req.pack?.packing ?? 'smallest-first';
  const retrievalRoom = packing !== 'smallest-first' ? Math.floor(contextSize * retrievalShare) : 0;
  const filesBudget = contextSize - reserve;
  const rankedBudget = Math.max(0, filesBudget - retrievalRoom);
  const tokenBudget = packing === 'ranked' ? rankedBudget : filesBudget;

  // tokenize each file section once: the budget is exact and the prompt is the concatenation
  const sectionTokens = new Map<string, Int32Array>();
  const pack = await packRepository(req.repo, {
    ...req.pack,
    tokenBudget,
    ...(packing === 'auto' ? { rankedTokenBudget: rankedBudget } : {}),
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
  // a quoted file (an explanation's code) is decided on as the pack decides on its files, before
  // anything reaches the model or the cache
  if (req.quoted !== undefined && !req.prepareOnly) {
    const refusal = await quotedFileRefusal(req.quoted, { secrets: pack.secrets, ...(req.pack?.exclude !== undefined ? { exclude: req.pack.exclude } : {}) });
    if (refusal !== undefined) throw new SecretRefusedError(req.quoted.path, refusal);
  }
  let sectionToks = pack.sections.map((s) => sectionTokens.get(s.text) ?? model.tokenize(s.text));
  let prefix = concatTokens([layout.head, ...sectionToks]);
  // after an edit: the current pack (exact), or the earlier prefix with an erratum (after-edit.ts)
  let promptPack = pack;
  let suffix = fit.tokens;
  const edited = req.editBase
    ? afterEdit({ asked: req.afterEdit ?? 'exact', base: req.editBase, current: pack, prefix, sectionTokens: sectionToks, head: layout.head, model, store, key: keyOf, questionPart: suffix.length, answerRoom, contextSize })
    : undefined;
  if (edited) {
    promptPack = edited.pack;
    prefix = edited.prefix;
    sectionToks = edited.sectionTokens;
    suffix = concatTokens([edited.erratum, suffix]);
  }
  const packMs = performance.now() - t0;

  const q: Question = {
    session,
    req,
    // made on first use: a thread's turns made it already (threadHistory), else complete() does
    get key() {
      return keyOf();
    },
    layout,
    prefix,
    // the question's retrieval section (issue 15) goes after the cached prefix, before the thread:
    // added by stages/retrieve.ts unless the thread's cache is continued (it is not in that prompt)
    suffix,
    questionTokens,
    retrievalRoom,
    retrieval: { tokens: 0, files: [] },
    retrievalText: '',
    sectionTokens: sectionToks,
    pack: promptPack,
    packMs,
    t0,
    maxTokens,
    answerRoom,
    contextSize,
    names,
    earlier,
    dropped: fit.dropped,
    history,
    onEvent,
    ...(edited ? { edits: edited.info } : {}),
    erratumText: edited?.erratumText ?? '',
  };
  // a question that does not continue its thread: its retrieval section and the answer's room,
  // then the cache key, made once nothing before the cache can refuse the question (one refused or
  // cancelled before writes nothing to the cache root); the key's time (the model's hash, on its
  // first use) is the packing's
  const complete = async (): Promise<void> => {
    await retrieve(q);
    // a Ctrl+C that came during the pack's last (synchronous) tokenization, or the sections' and
    // the retrieval's, runs its handler in this turn of the event loop: seen here, before the
    // model is hashed (seconds for a large one) and its fingerprint memo written
    await new Promise<void>((resolve) => setImmediate(resolve));
    throwIfAborted(q.req.signal);
    const tk = performance.now();
    keyOf();
    q.packMs += performance.now() - tk;
  };
  return answer(q, complete);
}

/**
 * The stages of one answer, in order (one file each in stages/): restore what the cache holds
 * (a question that does not continue its thread is completed first, `complete`: its retrieval
 * section, the answer's room and the cache key), prefill the rest of the repository prefix and save it, then (unless only the prefix is being
 * prepared) prefill the question part, snap, decode, and save the thread and the question's record.
 */
async function answer(q: Question, complete: () => Promise<void>): Promise<AskStats> {
  const { session } = q;
  const restored = await restore(q, complete);
  // the prompt this question runs on: a continued thread's cache and its new turn (this question's
  // retrieval section is not in it), else the prefix and the question part
  q.onEvent({
    kind: 'packed',
    pack: q.pack,
    promptTokens: restored.continued ? session.position + questionPrefill(q, restored).length : q.prefix.length + q.suffix.length,
    ...(q.erratumText !== '' ? { erratum: q.erratumText } : {}),
  });
  // the prefill time is the prefill calls' own: not the restore, a wait for another process's
  // prefill of the same prefix (store.lockPrefix), nor the prefix's snapshot for the cache
  let prefixMs = 0;
  if (!restored.continued) {
    try {
      prefixMs = await prefillPrefix(q, restored);
      await persistPrefix(q, restored);
    } finally {
      // once the prefix is saved (in the background): a process waiting for it restores it
      void restored.prefixLock?.release();
    }
    if (q.req.prepareOnly) {
      const st = session.stats();
      const L = q.prefix.length;
      return askStats(q, { restored, prefilled: session.position - restored.reused, prefillMs: prefixMs, L, B: L, snapMs: 0, before: st, after: st });
    }
  }
  const prefilled = await prefillQuestion(q, restored);
  const prefillMs = prefixMs + prefilled.ms;
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
    answer: { decoded },
  });
  // the turn is saved before the context report is built: a report that fails loses no turn
  await persistAnswer(q, restored, decoded, stats);
  stats.context = answerContext(q, restored, { L: prefilled.L, attention: snapped.attention });
  return stats;
}
