/**
 * The key-norm scorer (Devoto et al. 2024, "A Simple and Effective L2 Norm-Based Strategy for KV
 * Cache Compression", sec. 3; kvpress's KnormPress): keys with a LOW L2 norm draw high attention,
 * so every (layer, KV head) keeps the prefix positions whose stored key has the lowest norm,
 * score = −‖k‖₂. Query-agnostic: it reads no window queries and no attention, only the keys
 * already in the KV cache, so one compression serves any question asked after it.
 *
 * The engine computes the norms on the cache's own backend (`llama_snapkv_key_norms`,
 * native/patches/0007: the key rows as stored, RoPE applied, which a rotation leaves unchanged;
 * a quantized cache's keys dequantized first); given them ({@link PolicyInput.keyNorms}) the
 * scorer negates them. The last `tail` positions are not scored: every (layer, KV head) keeps them
 * (RepoSnap's prompt ends with the question; the product protects the same w tokens SnapKV does,
 * so the two differ only in how they rank the prefix). kvpress's KnormPress protects none
 * (`tail` 0).
 */
import type { PolicyInput, Scorer } from './policy';

/** Options of {@link KeyNormScorer}. */
export interface KeyNormScorerOptions {
  /** Trailing positions every (layer, KV head) keeps, unscored [tokens]. Default 0 (KnormPress). */
  tail?: number;
}

/** −(L2 norm of each stored key) per (layer, KV head): the lowest-norm keys rank first. */
export class KeyNormScorer implements Scorer {
  readonly id: string;
  readonly family = 'knorm' as const;
  readonly label: string;
  readonly params: { scorer: 'key-norm'; tail: number };
  /** Needs no observation window: 0. */
  readonly scoreWindow = 0;
  readonly protectedTail: number;
  /** Reads {@link PolicyInput.keyNorms} (the engine's `llama_snapkv_key_norms`). */
  readonly readsKeyNorms = true;

  /** @throws Error for a tail that is negative or not an integer. */
  constructor(opts: KeyNormScorerOptions = {}) {
    const tail = opts.tail ?? 0;
    if (!Number.isInteger(tail) || tail < 0) throw new Error(`the key-norm scorer's protected tail must be an integer ≥ 0, got ${tail}`);
    this.params = { scorer: 'key-norm', tail };
    this.protectedTail = tail;
    this.id = `knorm-t${tail}`;
    this.label = tail > 0 ? `key norm (last ${tail} kept)` : 'key norm';
  }

  /**
   * [nLayer][nHeadKv][L − tail] scores, entry p = −‖k_p‖₂ of that (layer, KV head), from
   * {@link PolicyInput.keyNorms} ([nLayer][nHeadKv][L]).
   * @throws Error when the norms are missing or have the wrong length.
   */
  score(input: PolicyInput): Float64Array {
    const { L, nLayer, nHeadKv } = input;
    const norms = input.keyNorms;
    if (!norms || norms.length !== nLayer * nHeadKv * L) {
      throw new Error(`${this.id} needs key norms [${nLayer}][${nHeadKv}][${L}], got ${norms ? norms.length : 'none'}`);
    }
    const P = L - this.protectedTail;
    const out = new Float64Array(nLayer * nHeadKv * P);
    for (let r = 0; r < nLayer * nHeadKv; r++) {
      for (let p = 0; p < P; p++) out[r * P + p] = -norms[r * L + p]!;
    }
    return out;
  }
}
