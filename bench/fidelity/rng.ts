/**
 * Seeded randomness for the fidelity benchmark: a 32-bit PRNG (mulberry32) and a sampler over
 * logits, so that generated prompts, the random policy and the bootstrap are reproducible.
 */

/** A uniform generator on [0, 1): mulberry32 (Tommy Ettinger), 32-bit state. */
export type Rng = () => number;

/** mulberry32, the same generator the synthetic test models are seeded with. */
export { mulberry32 } from '../../test/reference/synthetic-llama';

/** Mixes several integers into one 32-bit seed (FNV-1a over their 32-bit words). */
export function mixSeed(...parts: number[]): number {
  let h = 0x811c9dc5;
  for (const p of parts) {
    let v = p >>> 0;
    for (let i = 0; i < 4; i++) {
      h ^= v & 0xff;
      h = Math.imul(h, 0x01000193) >>> 0;
      v >>>= 8;
    }
  }
  return h >>> 0;
}

/** Options of {@link sampleToken}. */
export interface SampleOptions {
  /** Softmax temperature (> 0). Default 1. */
  temperature?: number;
  /** Nucleus mass in (0, 1]: sample among the most likely tokens whose mass reaches topP. Default 1. */
  topP?: number;
  /** Token ids that are never sampled (e.g. end of sequence). */
  banned?: ReadonlySet<number>;
}

/**
 * Samples one token id from `logits` [n_vocab] with temperature and top-p, using `rng`.
 * Deterministic for a given rng state.
 */
export function sampleToken(logits: ArrayLike<number>, rng: Rng, opts: SampleOptions = {}): number {
  const temperature = opts.temperature ?? 1;
  const topP = opts.topP ?? 1;
  const banned = opts.banned ?? new Set<number>();
  let max = -Infinity;
  for (let i = 0; i < logits.length; i++) if (!banned.has(i) && logits[i]! > max) max = logits[i]!;
  const ids: number[] = [];
  const p: number[] = [];
  let total = 0;
  for (let i = 0; i < logits.length; i++) {
    if (banned.has(i)) continue;
    const e = Math.exp((logits[i]! - max) / temperature);
    ids.push(i);
    p.push(e);
    total += e;
  }
  const order = ids.map((_, k) => k).sort((a, b) => p[b]! - p[a]! || ids[a]! - ids[b]!);
  let kept = 0;
  let mass = 0;
  for (const k of order) {
    mass += p[k]! / total;
    kept++;
    if (mass >= topP) break;
  }
  let r = rng() * mass * total;
  for (let j = 0; j < kept; j++) {
    const k = order[j]!;
    r -= p[k]!;
    if (r <= 0) return ids[k]!;
  }
  return ids[order[kept - 1]!]!;
}
