/**
 * The one builder of a question's {@link AskStats}, from what each stage measured: an answered
 * question, or a prepare-only request (the repository prefix brought up to date, nothing decoded).
 */
import type { SessionStats } from '../../engine/session';
import type { AskStats } from '../ask';
import { contextReport, type AttentionInput } from '../context-report';
import type { Decoded } from './decode';
import type { Question } from './question';
import type { Restored } from './restore';

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
  /** The answer and what the model attended to; absent when only the prefix was prepared. */
  answer?: { decoded: Decoded; attention: AttentionInput };
}

/** Tokens per second, 0 when nothing was done. */
const perSecond = (tokens: number, ms: number): number => (tokens > 0 ? tokens / (ms / 1000) : 0);

/** The stats line of a question (see {@link AskStats} for each field). */
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
  // an interleaved sliding-window model: B counts the global layers; the window's cells apart
  if (m.after.swaKvSize > 0) {
    stats.swaCells = m.after.swaCells;
    stats.swaWindow = q.req.model.info.nSwa;
  }
  if (a) stats.context = contextReport({ pack: q.pack, headTokens: q.layout.head.length, L: m.L, attention: a.attention, retrieval: q.retrieval });
  return stats;
}
