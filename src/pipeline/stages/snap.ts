/**
 * Stage 3, snap: SnapKV compresses the prompt's KV cache with the request's options
 * (config/snap-options.ts); a refusal of the engine (a guard: SWA, ALiBi, …) answers with full
 * attention after a notice.
 */
import { EngineError, throwIfAborted } from '../../engine/errors';
import type { SnapOptions } from '../../config/snap-options';
import type { AttentionInput } from '../context-report';
import type { Prefilled } from './prefill';
import type { Question } from './question';
import type { Restored } from './restore';

/** What {@link snap} did. */
export interface Snapped {
  /** Cells kept per layer and KV head (the cells before when nothing was compacted). */
  B: number;
  snapMs: number;
  /** What the model attends to, for the context report. */
  attention: AttentionInput;
}

/** The engine's parameters of the options (what it runs and a thread entry records). */
export function snapParams(s: SnapOptions): { window: number; budget: number; kernel: number; pooling: SnapOptions['pooling']; allocation: SnapOptions['allocation'] } {
  return { window: s.window, budget: s.budget, kernel: s.kernel, pooling: s.pooling, allocation: s.allocation };
}

/**
 * Runs SnapKV when the restore stage says so, then the request's `afterSnap`.
 * @throws AbortError when the request was cancelled before.
 */
export async function snap(q: Question, r: Restored, p: Prefilled): Promise<Snapped> {
  const out: Snapped = { B: p.before.cells, snapMs: 0, attention: r.continued ? { kind: 'continued' } : { kind: 'full' } };
  if (!r.snapNow) return out;
  throwIfAborted(q.req.signal);
  try {
    const s = await q.session.snap(snapParams(q.req.snap));
    out.B = s.B;
    out.snapMs = s.ms;
    q.onEvent({ kind: 'snap', L: s.L, B: s.B, ms: s.ms, compacted: s.compacted });
    if (s.compacted) out.attention = { kind: 'snapkv', kept: { positions: q.session.snapKept(), nLayer: s.nLayer, nHeadKv: s.nHeadKv } };
    q.req.afterSnap?.(q.session);
  } catch (e) {
    if (!(e instanceof EngineError)) throw e;
    q.onEvent({ kind: 'notice', message: `${e.message}; answering with full attention` });
  }
  return out;
}
