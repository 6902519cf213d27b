/**
 * SnapKV's scorer (Li et al. 2024, "SnapKV: LLM Knows What You are Looking for Before
 * Generation", sec. 4): per layer and KV head, each prefix position scores the attention the last
 * w prompt tokens (the observation window) give it, summed over the window, averaged over the GQA
 * group, then pooled over neighbouring positions. The window itself is kept by every head.
 *
 * The engine computes these scores on the device (native/patches/0002; `llama_snapkv_score`);
 * given them ({@link PolicyInput.pooledScores}) the scorer returns them as they are. Otherwise it
 * pools the engine's unpooled window scores on the host (the fidelity benchmark's grid: one
 * capture per window for every kernel and pooling), with the engine's conventions: "same"
 * padding, average pooling divides by the positions inside the sequence (ggml_pool_1d; PyTorch's
 * avg_pool1d would count the padding).
 */
import type { PolicyInput, Scorer } from './policy';

/** Options of {@link SnapKvScorer} (defaults: RepoSnap's `reposnap ask`). */
export interface SnapKvScorerOptions {
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

/** SnapKV's pooled window-attention scores. */
export class SnapKvScorer implements Scorer {
  readonly id: string;
  readonly family = 'snapkv' as const;
  readonly label: string;
  readonly params: { window: number; kernel: number; pooling: 'max' | 'avg' };
  readonly scoreWindow: number;
  readonly protectedTail: number;

  /** @throws Error for a window < 1 or an even or non-positive kernel. */
  constructor(opts: SnapKvScorerOptions = {}) {
    const window = opts.window ?? 32;
    const kernel = opts.kernel ?? 7;
    const pooling = opts.pooling ?? 'max';
    if (!Number.isInteger(window) || window < 1) throw new Error(`the window must be a positive integer, got ${window}`);
    if (!Number.isInteger(kernel) || kernel < 1 || kernel % 2 === 0) throw new Error(`the pooling kernel must be odd and ≥ 1, got ${kernel}`);
    this.params = { window, kernel, pooling };
    this.scoreWindow = window;
    this.protectedTail = window;
    this.id = `snapkv-w${window}-${pooling}-k${kernel}`;
    this.label = `SnapKV w=${window} ${pooling} k=${kernel}`;
  }

  /**
   * [nLayer][nHeadKv][L − w] pooled scores: {@link PolicyInput.pooledScores} when given, else the
   * window scores of w pooled here.
   * @throws Error when neither is there with the expected length.
   */
  score(input: PolicyInput): Float32Array | Float64Array {
    const { L, nLayer, nHeadKv } = input;
    const P = L - this.params.window;
    const n = nLayer * nHeadKv * P;
    if (input.pooledScores) {
      if (input.pooledScores.length !== n) throw new Error(`${this.id}: pooled scores have ${input.pooledScores.length} entries, expected [${nLayer}][${nHeadKv}][${P}]`);
      return input.pooledScores;
    }
    const raw = input.windowScores?.get(this.params.window);
    if (!raw || raw.length !== n) throw new Error(`${this.id} needs window scores [${nLayer}][${nHeadKv}][${P}] for w = ${this.params.window}`);
    if (this.params.kernel === 1) return raw;
    const out = new Float64Array(n);
    for (let r = 0; r < nLayer * nHeadKv; r++) out.set(pool1d(raw.subarray(r * P, (r + 1) * P), this.params.kernel, this.params.pooling), r * P);
    return out;
  }
}
