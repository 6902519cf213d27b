/**
 * Stage 1, restore: put into the session what the cache store has of this prompt. A `continue`
 * follow-up restores the thread's compressed cache (and does not re-snap); otherwise the longest
 * cached repository prefix is restored (memory, then disk), cut back so that SnapKV's window is
 * prefilled again; an interleaved sliding-window model's prefix only when it needs no cut (its
 * saved sliding-window cache holds the last n_swa positions only). Ends with the `cache` event.
 */
import { hashChain } from '../../cache/hash-chain';
import type { CacheOutcome } from '../../cache/store';
import { EngineError } from '../../engine/errors';
import { windowStart, type Question } from './question';

/** What {@link restore} put into the session. */
export interface Restored {
  /** How the cache served the question. */
  outcome: CacheOutcome;
  /** Tokens restored instead of prefilled (the session's position after restoring). */
  reused: number;
  /** Restoring the cached state [ms]. */
  restoreMs: number;
  /** The thread's compressed cache was restored: prefill only the new turn, no SnapKV. */
  continued: boolean;
  /** Run SnapKV after the prefill (the request's `snap.enabled`, false on a continued thread). */
  snapNow: boolean;
  /** Hash chain of the repository prefix (cache/hash-chain.ts): the store's key for saving it; empty when continued. */
  chain: string[];
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
 * re-snaps, its compressed cache still holds the turns that left the prompt), else the longest
 * cached prefix. A cached state the engine refuses is dropped with a notice.
 * @throws whatever the store or the session throws that is not an EngineError.
 */
export async function restore(q: Question): Promise<Restored> {
  const r = (await restoreThread(q)) ?? (await restorePrefix(q));
  q.onEvent({ kind: 'cache', outcome: r.outcome, reusedTokens: r.reused });
  return r;
}

async function restoreThread(q: Question): Promise<Restored | undefined> {
  const { req, session } = q;
  const store = req.store;
  if ((req.followUp ?? 'resnap') !== 'continue' || !store || !req.threadId || q.earlier.length === 0 || q.dropped !== 0) return undefined;
  const thread = store.loadThread(req.threadId, { key: q.key, prefix: q.prefix });
  if (!thread) return undefined;
  try {
    const tr = performance.now();
    await session.restore(thread.snap, `thread ${req.threadId}`);
    const restoreMs = performance.now() - tr;
    store.touch('thread', thread.index.id);
    return { outcome: 'continue', reused: session.position, restoreMs, continued: true, snapNow: false, chain: [] };
  } catch (e) {
    if (!(e instanceof EngineError)) throw e;
    session.clear();
    q.onEvent({ kind: 'notice', message: `the thread's cache cannot be used (${e.message}); re-snapping from the repository` });
    return undefined;
  }
}

async function restorePrefix(q: Question): Promise<Restored> {
  const { req, session, prefix } = q;
  const store = req.store;
  const snapNow = req.snap.enabled;
  const chain = hashChain(prefix);
  const r: Restored = { outcome: store ? 'miss' : 'off', reused: 0, restoreMs: 0, continued: false, snapNow, chain };
  const found = store?.findPrefix(q.key, chain);
  const snap = found ? store!.loadPrefix(found.index) : undefined;
  if (!found || !snap) return r;
  try {
    const tr = performance.now();
    await session.restore(snap, 'cached prefix');
    const matched = commonPrefix(snap.tokens, prefix);
    // SnapKV scores with the queries of the last w prompt tokens, captured only while they
    // are prefilled: a restored prefix that reaches into the window gives those tokens back
    const keep = snapNow ? Math.min(matched, windowStart(q)) : matched;
    if (keep < session.position && session.stats().swaKvSize > 0) {
      // an interleaved sliding-window model (Gemma 3): llama.cpp saves its sliding layers' cache
      // with the last n_swa positions only (state_write skips the cells the window masks), so a
      // state cut at keep < its end lacks the window of the positions after keep (measured on
      // the synthetic gemma3: logits off by up to 3.4). Only a whole restored prefix is usable:
      // prefill the repository instead (issue 17)
      session.clear();
      return r;
    }
    if (keep < session.position) session.truncate(keep);
    r.restoreMs = performance.now() - tr;
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
