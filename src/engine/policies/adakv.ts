/**
 * AdaKV's allocation (Feng et al. 2024, "Ada-KV: Optimizing KV Cache Eviction by Adaptive Budget
 * Allocation", sec. 3; kvpress's AdaKVPress): per layer, the KV heads share n_head_kv·(B − w)
 * prefix slots by score over all heads; each head first keeps its best ⌊α·(B − w)⌋ (the
 * safeguard), the rest goes to the best remaining scores of the layer.
 *
 * This is the allocation libllama ran before issue 16 (native/patches/0003, `ALLOC_ADAKV`), moved
 * here unchanged: candidates per head by score, best first, ties to the lower position; between
 * heads, equal scores at equal positions go to the higher head (the engine's max-heap of
 * (score, −position, head)); a head takes at most min(P, n_head_kv·(B − w)) positions.
 */
import { topKByScore, type Allocator, type ScoreShape } from './policy';
import { rowOf } from './uniform';

/** Options of {@link AdaKvAllocator}. */
export interface AdaKvOptions {
  /** Safeguard α ∈ [0, 1]: the fraction of B − w every head keeps by its own scores. Default 0.2. */
  alpha?: number;
}

/** AdaKV: per layer, the heads share the layer's prefix slots by score. */
export class AdaKvAllocator implements Allocator {
  readonly id: string;
  readonly family = 'adakv' as const;
  readonly params: { alpha: number };

  /** @throws Error for α outside [0, 1]. */
  constructor(opts: AdaKvOptions = {}) {
    const alpha = opts.alpha ?? 0.2;
    if (!(alpha >= 0 && alpha <= 1)) throw new Error(`the AdaKV safeguard fraction must be in [0, 1], got ${alpha}`);
    this.params = { alpha };
    this.id = `adakv-a${alpha}`;
  }

  /** See {@link Allocator.allocate}. Rows of one layer hold n_head_kv·prefixBudget indices together. */
  allocate(scores: ArrayLike<number>, shape: ScoreShape, prefixBudget: number): number[][] {
    const { nLayer, nHeadKv, P } = shape;
    const k = Math.min(P, prefixBudget * nHeadKv); // candidates per head
    // α as the engine's float32 product: ⌊α·Pb⌋ evaluated in single precision
    const safe = Math.min(k, Math.floor(Math.fround(Math.fround(this.params.alpha) * Math.fround(prefixBudget))));
    const rows: number[][] = [];
    for (let l = 0; l < nLayer; l++) {
      const cand: number[][] = [];
      const rowScores: ArrayLike<number>[] = [];
      for (let h = 0; h < nHeadKv; h++) {
        rowScores.push(rowOf(scores, l * nHeadKv + h, P));
        cand.push(topKByScore(rowScores[h]!, k));
      }
      const take = new Array<number>(nHeadKv).fill(safe);
      let left = nHeadKv * prefixBudget - nHeadKv * safe;
      // the heads' next candidates, merged best first: higher score, then lower position, then higher head
      const better = (a: number, b: number): boolean => {
        const pa = cand[a]![take[a]!]!;
        const pb = cand[b]![take[b]!]!;
        const sa = rowScores[a]![pa]!;
        const sb = rowScores[b]![pb]!;
        return sa !== sb ? sa > sb : pa !== pb ? pa < pb : a > b;
      };
      while (left > 0) {
        let best = -1;
        for (let h = 0; h < nHeadKv; h++) if (take[h]! < k && (best < 0 || better(h, best))) best = h;
        if (best < 0) break;
        take[best]!++;
        left--;
      }
      for (let h = 0; h < nHeadKv; h++) rows.push(cand[h]!.slice(0, take[h]));
    }
    return rows;
  }
}
