/**
 * Stage 5, persist: what the cache store keeps of a question. The repository prefix is saved
 * right after its prefill (before the question is appended; in the background, cache/store.ts);
 * after the answer, the thread (its turns and its compressed cache) and the question's record.
 */
import type { AskStats } from '../ask';
import type { Decoded } from './decode';
import type { Question } from './question';
import { promptRetrieval, type Restored } from './restore';
import { snapParams } from './snap';

/**
 * Saves the session (the repository prefix, just prefilled) unless it was restored whole or the store
 * is off. Cuttable: an interleaved sliding-window model's sliding layers save every cell they hold,
 * so that a later prompt that shares part of the prefix can restore it and cut it (restore.ts).
 */
export async function persistPrefix(q: Question, r: Restored): Promise<void> {
  const store = q.req.store;
  if (store && r.outcome !== 'hit' && store.isEnabled) store.savePrefix(q.key, r.chain, await q.session.snapshot({ cuttable: true }));
}

/**
 * Saves the thread with its new turn and the session's compressed cache (with the retrieval
 * section the cache holds, {@link promptRetrieval}), and records the question.
 */
export async function persistAnswer(q: Question, r: Restored, d: Decoded, stats: AskStats): Promise<void> {
  const { req, session } = q;
  const store = req.store;
  if (store && req.threadId) {
    const answerTokens = session.tokens.slice(d.answerStart);
    const retrieval = promptRetrieval(q, r);
    store.saveThread(
      {
        id: req.threadId,
        key: q.key,
        turns: [...q.history, { question: req.question, answer: d.text, answerTokens }],
        prefixTokens: q.prefix.length,
        snap: req.snap.enabled ? snapParams(req.snap) : null,
        ...(retrieval ? { retrieval: { tokens: retrieval.tokens, files: retrieval.files.map((f) => ({ ...f })) } } : {}),
        L: stats.L,
        B: stats.B,
      },
      await session.snapshot(),
    );
  }
  store?.recordQuestion({
    at: Date.now(),
    question: req.question.slice(0, 200),
    outcome: stats.cache,
    key: q.key,
    L: stats.L,
    B: stats.B,
    reusedTokens: stats.reusedTokens,
    prefilledTokens: stats.prefilledTokens,
    prefillMs: stats.prefillMs,
    snapMs: stats.snapMs,
    ttftMs: stats.ttftMs,
    decodeTokS: stats.decodeTokS,
  });
}
