/**
 * Stage 2, prefill: decode what the cache did not restore. The repository prefix first (so that
 * it can be saved on its own, persist.ts), then the question part: the retrieval section, the
 * thread's kept turns and the question, or on a continued thread only the new turn. Progress
 * events count both as one prefill.
 */
import type { SessionStats } from '../../engine/session';
import { concatTokens } from '../../prompt/prompt';
import type { Question } from './question';
import type { Restored } from './restore';

/** Prefills the part of the repository prefix the cache did not restore (nothing on a continued thread). */
export async function prefillPrefix(q: Question, r: Restored): Promise<void> {
  if (r.continued) return;
  const rest = q.prefix.subarray(q.session.position);
  if (rest.length === 0) return;
  await q.session.prefill(rest, { signal: q.req.signal, onProgress: (p) => q.onEvent({ kind: 'prefill', ...p, total: rest.length + q.suffix.length }) });
}

/** What {@link prefillQuestion} measured. */
export interface Prefilled {
  /** Prompt tokens (the session's position after the prefill). */
  L: number;
  /** Tokens prefilled for this question (prefix and question part). */
  prefilled: number;
  /** The cache before SnapKV. */
  before: SessionStats;
}

/**
 * Prefills the question part: `suffix`, or on a continued thread (whose cache ends with the last
 * answer) the new turn, opened with `afterAnswer`.
 */
export async function prefillQuestion(q: Question, r: Restored): Promise<Prefilled> {
  const { session, layout } = q;
  const tokens = r.continued ? concatTokens([layout.afterAnswer, q.questionTokens, layout.tail]) : q.suffix;
  const done0 = r.continued ? 0 : q.prefix.length - r.reused;
  await session.prefill(tokens, {
    signal: q.req.signal,
    onProgress: (p) => q.onEvent({ kind: 'prefill', done: done0 + p.done, total: done0 + p.total, tokensPerSecond: p.tokensPerSecond }),
  });
  return { L: session.position, prefilled: session.position - r.reused, before: session.stats() };
}
