/**
 * The one builder of a question's {@link AskStats}, from what each stage measured: an answered
 * question, or a prepare-only request (the repository prefix brought up to date, nothing decoded);
 * and of an answer's context report ({@link answerContext}).
 */
import type { SessionStats } from '../../engine/session';
import type { AskStats } from '../ask';
import { contextReport, type AttentionInput, type ContextReport } from '../context-report';
import type { Decoded } from './decode';
import type { Question } from './question';
import { promptRetrieval, type Restored } from './restore';

/** What the stages measured; `answer` is absent for a prepare-only request. */
export interface Measured {
  restored: Restored;
  /** Tokens prefilled for this question. */
  prefilled: number;
  prefillMs: number;
  /** Prompt tokens. */
  L: number;
  /** Cells kept per layer and KV head. */
  B: number;
  snapMs: number;
  /** The cache before and after SnapKV. */
  before: SessionStats;
  after: SessionStats;
  /** The answer; absent when only the prefix was prepared. */
  answer?: { decoded: Decoded };
}

/** Tokens per second, 0 when nothing was done. */
const perSecond = (tokens: number, ms: number): number => (tokens > 0 ? tokens / (ms / 1000) : 0);

/** The stats line of a question (see {@link AskStats} for each field), without its context report ({@link answerContext}). */
export function askStats(q: Question, m: Measured): AskStats {
  const a = m.answer;
  const decodeTokens = a ? a.decoded.summary.tokens : 0;
  const decodeMs = a ? a.decoded.decodeMs : 0;
  const stats: AskStats = {
    L: m.L,
    prefixTokens: q.prefix.length,
    B: m.B,
    ratio: m.B / m.L,
    files: q.pack.files.length,
    skipped: q.pack.skipped.length,
    droppedTurns: a ? q.dropped : 0,
    packMs: q.packMs,
    cache: m.restored.outcome,
    reusedTokens: m.restored.reused,
    prefilledTokens: m.prefilled,
    restoreMs: m.restored.restoreMs,
    restoreReadMs: m.restored.readMs,
    prefillMs: m.prefillMs,
    prefillTokS: perSecond(m.prefilled, m.prefillMs),
    snapMs: m.snapMs,
    ttftMs: a ? a.decoded.ttftMs : 0,
    decodeTokens,
    decodeMs,
    decodeTokS: perSecond(decodeTokens, decodeMs),
    nKvBefore: m.before.nKv,
    nKvAfter: m.after.nKv,
    kvBytesBefore: m.before.kvBytes,
    kvBytesAfter: m.after.kvBytes,
    snap: a ? q.req.snap.enabled : false,
    stopReason: a ? a.decoded.summary.reason : 'prepared',
  };
  if (q.edits) stats.edits = q.edits;
  // an interleaved sliding-window model: B counts the global layers; the window's cells apart
  if (m.after.swaKvSize > 0) {
    stats.swaCells = m.after.swaCells;
    stats.swaWindow = q.req.model.info.nSwa;
  }
  return stats;
}

/**
 * The context report of an answered question ({@link AskStats.context}): the pack's sections
 * after the template's head, then the retrieval section the prompt holds (this question's, or on
 * a continued thread the one its cache holds, {@link promptRetrieval}).
 * Built after the thread is saved (ask.ts), so that a report that fails loses no turn.
 * @throws RangeError when the sections do not fit in L (see {@link contextReport}).
 */
export function answerContext(q: Question, restored: Restored, m: { L: number; attention: AttentionInput }): ContextReport {
  const retrieval = promptRetrieval(q, restored);
  return contextReport({ pack: q.pack, headTokens: q.layout.head.length, L: m.L, attention: m.attention, ...(retrieval ? { retrieval } : {}) });
}
