/**
 * Stage 2, prefill: decode what the cache did not restore. The repository prefix first (so that
 * it can be saved on its own, persist.ts), then the question part: the retrieval section, the
 * thread's kept turns and the question, or on a continued thread only the new turn. Progress
 * events count both as one prefill.
 */
import type { SessionStats } from '../../engine/session';
import { concatTokens } from '../../prompt/prompt';
import { checkAnswerRoom } from '../context-size';
import { windowStart, type Question } from './question';
import type { Restored } from './restore';

/**
 * Prefills the part of the repository prefix the cache did not restore (nothing on a continued
 * thread); returns the time its prefill calls took [ms] (0 when nothing was prefilled). With SnapKV on, the prefill stops once at L − w (L = prefix + suffix, w the observation
 * window) when that falls inside the prefix, and goes on from there in a second call: a cache hit
 * restores the prefix up to L − w and prefills from there (restore.ts), so a cold run, a miss and a
 * hit compute the window's queries and keys in the same batches, and SnapKV keeps the same
 * positions in all three on any CPU (ggml's kernels may round a row differently in a batch of
 * another size).
 */
export async function prefillPrefix(q: Question, r: Restored): Promise<number> {
  if (r.continued) return 0;
  const start = q.session.position;
  const total = q.prefix.length - start + q.suffix.length;
  if (start >= q.prefix.length) return 0;
  const t0 = performance.now();
  const cut = windowStart(q);
  const cuts = r.snapNow && cut > start && cut < q.prefix.length ? [cut, q.prefix.length] : [q.prefix.length];
  let from = start;
  for (const to of cuts) {
    const done0 = from - start;
    await q.session.prefill(q.prefix.subarray(from, to), {
      signal: q.req.signal,
      onProgress: (p) => q.onEvent({ kind: 'prefill', done: done0 + p.done, total, tokensPerSecond: p.tokensPerSecond }),
    });
    from = to;
  }
  return performance.now() - t0;
}

/** What {@link prefillQuestion} measured. */
export interface Prefilled {
  /** Prompt tokens (the session's position after the prefill). */
  L: number;
  /** Tokens prefilled for this question (prefix and question part). */
  prefilled: number;
  /** The question part's prefill call [ms]. */
  ms: number;
  /** The cache before SnapKV. */
  before: SessionStats;
}

/**
 * Prefills the question part: `suffix`, or on a continued thread (whose cache ends with the last
 * answer) the new turn, opened with `afterAnswer`.
 * @throws AnswerRoomError (before prefilling) when a continued thread leaves too little of the
 *   context for `maxTokens` ({@link checkAnswerRoom}).
 */
export async function prefillQuestion(q: Question, r: Restored): Promise<Prefilled> {
  const { session } = q;
  const tokens = questionPrefill(q, r);
  // a continued thread's cache ends where its last answer did: check the answer's room again from there
  if (r.continued) checkAnswerRoom(q.contextSize, session.position + tokens.length, q.maxTokens, q.answerRoom, q.names);
  const done0 = r.continued ? 0 : q.prefix.length - r.reused;
  const t0 = performance.now();
  await session.prefill(tokens, {
    signal: q.req.signal,
    onProgress: (p) => q.onEvent({ kind: 'prefill', done: done0 + p.done, total: done0 + p.total, tokensPerSecond: p.tokensPerSecond }),
  });
  return { L: session.position, prefilled: session.position - r.reused, ms: performance.now() - t0, before: session.stats() };
}

/**
 * The tokens {@link prefillQuestion} prefills after the restored cache and the prefix: `suffix`
 * (this question's retrieval section, the thread's kept turns, the question), or on a continued
 * thread only the new turn (`afterAnswer`, the question, the template's tail): the thread's cache
 * already holds its turns and the retrieval section of the question that snapped it.
 */
export function questionPrefill(q: Question, r: Restored): Int32Array {
  return r.continued ? concatTokens([q.layout.afterAnswer, q.questionTokens, q.layout.tail]) : q.suffix;
}
