/**
 * A query-agnostic base topped up per question (issue 16, item 4): every (layer, KV head) keeps
 * `round(baseShare · (B − w))` prefix positions chosen by key norm alone (./key-norm.ts: the lowest
 * ‖k‖₂, Devoto et al. 2024, sec. 3), whatever the question, and fills the rest of its prefix
 * budget with SnapKV's best pooled window-attention scores among the other positions (./snapkv.ts,
 * Li et al. 2024, sec. 4); the last w tokens (the window) are kept as SnapKV keeps them. The base
 * is the part of the selection a thread could compress once for several questions; the top-up is
 * what the question adds. baseShare 0 is SnapKV, 1 is the key-norm scorer with the window as tail.
 *
 * As a {@link Scorer}: SnapKV's pooled scores, with the base positions raised to +∞ so that a
 * uniform top-(B − w) takes all of them first (ties among them cannot matter: there are exactly as
 * many as the base). Only the uniform allocation: AdaKV and PyramidKV compare scores across heads
 * and layers, which +∞ would distort.
 */
import type { PolicyInput, Scorer } from './policy';
import type { SnapKvScorer } from './snapkv';

/** Options of {@link KeyNormTopUpScorer}. */
export interface KeyNormTopUpOptions {
  /** Share of the prefix budget B − w chosen by key norm, in [0, 1]. Default 0.5. */
  baseShare?: number;
}

/** Key-norm base + SnapKV top-up (see the file's comment). */
export class KeyNormTopUpScorer implements Scorer {
  readonly id: string;
  readonly family = 'knorm' as const;
  readonly label: string;
  readonly params: { window: number; kernel: number; pooling: 'max' | 'avg'; scorer: 'key-norm-topup'; baseShare: number };
  /** SnapKV's window w: its pooled scores are read. */
  readonly scoreWindow: number;
  /** SnapKV's window w. */
  readonly protectedTail: number;
  /** The base reads {@link PolicyInput.keyNorms} (`llama_snapkv_key_norms`). */
  readonly readsKeyNorms = true;

  /** @throws Error for a base share outside [0, 1]. */
  constructor(
    readonly snapkv: SnapKvScorer,
    opts: KeyNormTopUpOptions = {},
  ) {
    const baseShare = opts.baseShare ?? 0.5;
    if (!(baseShare >= 0 && baseShare <= 1)) throw new Error(`the key-norm base share must be in [0, 1], got ${baseShare}`);
    this.params = { ...snapkv.params, scorer: 'key-norm-topup', baseShare };
    this.scoreWindow = snapkv.scoreWindow;
    this.protectedTail = snapkv.protectedTail;
    this.id = `knorm${baseShare}-topup-${snapkv.id}`;
    this.label = `key norm ${Math.round(baseShare * 100)} % + ${snapkv.label}`;
  }

  /** Prefix positions of the base per (layer, KV head) at budget B: round(baseShare · (B − w)), 0 when B ≤ w. */
  baseCount(budget: number): number {
    return Math.round(this.params.baseShare * Math.max(0, budget - this.protectedTail));
  }

  /**
   * [nLayer][nHeadKv][L − w]: SnapKV's pooled scores, +∞ at each row's {@link baseCount} prefix
   * positions of lowest key norm (ties to the lower position).
   * @throws Error when the key norms ([nLayer][nHeadKv][L]) or SnapKV's scores are missing or mis-sized.
   */
  score(input: PolicyInput): Float64Array {
    const { L, nLayer, nHeadKv } = input;
    const norms = input.keyNorms;
    if (!norms || norms.length !== nLayer * nHeadKv * L) {
      throw new Error(`${this.id} needs key norms [${nLayer}][${nHeadKv}][${L}], got ${norms ? norms.length : 'none'}`);
    }
    const out = Float64Array.from(this.snapkv.score(input));
    const P = L - this.protectedTail;
    const b = Math.min(P, this.baseCount(input.budget));
    for (let r = 0; r < nLayer * nHeadKv; r++) {
      const order = Array.from({ length: P }, (_, p) => p).sort((x, y) => norms[r * L + x]! - norms[r * L + y]! || x - y);
      for (let i = 0; i < b; i++) out[r * P + order[i]!] = Infinity;
    }
    return out;
  }
}
