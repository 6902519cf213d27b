/**
 * Stage 1, restore: put into the session what the cache store has of this prompt. A `continue`
 * follow-up restores the thread's compressed cache (and does not re-snap); otherwise the longest
 * cached repository prefix is restored (memory, then disk), cut back so that SnapKV's window is
 * prefilled again. An interleaved sliding-window model's prefix is saved with every sliding-layer
 * cell (persist.ts, `snapshot({ cuttable: true })`), so it can be cut too; one whose state lacks the
 * sliding window of the cut (saved without them, or after a restore) is prefilled again. Ends with
 * the `cache` event.
 */
import { hashChain } from '../../cache/hash-chain';
import type { CacheOutcome, PrefixLock, ThreadRetrieval } from '../../cache/store';
import { EngineError } from '../../engine/errors';
import type { ContextReportInput } from '../context-report';
import { windowStart, type Question } from './question';

/** What {@link restore} put into the session. */
export interface Restored {
  /** How the cache served the question. */
  outcome: CacheOutcome;
  /** Tokens restored instead of prefilled (the session's position after restoring). */
  reused: number;
  /**
   * Restoring the cached state [ms]: reading and checking it (`readMs`) and putting it into the
   * engine (the session's restore, and a cut back to SnapKV's window); 0 when nothing was restored.
   */
  restoreMs: number;
  /**
   * Reading and checking the cached state that was restored [ms], part of `restoreMs`: the state
   * file from disk (or the prefix the store keeps in memory) and its index, found and checked
   * against the prompt; 0 when nothing was restored.
   */
  readMs: number;
  /** The thread's compressed cache was restored: prefill only the new turn, no SnapKV. */
  continued: boolean;
  /** Run SnapKV after the prefill (the request's `snap.enabled`, false on a continued thread). */
  snapNow: boolean;
  /** Hash chain of the repository prefix (cache/hash-chain.ts): the store's key for saving it; empty when continued. */
  chain: string[];
  /**
   * A continued thread: the retrieval section its cache holds after the prefix (the question's
   * that last snapped the thread, `ThreadIndex.retrieval`), which the context report and the
   * thread's next save use instead of this question's (not in the prompt); absent when the cache
   * holds none, when not recorded (a thread saved before it was) or when it does not fit the
   * thread's prompt (a damaged index).
   */
  threadRetrieval?: ThreadRetrieval;
  /**
   * The lock of the prefix entry this question prefills and saves (`CacheStore.lockPrefix`), held
   * until the prefix is saved (ask.ts releases it after the persist stage, on every path); absent
   * on a hit, a continued thread, or without the store.
   */
  prefixLock?: PrefixLock;
}

/**
 * The retrieval section the prompt holds right after the repository prefix: on a continued
 * thread the one its cache holds ({@link Restored.threadRetrieval}; this question's is not in the
 * prompt), else this question's (`Question.retrieval`). Undefined when none is known.
 */
export function promptRetrieval(q: Question, r: Restored): ContextReportInput['retrieval'] {
  const retrieval = r.continued ? r.threadRetrieval : q.retrieval;
  return retrieval && retrieval.tokens > 0 ? retrieval : undefined;
}

/** Length of the common prefix of two token sequences. */
function commonPrefix(a: ArrayLike<number>, b: ArrayLike<number>): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/**
 * Restores the thread's cache (a `continue` follow-up whose turns all fit: a trimmed thread
 * re-snaps, its compressed cache still holds the turns that left the prompt), else completes the
 * question (`complete`: its retrieval section, retrieve.ts, which a continued thread's prompt does
 * not hold) and restores the longest cached prefix. A cached state the engine refuses is dropped
 * with a notice.
 * @param complete called once, only when the thread's cache is not continued, before the prefix
 *   is looked up (the prefix's cut depends on the question part's length, `windowStart`).
 * @throws whatever the store, the session or `complete` throws that is not an EngineError from the session.
 */
export async function restore(q: Question, complete: () => Promise<void>): Promise<Restored> {
  const thread = await restoreThread(q);
  if (!thread) await complete();
  const r = thread ?? (await restorePrefix(q));
  q.onEvent({ kind: 'cache', outcome: r.outcome, reusedTokens: r.reused });
  return r;
}

async function restoreThread(q: Question): Promise<Restored | undefined> {
  const { req, session } = q;
  const store = req.store;
  if ((req.followUp ?? 'resnap') !== 'continue' || !store || !req.threadId || q.earlier.length === 0 || q.dropped !== 0) return undefined;
  const tr = performance.now();
  const thread = store.loadThread(req.threadId, { key: q.key, prefix: q.prefix });
  const readMs = performance.now() - tr;
  if (!thread) return undefined;
  try {
    await session.restore(thread.snap, `thread ${req.threadId}`);
    const restoreMs = performance.now() - tr;
    store.touch('thread', thread.index.id);
    const r: Restored = { outcome: 'continue', reused: session.position, restoreMs, readMs, continued: true, snapNow: false, chain: [] };
    const retrieval = thread.index.retrieval;
    if (retrieval && retrieval.tokens > 0 && q.prefix.length + retrieval.tokens <= thread.index.L) r.threadRetrieval = retrieval;
    return r;
  } catch (e) {
    if (!(e instanceof EngineError)) throw e;
    session.clear();
    q.onEvent({ kind: 'notice', message: `the thread's cache cannot be used (${e.message}); re-snapping from the repository` });
    return undefined;
  }
}

async function restorePrefix(q: Question): Promise<Restored> {
  const { req, prefix } = q;
  const store = req.store;
  const chain = hashChain(prefix);
  // another process prefilling this prefix is waited for, and its saved entry restored below
  const onWait = (holder: { pid: number } | undefined) =>
    q.onEvent({ kind: 'notice', message: `waiting for another RepoSnap process prefilling this repository${holder ? ` (pid ${holder.pid})` : ''}…` });
  const lock = store ? await store.lockPrefix(q.key, chain, prefix.length, { signal: req.signal, onWait }) : undefined;
  let r: Restored;
  try {
    r = await restoreCachedPrefix(q, chain);
  } catch (e) {
    await lock?.release();
    throw e;
  }
  // restored whole: nothing is prefilled or saved under the lock
  if (lock && r.outcome === 'hit') void lock.release();
  else if (lock) r.prefixLock = lock;
  return r;
}

async function restoreCachedPrefix(q: Question, chain: string[]): Promise<Restored> {
  const { req, session, prefix } = q;
  const store = req.store;
  const snapNow = req.snap.enabled;
  const r: Restored = { outcome: store ? 'miss' : 'off', reused: 0, restoreMs: 0, readMs: 0, continued: false, snapNow, chain };
  const tr = performance.now();
  const found = store?.findPrefix(q.key, chain);
  const snap = found ? store!.loadPrefix(found.index) : undefined;
  if (!found || !snap) return r;
  const readMs = performance.now() - tr;
  try {
    await session.restore(snap, 'cached prefix');
    const matched = commonPrefix(snap.tokens, prefix);
    // SnapKV scores with the queries of the last w prompt tokens, captured only while they
    // are prefilled: a restored prefix that reaches into the window gives those tokens back
    const keep = snapNow ? Math.min(matched, windowStart(q)) : matched;
    if (keep < session.position) {
      try {
        session.truncate(keep);
      } catch (e) {
        // an interleaved sliding-window model (Gemma 3) whose saved sliding layers lack part of the
        // window of the cut (a state saved with the last n_swa positions only: llama.cpp's default
        // state_write; measured on the synthetic gemma3: logits off by up to 3.4): prefill the
        // repository instead (issue 17)
        if (!(e instanceof EngineError) || session.stats().swaKvSize === 0) throw e;
        session.clear();
        return r;
      }
    }
    r.restoreMs = performance.now() - tr;
    r.readMs = readMs;
    r.reused = keep;
    r.outcome = matched === prefix.length ? 'hit' : 'partial';
    store!.touch('prefix', found.index.id);
  } catch (e) {
    if (!(e instanceof EngineError)) throw e;
    session.clear();
    q.onEvent({ kind: 'notice', message: `the cached prefix cannot be used (${e.message}); prefilling the repository` });
  }
  return r;
}
