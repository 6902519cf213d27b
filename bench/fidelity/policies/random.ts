/**
 * Random eviction (seeded): every (layer, KV head) keeps the last w positions (the same
 * observation window SnapKV always keeps) and B − w prefix positions drawn uniformly without
 * replacement. Against SnapKV at the same w this isolates what SnapKV's scoring is worth.
 */
import { mixSeed, mulberry32 } from '../rng';
import { range, type EvictionPolicy, type PolicyInput } from '../policy';

/** Options of {@link RandomPolicy}. */
export interface RandomOptions {
  /** Recent positions always kept, w [tokens]. Default 32 (RepoSnap's SnapKV window). */
  window?: number;
  /** Seed; each (prompt length, budget, layer, head) draws from mixSeed(seed, L, B, layer, head). Default 1. */
  seed?: number;
}

/**
 * Random prefix positions + the window. When B ≤ w only the last B positions are kept
 * (as for SnapKV, the window is what is kept first).
 */
export class RandomPolicy implements EvictionPolicy {
  readonly id: string;
  readonly family = 'random' as const;
  readonly label: string;
  readonly params: { window: number; seed: number };
  readonly scoreWindow = 0;

  constructor(opts: RandomOptions = {}) {
    const window = opts.window ?? 32;
    const seed = opts.seed ?? 1;
    this.params = { window, seed };
    this.id = `random-w${window}-seed${seed}`;
    this.label = `random + window ${window}`;
  }

  select(input: PolicyInput): Int32Array {
    const { L, budget: B, nLayer, nHeadKv } = input;
    const w = Math.min(this.params.window, B);
    const prefix = L - w;
    const nPick = B - w;
    const out = new Int32Array(nLayer * nHeadKv * B);
    const pool = new Int32Array(prefix);
    for (let l = 0; l < nLayer; l++) {
      for (let h = 0; h < nHeadKv; h++) {
        const rng = mulberry32(mixSeed(this.params.seed, L, B, l, h));
        for (let i = 0; i < prefix; i++) pool[i] = i;
        // partial Fisher–Yates: the first nPick entries become a uniform sample
        for (let i = 0; i < nPick; i++) {
          const j = i + Math.floor(rng() * (prefix - i));
          const t = pool[i]!;
          pool[i] = pool[j]!;
          pool[j] = t;
        }
        const picked = Array.from(pool.subarray(0, nPick)).sort((a, b) => a - b);
        out.set([...picked, ...range(prefix, L)], (l * nHeadKv + h) * B);
      }
    }
    return out;
  }
}
