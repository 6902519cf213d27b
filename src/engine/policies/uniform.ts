/**
 * The uniform allocation (SnapKV's own, Li et al. 2024, sec. 4; kvpress's default): every
 * (layer, KV head) keeps its own top B − w prefix positions. The engine runs this one on the
 * device (`llama_snapkv_compact`, the fast path); this host version serves other scorers and the
 * benchmark's grid.
 */
import { topKByScore, type Allocator, type ScoreShape } from './policy';

/** Every (layer, KV head) keeps its top prefixBudget positions (ties to the lower position). */
export class UniformAllocator implements Allocator {
  readonly id = 'uniform';
  readonly family = 'snapkv' as const;
  readonly params = {};

  /** See {@link Allocator.allocate}. */
  allocate(scores: ArrayLike<number>, shape: ScoreShape, prefixBudget: number): number[][] {
    const { nLayer, nHeadKv, P } = shape;
    const rows: number[][] = [];
    for (let r = 0; r < nLayer * nHeadKv; r++) rows.push(topKByScore(rowOf(scores, r, P), prefixBudget));
    return rows;
  }
}

/** Row r (= layer·nHeadKv + head) of a [rows][P] score layout. */
export function rowOf(scores: ArrayLike<number>, r: number, P: number): ArrayLike<number> {
  if (scores instanceof Float32Array || scores instanceof Float64Array) return scores.subarray(r * P, (r + 1) * P);
  return Array.from({ length: P }, (_, i) => scores[r * P + i]!);
}
