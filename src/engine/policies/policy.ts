/**
 * The eviction-policy interface (issue 16, in the shape of kvpress's presses): a policy chooses,
 * for one sequence of L tokens and a budget B, the positions every (layer, KV head) keeps; the
 * engine's compaction (`llama_snapkv_compact_kept`, or `llama_snapkv_compact` for the uniform
 * SnapKV fast path) then moves exactly those rows to the sequence's first cells. A policy only
 * chooses; the mechanics live in the engine.
 *
 * A score-based policy is a {@link Scorer} (how important is each prefix position to each
 * (layer, KV head)) composed with an {@link Allocator} (how many positions each (layer, KV head)
 * keeps, and which): see ./compose.ts. Baselines that need no scores (StreamingLLM, keep-recent,
 * random; bench/fidelity/policies) implement {@link EvictionPolicy} directly.
 */

/** What a policy sees when it chooses the kept positions of one sequence. */
export interface PolicyInput {
  /** Sequence length L [tokens]; the sequence holds positions 0…L−1, one cell each. */
  L: number;
  /** Budget B [cells kept per layer and KV head, on average over them], 1 ≤ B ≤ L. */
  budget: number;
  /** Layers of the model. */
  nLayer: number;
  /** KV heads per layer (the same in every layer). */
  nHeadKv: number;
  /**
   * Unpooled window-attention scores by observation window w, for the windows the policies ask
   * for ({@link EvictionPolicy.scoreWindow}): Float32Array [nLayer][nHeadKv][L − w], entry p = the
   * softmax attention that the queries of the last w positions give to prefix position p, summed
   * over the window and averaged over the GQA group (the engine's SnapKV scores with kernel 1).
   */
  windowScores?: ReadonlyMap<number, Float32Array>;
  /**
   * Scores already pooled by the engine for the policy's own scorer configuration
   * (`llama_snapkv_score` with its window, kernel and pooling): Float32Array [nLayer][nHeadKv][L − w].
   * When present a scorer uses them as they are (the product's path: the same f32 values the
   * on-device selection sees) instead of pooling {@link windowScores} on the host.
   */
  pooledScores?: Float32Array;
  /**
   * L2 norm of every stored key row (`llama_snapkv_key_norms`): Float32Array [nLayer][nHeadKv][L],
   * entry p = ‖k_p‖₂ of the sequence's p-th position in that (layer, KV head). What a scorer with
   * {@link Scorer.readsKeyNorms} reads.
   */
  keyNorms?: Float32Array;
}

/** Family of a policy (what the plots colour by). */
export type PolicyFamily = 'snapkv' | 'adakv' | 'pyramid' | 'streaming-llm' | 'recent' | 'random' | 'knorm' | 'code-prior';

/** An eviction policy: chooses the kept positions of every (layer, KV head). */
export interface EvictionPolicy {
  /** Stable id used in JSON results, e.g. `snapkv-w32-max-k7`. */
  readonly id: string;
  readonly family: PolicyFamily;
  /** Short legend label, e.g. `SnapKV w=32 max k=7`. */
  readonly label: string;
  /** The policy's parameters, as recorded in JSON results. */
  readonly params: Readonly<Record<string, number | string>>;
  /** Observation window w whose {@link PolicyInput.windowScores} the policy needs; 0 = none. */
  readonly scoreWindow: number;
  /**
   * Kept positions: Int32Array [nLayer][nHeadKv][C], C = kept.length / (nLayer·nHeadKv) (C = B
   * for a uniform policy; the largest per-head count for a non-uniform allocation), strictly
   * ascending within each (layer, KV head), every entry in [0, L); a row that keeps fewer than C
   * ends in −1 padding (at least one position each). Pure: the same input gives the same output.
   * @throws Error when the scores it needs are missing or have the wrong length.
   */
  select(input: PolicyInput): Int32Array;
}

/**
 * Per-(layer, KV head) importance of the prefix positions, the first half of a score-based policy
 * (kvpress's `ScorerPress.score`). The last {@link protectedTail} positions (SnapKV's observation
 * window) are not scored: every (layer, KV head) keeps them.
 */
export interface Scorer {
  /** Stable id, e.g. `snapkv-w32-max-k7`. */
  readonly id: string;
  /** Family of the composed policy under the uniform allocation. */
  readonly family: PolicyFamily;
  /** Short legend label. */
  readonly label: string;
  /** Parameters, as recorded in JSON results. */
  readonly params: Readonly<Record<string, number | string>>;
  /** Observation window w whose window scores the scorer reads; 0 = none. */
  readonly scoreWindow: number;
  /** Trailing positions every (layer, KV head) keeps, unscored [tokens]. */
  readonly protectedTail: number;
  /**
   * Whether the scorer reads {@link PolicyInput.keyNorms} (the engine computes them with
   * `llama_snapkv_key_norms`) instead of window scores. Absent = false.
   */
  readonly readsKeyNorms?: boolean;
  /**
   * Scores of the prefix positions 0…L − protectedTail − 1: [nLayer][nHeadKv][L − protectedTail],
   * higher = more important.
   * @throws Error when the input lacks what the scorer reads.
   */
  score(input: PolicyInput): Float32Array | Float64Array;
}

/** Shape of a scored prefix: nLayer × nHeadKv rows of P scores each. */
export interface ScoreShape {
  nLayer: number;
  nHeadKv: number;
  /** Scored prefix positions per row, P = L − protectedTail. */
  P: number;
}

/**
 * Shares the prefix budget among layers and KV heads, the second half of a score-based policy
 * (uniform: kvpress's default; AdaKV; PyramidKV).
 */
export interface Allocator {
  /** Stable id, e.g. `uniform`, `adakv-a0.2`. */
  readonly id: string;
  /** Family of the composed policy (`snapkv` for the uniform allocation). */
  readonly family: PolicyFamily;
  /** Parameters, as recorded in JSON results. */
  readonly params: Readonly<Record<string, number | string>>;
  /**
   * Kept prefix indices per (layer, KV head), in any order: rows[l·nHeadKv + h], indices in
   * [0, P), nLayer·nHeadKv·prefixBudget of them in all.
   * @param scores [nLayer][nHeadKv][P] scores, higher = keep.
   * @param prefixBudget B − w: prefix positions per (layer, KV head) on average, 0 ≤ it ≤ P.
   */
  allocate(scores: ArrayLike<number>, shape: ScoreShape, prefixBudget: number): number[][];
}

/** Positions a, a+1, …, b−1. */
export function range(a: number, b: number): number[] {
  const out: number[] = [];
  for (let i = a; i < b; i++) out.push(i);
  return out;
}

/**
 * Lays one ascending position list out for every (layer, KV head): Int32Array
 * [nLayer][nHeadKv][positions.length].
 */
export function sameForEveryHead(input: Pick<PolicyInput, 'nLayer' | 'nHeadKv'>, positions: readonly number[]): Int32Array {
  const B = positions.length;
  const out = new Int32Array(input.nLayer * input.nHeadKv * B);
  for (let r = 0; r < input.nLayer * input.nHeadKv; r++) out.set(positions, r * B);
  return out;
}

/**
 * Indices of the k largest values, ties to the lower index, best first (the order the engine's
 * allocations sorted their candidates in).
 */
export function topKByScore(values: ArrayLike<number>, k: number): number[] {
  const idx = range(0, values.length);
  idx.sort((a, b) => values[b]! - values[a]! || a - b);
  return idx.slice(0, k);
}

/** Indices of the k largest values, ties to the lower index, returned ascending. */
export function topKAscending(values: ArrayLike<number>, k: number): number[] {
  return topKByScore(values, k).sort((a, b) => a - b);
}

/**
 * Width C of a kept layout: kept.length / (nLayer·nHeadKv).
 * @throws Error when the length is not a whole number of rows.
 */
export function keptWidth(input: Pick<PolicyInput, 'nLayer' | 'nHeadKv'>, kept: Int32Array): number {
  const rows = input.nLayer * input.nHeadKv;
  const C = kept.length / rows;
  if (!Number.isInteger(C) || C < 1) throw new Error(`kept has ${kept.length} entries, not a whole number of ${input.nLayer}×${input.nHeadKv} rows`);
  return C;
}

/**
 * Checks a policy's output against the contract of {@link EvictionPolicy.select}: rows of
 * C = B entries, or (`ragged`) of any common width C ≤ L with −1 padding at the ends.
 * @throws Error naming the first (layer, head) that breaks it.
 */
export function checkKept(input: PolicyInput, kept: Int32Array, ragged = false): void {
  const { L, budget: B, nLayer, nHeadKv } = input;
  if (!ragged && kept.length !== nLayer * nHeadKv * B) throw new Error(`kept has ${kept.length} entries, expected ${nLayer}×${nHeadKv}×${B}`);
  const C = keptWidth(input, kept);
  for (let r = 0; r < nLayer * nHeadKv; r++) {
    for (let j = 0; j < C; j++) {
      const p = kept[r * C + j]!;
      const prev = j > 0 ? kept[r * C + j - 1]! : -1;
      if (ragged && p === -1 && j > 0) {
        if (kept.subarray(r * C + j, (r + 1) * C).some((x) => x !== -1)) throw new Error(`layer ${Math.floor(r / nHeadKv)} head ${r % nHeadKv}: −1 padding must end the row`);
        break;
      }
      if (p < 0 || p >= L || p <= prev) {
        throw new Error(`layer ${Math.floor(r / nHeadKv)} head ${r % nHeadKv}: position ${p} at ${j} breaks 0 ≤ p < ${L}, strictly ascending`);
      }
    }
  }
}
