/**
 * The eviction-policy interface of the fidelity benchmark (issue 7).
 *
 * A policy chooses, for one prompt of L tokens and a budget B, the B positions every
 * (layer, KV head) keeps; the engine's compaction (`EngineSession.compact`, the same on-device
 * op SnapKV uses) then moves exactly those rows to cells [0, B). Like kvpress's presses, a policy
 * only chooses; the mechanics live in one place.
 *
 * Every (layer, KV head) keeps the same number B of cells here. Per-head (AdaKV) and per-layer
 * (PyramidKV) budgets are the engine's own allocations (`SnapParams.allocation`, measured by
 * bench/fidelity/allocation.ts), not host policies.
 */

/** What a policy sees when it chooses the kept positions of one prompt. */
export interface PolicyInput {
  /** Prompt length L [tokens]; the sequence holds positions 0…L−1, one cell each. */
  L: number;
  /** Budget B [cells kept per layer and KV head], 1 ≤ B ≤ L. */
  budget: number;
  /** Layers of the model (5 for stories260K). */
  nLayer: number;
  /** KV heads per layer (4 for stories260K). */
  nHeadKv: number;
  /**
   * Window-attention scores by observation window w, for the windows the policies ask for
   * ({@link EvictionPolicy.scoreWindow}): Float32Array [nLayer][nHeadKv][L − w], entry p = the
   * softmax attention that the queries of the last w positions give to prefix position p, summed
   * over the window and averaged over the GQA group (the engine's SnapKV scores before pooling).
   */
  windowScores?: ReadonlyMap<number, Float32Array>;
}

/** Family of a policy (what the plots colour by). */
export type PolicyFamily = 'snapkv' | 'streaming-llm' | 'recent' | 'random';

/** An eviction policy: chooses the kept positions of every (layer, KV head). */
export interface EvictionPolicy {
  /** Stable id used in the JSON, e.g. `snapkv-w32-max-k7`. */
  readonly id: string;
  readonly family: PolicyFamily;
  /** Short legend label, e.g. `SnapKV w=32 max k=7`. */
  readonly label: string;
  /** The policy's parameters, as recorded in the JSON. */
  readonly params: Readonly<Record<string, number | string>>;
  /** Observation window w whose {@link PolicyInput.windowScores} the policy needs; 0 = none. */
  readonly scoreWindow: number;
  /**
   * Kept positions: Int32Array [nLayer][nHeadKv][B], strictly ascending within each
   * (layer, KV head), every entry in [0, L). Pure: the same input gives the same output.
   */
  select(input: PolicyInput): Int32Array;
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
 * Checks a policy's output against the contract of {@link EvictionPolicy.select}.
 * @throws Error naming the first (layer, head) that breaks it.
 */
export function checkKept(input: PolicyInput, kept: Int32Array): void {
  const { L, budget: B, nLayer, nHeadKv } = input;
  if (kept.length !== nLayer * nHeadKv * B) throw new Error(`kept has ${kept.length} entries, expected ${nLayer}×${nHeadKv}×${B}`);
  for (let r = 0; r < nLayer * nHeadKv; r++) {
    for (let j = 0; j < B; j++) {
      const p = kept[r * B + j]!;
      const prev = j > 0 ? kept[r * B + j - 1]! : -1;
      if (p < 0 || p >= L || p <= prev) {
        throw new Error(`layer ${Math.floor(r / nHeadKv)} head ${r % nHeadKv}: position ${p} at ${j} breaks 0 ≤ p < ${L}, strictly ascending`);
      }
    }
  }
}
