/**
 * PyramidKV's allocation (Cai et al. 2024, "PyramidKV: Dynamic KV Cache Compression based on
 * Pyramidal Information Funneling", sec. 3.3; kvpress's PyramidKVPress): prefix budgets fall
 * linearly with depth, an arithmetic sequence from 2(B − w) − (B − w)/β at layer 0 to (B − w)/β at
 * the last, n_layer·(B − w) in all; every head of a layer keeps the layer's budget of its own
 * best positions. Uniform when the first layer would need more than the prefix (or one layer).
 *
 * This is the allocation libllama ran before issue 16 (native/patches/0003, `ALLOC_PYRAMID`), moved
 * here unchanged, with its rounding: each budget rounded half away from zero and clamped to
 * [0, P], then the total made exactly n_layer·(B − w) by giving to (or taking from) the layers in
 * turn from the first.
 */
import { topKByScore, type Allocator, type ScoreShape } from './policy';
import { rowOf } from './uniform';

/** Options of {@link PyramidAllocator}. */
export interface PyramidOptions {
  /** β ≥ 1: average prefix budget ÷ the last layer's. Default 20 (the paper's). */
  beta?: number;
}

/**
 * Per-layer prefix budgets of PyramidKV: [nLayer] integers in [0, P] summing to nLayer·prefixBudget
 * (all prefixBudget when the pyramid does not fit).
 */
export function pyramidBudgets(nLayer: number, P: number, prefixBudget: number, beta: number): number[] {
  const budgets = new Array<number>(nLayer).fill(prefixBudget);
  const minNum = prefixBudget / beta;
  const maxNum = 2 * prefixBudget - minNum;
  if (nLayer <= 1 || maxNum > P) return budgets;
  const step = (maxNum - minNum) / (nLayer - 1);
  let sum = 0;
  for (let l = 0; l < nLayer; l++) {
    const x = maxNum - l * step;
    budgets[l] = Math.min(P, Math.max(0, Math.sign(x) * Math.round(Math.abs(x)))); // llround: half away from zero
    sum += budgets[l]!;
  }
  const total = nLayer * prefixBudget;
  for (let l = 0; sum !== total; l = (l + 1) % nLayer) {
    const d = sum < total ? 1 : -1;
    if (budgets[l]! + d >= 0 && budgets[l]! + d <= P) {
      budgets[l]! += d;
      sum += d;
    }
  }
  return budgets;
}

/** PyramidKV: per-layer budgets falling linearly with depth. */
export class PyramidAllocator implements Allocator {
  readonly id: string;
  readonly family = 'pyramid' as const;
  readonly params: { beta: number };

  /** @throws Error for β < 1. */
  constructor(opts: PyramidOptions = {}) {
    const beta = opts.beta ?? 20;
    if (!(beta >= 1)) throw new Error(`the PyramidKV beta must be ≥ 1, got ${beta}`);
    this.params = { beta };
    this.id = `pyramid-b${beta}`;
  }

  /** See {@link Allocator.allocate}. */
  allocate(scores: ArrayLike<number>, shape: ScoreShape, prefixBudget: number): number[][] {
    const { nLayer, nHeadKv, P } = shape;
    const budgets = pyramidBudgets(nLayer, P, prefixBudget, this.params.beta);
    const rows: number[][] = [];
    for (let l = 0; l < nLayer; l++) for (let h = 0; h < nHeadKv; h++) rows.push(topKByScore(rowOf(scores, l * nHeadKv + h, P), budgets[l]!));
    return rows;
  }
}
