/**
 * SnapKV (Li et al. 2024, "SnapKV: LLM Knows What You are Looking for Before Generation",
 * sec. 4): per layer and KV head, score each prefix position by the attention the last w prompt
 * tokens (the observation window) give it, pool the scores over neighbouring positions, keep the
 * top B − w, and always keep the window.
 *
 * This is the selection of RepoSnap's on-device graph (native/patches/0002-snapkv-scoring-graph-of-the-window-s-attention-per-l.patch),
 * written again on the host from the engine's unpooled scores, so that every configuration of
 * the grid runs from one capture per window and goes through the same compaction as the other
 * policies. Same conventions as the engine: "same" padding, average pooling divides by the
 * positions inside the sequence (ggml_pool_1d; PyTorch's avg_pool1d would count the padding),
 * scores averaged over the GQA group. Ties go to the lower position (ggml's top_k is not stable,
 * so the engine may break exact ties differently; the benchmark measures how often).
 */
import { range, type EvictionPolicy, type PolicyInput } from '../policy';

/** Options of {@link SnapKvPolicy} (defaults: RepoSnap's `reposnap ask`). */
export interface SnapKvOptions {
  /** Observation window w [tokens]. Default 32. */
  window?: number;
  /** Pooling kernel size k (odd; 1 = no pooling). Default 7. */
  kernel?: number;
  /** Pooling over neighbouring positions. Default 'max'. */
  pooling?: 'max' | 'avg';
}

/**
 * Pools one row of scores with a kernel of odd size k, stride 1 and "same" padding: out[i] =
 * max or mean of scores[i − ⌊k/2⌋ … i + ⌊k/2⌋] ∩ [0, n). Returns a Float64Array [n].
 */
export function pool1d(scores: ArrayLike<number>, kernel: number, pooling: 'max' | 'avg'): Float64Array {
  const n = scores.length;
  const half = Math.floor(kernel / 2);
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    let acc = pooling === 'max' ? -Infinity : 0;
    let count = 0;
    for (let j = Math.max(0, i - half); j <= Math.min(n - 1, i + half); j++) {
      const v = scores[j]!;
      acc = pooling === 'max' ? Math.max(acc, v) : acc + v;
      count++;
    }
    out[i] = pooling === 'max' ? acc : acc / count;
  }
  return out;
}

/** Indices of the k largest values, ties to the lower index, returned ascending. */
export function topKAscending(values: ArrayLike<number>, k: number): number[] {
  const idx = range(0, values.length);
  idx.sort((a, b) => values[b]! - values[a]! || a - b);
  return idx.slice(0, k).sort((a, b) => a - b);
}

/**
 * SnapKV selection. Needs {@link PolicyInput.windowScores} for its window. When B ≤ w the
 * window alone does not fit: the last B positions are kept (the engine refuses B < w).
 */
export class SnapKvPolicy implements EvictionPolicy {
  readonly id: string;
  readonly family = 'snapkv' as const;
  readonly label: string;
  readonly params: { window: number; kernel: number; pooling: 'max' | 'avg' };
  readonly scoreWindow: number;

  constructor(opts: SnapKvOptions = {}) {
    const window = opts.window ?? 32;
    const kernel = opts.kernel ?? 7;
    const pooling = opts.pooling ?? 'max';
    if (!Number.isInteger(window) || window < 1) throw new Error(`the window must be a positive integer, got ${window}`);
    if (!Number.isInteger(kernel) || kernel < 1 || kernel % 2 === 0) throw new Error(`the pooling kernel must be odd and ≥ 1, got ${kernel}`);
    this.params = { window, kernel, pooling };
    this.scoreWindow = window;
    this.id = `snapkv-w${window}-${pooling}-k${kernel}`;
    this.label = `SnapKV w=${window} ${pooling} k=${kernel}`;
  }

  select(input: PolicyInput): Int32Array {
    const { L, budget: B, nLayer, nHeadKv } = input;
    const w = this.params.window;
    const out = new Int32Array(nLayer * nHeadKv * B);
    if (B <= w) {
      const recent = range(L - B, L);
      for (let r = 0; r < nLayer * nHeadKv; r++) out.set(recent, r * B);
      return out;
    }
    const scores = input.windowScores?.get(w);
    const P = L - w;
    if (!scores || scores.length !== nLayer * nHeadKv * P) {
      throw new Error(`${this.id} needs window scores [${nLayer}][${nHeadKv}][${P}] for w = ${w}`);
    }
    const window = range(P, L);
    for (let r = 0; r < nLayer * nHeadKv; r++) {
      const pooled = pool1d(scores.subarray(r * P, (r + 1) * P), this.params.kernel, this.params.pooling);
      out.set([...topKAscending(pooled, B - w), ...window], r * B);
    }
    return out;
  }
}
