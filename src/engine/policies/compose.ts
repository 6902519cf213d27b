/**
 * A score-based policy: a {@link Scorer} × an {@link Allocator} (kvpress's ScorerPress wrapped by
 * an allocation press such as AdaKVPress). The scorer ranks the prefix positions of every
 * (layer, KV head); the allocator shares the prefix budget B − w among them; every
 * (layer, KV head) also keeps the scorer's protected tail (SnapKV's observation window).
 */
import { AdaKvAllocator } from './adakv';
import { CodePriorScorer } from './code-prior';
import { KeyNormScorer } from './key-norm';
import { KeyNormTopUpScorer } from './key-norm-topup';
import { range, type Allocator, type EvictionPolicy, type PolicyFamily, type PolicyInput, type Scorer } from './policy';
import { PyramidAllocator } from './pyramid';
import { SnapKvScorer, type SnapKvScorerOptions } from './snapkv';
import { UniformAllocator } from './uniform';

/** A scorer composed with an allocator. */
export class ScoredPolicy implements EvictionPolicy {
  readonly id: string;
  readonly family: PolicyFamily;
  readonly label: string;
  readonly params: Readonly<Record<string, number | string>>;
  readonly scoreWindow: number;

  constructor(
    readonly scorer: Scorer,
    readonly allocator: Allocator,
  ) {
    const uniform = allocator.id === 'uniform';
    this.id = uniform ? scorer.id : `${allocator.id}-${scorer.id}`;
    this.family = uniform ? scorer.family : allocator.family;
    this.label = uniform ? scorer.label : `${scorer.label}, ${allocator.id}`;
    this.params = uniform ? scorer.params : { ...scorer.params, allocation: allocator.id, ...allocator.params };
    this.scoreWindow = scorer.scoreWindow;
  }

  /**
   * Whether the engine's own SnapKV top-k computes this policy on the device
   * (`llama_snapkv_compact`, the fast path): SnapKV's scorer alone (no prior wrapped around it)
   * with the uniform allocation. Any other policy scores on the device (`llama_snapkv_score`),
   * selects here and compacts the chosen rows (`llama_snapkv_compact_kept`).
   */
  get onDevice(): boolean {
    return this.scorer instanceof SnapKvScorer && this.allocator.id === 'uniform';
  }

  /**
   * Kept positions [nLayer][nHeadKv][C] (see {@link EvictionPolicy.select}): per (layer, KV head)
   * the allocator's prefix positions, ascending, then the protected tail L − w … L − 1; C = B for
   * the uniform allocation, the longest row for another (shorter rows −1 padded). When B ≤ w the
   * tail alone does not fit: every (layer, KV head) keeps the last B positions.
   * @throws Error when the scorer's input is missing.
   */
  select(input: PolicyInput): Int32Array {
    const { L, budget: B, nLayer, nHeadKv } = input;
    const w = this.scorer.protectedTail;
    const nRows = nLayer * nHeadKv;
    if (B <= w) {
      const out = new Int32Array(nRows * B);
      const recent = range(L - B, L);
      for (let r = 0; r < nRows; r++) out.set(recent, r * B);
      return out;
    }
    const P = L - w;
    const prefixRows = this.allocator.allocate(this.scorer.score(input), { nLayer, nHeadKv, P }, B - w);
    const tail = range(P, L);
    const C = Math.max(...prefixRows.map((r) => r.length)) + w;
    const out = new Int32Array(nRows * C).fill(-1);
    for (let r = 0; r < nRows; r++) {
      const row = [...prefixRows[r]!].sort((a, b) => a - b);
      out.set(row, r * C);
      out.set(tail, r * C + row.length);
    }
    return out;
  }
}

/**
 * SnapKV with the uniform allocation (Li et al. 2024, sec. 4): every (layer, KV head) keeps its
 * top B − w pooled window-attention scores and the window. Ties go to the lower position (ggml's
 * top_k is not stable, so the engine's device path may break exact ties differently).
 */
export class SnapKvPolicy extends ScoredPolicy {
  declare readonly scorer: SnapKvScorer;
  declare readonly params: { window: number; kernel: number; pooling: 'max' | 'avg' };

  constructor(opts: SnapKvScorerOptions = {}) {
    super(new SnapKvScorer(opts), new UniformAllocator());
  }
}

/**
 * How the budget is shared among layers and KV heads:
 * - `uniform`: SnapKV, every (layer, KV head) keeps B (Li et al. 2024, sec. 4);
 * - `adakv`: per layer the KV heads share n_head_kv·(B − w) prefix slots by score, each at least
 *   α·(B − w) (Feng et al. 2024, "Ada-KV", sec. 3);
 * - `pyramid`: prefix budgets fall linearly with depth, the last layer's (B − w)/β, n_layer·(B − w)
 *   in all (Cai et al. 2024, "PyramidKV", sec. 3.3).
 * llama.cpp's cells are shared by every layer and head, so a non-uniform allocation holds
 * C = (largest per-head budget) cells and hides each head's unused ones with a per-head mask: the
 * same total budget then costs C cells of memory, not B.
 */
export type BudgetAllocation = 'uniform' | 'adakv' | 'pyramid';

/**
 * The scorer that ranks the prefix positions:
 * - `snapkv`: SnapKV's pooled window attention (Li et al. 2024, sec. 4; ./snapkv.ts), query-aware;
 * - `key-norm`: −‖k‖₂ of each stored key (Devoto et al. 2024, sec. 3; ./key-norm.ts),
 *   query-agnostic; it keeps the same last w tokens SnapKV's window does;
 * - `key-norm-topup`: a key-norm base of {@link SnapPolicyOptions.baseShare} of the prefix budget,
 *   topped up per question by SnapKV (./key-norm-topup.ts); the uniform allocation only.
 */
export type SnapScorer = 'snapkv' | 'key-norm' | 'key-norm-topup';

/** The product's SnapKV configuration, as `EngineSession.snap` takes it. */
export interface SnapPolicyOptions extends SnapKvScorerOptions {
  /** Default 'snapkv'. */
  scorer?: SnapScorer;
  /** `key-norm-topup`: the key-norm base's share of the prefix budget, in [0, 1]. Default 0.5. */
  baseShare?: number;
  /** Default 'uniform'. */
  allocation?: BudgetAllocation;
  /** AdaKV safeguard α ∈ [0, 1]. Default 0.2. */
  adaAlpha?: number;
  /** PyramidKV β ≥ 1. Default 20. */
  pyramidBeta?: number;
  /**
   * The code-aware prior (./code-prior.ts): per prompt position, the flags of a definition's
   * signature line and of an identifier the question names; absent = SnapKV's scores alone.
   */
  prior?: { flags: Uint8Array; bonus?: number };
}

/**
 * The allocator of a {@link BudgetAllocation}.
 * @throws Error for an unknown allocation or parameters out of range.
 */
export function allocatorFor(opts: Pick<SnapPolicyOptions, 'allocation' | 'adaAlpha' | 'pyramidBeta'>): Allocator {
  switch (opts.allocation ?? 'uniform') {
    case 'uniform':
      return new UniformAllocator();
    case 'adakv':
      return new AdaKvAllocator({ alpha: opts.adaAlpha });
    case 'pyramid':
      return new PyramidAllocator({ beta: opts.pyramidBeta });
    default:
      throw new Error(`unknown budget allocation '${String(opts.allocation)}' (uniform, adakv, pyramid)`);
  }
}

/**
 * The product's policy: the chosen scorer (SnapKV's by default, under the code-aware prior when
 * `prior` is given; the key-norm scorer protecting the last `window` tokens; the key-norm base
 * topped up by SnapKV) × the chosen allocation.
 * @throws Error for invalid options (see {@link SnapKvScorer}, {@link KeyNormScorer},
 *   {@link KeyNormTopUpScorer}, {@link CodePriorScorer}, {@link allocatorFor}), an unknown scorer,
 *   the code prior over a key-norm scorer (its bonus is a multiple of a row's mean SnapKV score),
 *   or the top-up with a non-uniform allocation.
 */
export function snapPolicy(opts: SnapPolicyOptions = {}): ScoredPolicy {
  const scorer = opts.scorer ?? 'snapkv';
  if (scorer === 'key-norm-topup') {
    if (opts.prior) throw new Error(`the code prior applies to SnapKV's scores, not to the key-norm top-up`);
    if ((opts.allocation ?? 'uniform') !== 'uniform') throw new Error(`the key-norm top-up needs the uniform allocation, got '${opts.allocation}'`);
    return new ScoredPolicy(new KeyNormTopUpScorer(new SnapKvScorer(opts), { baseShare: opts.baseShare }), allocatorFor(opts));
  }
  if (scorer === 'key-norm') {
    if (opts.prior) throw new Error(`the code prior applies to SnapKV's scores, not to the key-norm scorer`);
    const snapkv = new SnapKvScorer(opts); // checks the window as SnapKV does
    return new ScoredPolicy(new KeyNormScorer({ tail: snapkv.params.window }), allocatorFor(opts));
  }
  if (scorer !== 'snapkv') throw new Error(`unknown scorer '${String(scorer)}' (snapkv, key-norm, key-norm-topup)`);
  const snapkv = new SnapKvScorer(opts);
  return new ScoredPolicy(opts.prior ? new CodePriorScorer(snapkv, opts.prior) : snapkv, allocatorFor(opts));
}
