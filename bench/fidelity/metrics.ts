/**
 * Fidelity metrics of a compressed cache against full attention, over a teacher-forced
 * continuation: top-1 agreement, KL(full ‖ compressed) and the perplexity ratio; and their
 * spread over prompts.
 */
import { mulberry32 } from './rng';

/** log softmax of logits [n_vocab], in float64 (natural log). */
export function logSoftmax(logits: ArrayLike<number>): Float64Array {
  let max = -Infinity;
  for (let i = 0; i < logits.length; i++) if (logits[i]! > max) max = logits[i]!;
  let sum = 0;
  for (let i = 0; i < logits.length; i++) sum += Math.exp(logits[i]! - max);
  const lse = max + Math.log(sum);
  const out = new Float64Array(logits.length);
  for (let i = 0; i < logits.length; i++) out[i] = logits[i]! - lse;
  return out;
}

/** Index of the largest value (the lowest index among equals). */
export function argmax(values: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < values.length; i++) if (values[i]! > values[best]!) best = i;
  return best;
}

/** KL(P ‖ Q) = Σ p·(log p − log q) [nats], from log-probabilities [n_vocab] of P and Q. */
export function klDivergence(logP: ArrayLike<number>, logQ: ArrayLike<number>): number {
  let kl = 0;
  for (let i = 0; i < logP.length; i++) {
    const p = Math.exp(logP[i]!);
    if (p > 0) kl += p * (logP[i]! - logQ[i]!);
  }
  return Math.max(0, kl);
}

/** One teacher-forced step of the reference (full attention), prepared once and compared many times. */
export interface ReferenceStep {
  /** log-probabilities of full attention [n_vocab]. */
  logP: Float64Array;
  /** Full attention's top-1 token. */
  top1: number;
  /** The continuation's next token (what perplexity is measured on). */
  target: number;
}

/** Prepares the reference steps from full attention's logits [steps][n_vocab] and the targets [steps]. */
export function referenceSteps(fullLogits: readonly ArrayLike<number>[], targets: readonly number[]): ReferenceStep[] {
  if (fullLogits.length !== targets.length) throw new Error(`${fullLogits.length} logits for ${targets.length} targets`);
  return fullLogits.map((l, i) => ({ logP: logSoftmax(l), top1: argmax(l), target: targets[i]! }));
}

/** Fidelity of one prompt's continuation under one compressed cache. */
export interface PromptFidelity {
  /** Fraction of steps whose top-1 token equals full attention's, in [0, 1]. */
  top1: number;
  /** Mean over steps of KL(full ‖ compressed) [nats]. */
  kl: number;
  /**
   * Perplexity of the compressed cache over perplexity of full attention on the continuation's
   * tokens: exp(mean NLL_compressed − mean NLL_full); 1 = no loss.
   */
  pplRatio: number;
}

/**
 * Compares a compressed run's logits [steps][n_vocab] with the reference steps (same length).
 */
export function compareToReference(ref: readonly ReferenceStep[], logits: readonly ArrayLike<number>[]): PromptFidelity {
  if (ref.length !== logits.length || ref.length === 0) throw new Error(`${logits.length} logits for ${ref.length} reference steps`);
  let agree = 0;
  let kl = 0;
  let nllDiff = 0;
  for (let i = 0; i < ref.length; i++) {
    const r = ref[i]!;
    const logQ = logSoftmax(logits[i]!);
    if (argmax(logQ) === r.top1) agree++;
    kl += klDivergence(r.logP, logQ);
    nllDiff += r.logP[r.target]! - logQ[r.target]!;
  }
  const n = ref.length;
  return { top1: agree / n, kl: kl / n, pplRatio: Math.exp(nllDiff / n) };
}

/** Spread of one metric over prompts. */
export interface Summary {
  /** Prompts. */
  n: number;
  mean: number;
  /** Sample standard deviation (n − 1). */
  std: number;
  median: number;
  /** Quartiles and the 10th/90th percentiles (linear interpolation). */
  q25: number;
  q75: number;
  p10: number;
  p90: number;
  min: number;
  max: number;
  /** 95 % bootstrap interval of the mean (percentile method, resampling prompts). */
  ciLow: number;
  ciHigh: number;
}

/** Quantile q ∈ [0, 1] of sorted values, linear interpolation between order statistics. */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
}

/**
 * Summarizes values over prompts. The bootstrap uses `resamples` resamples from a seeded
 * generator (reproducible).
 */
export function summarize(values: readonly number[], resamples = 1000, seed = 7): Summary {
  const n = values.length;
  const sorted = [...values].sort((a, b) => a - b);
  const mean = values.reduce((a, b) => a + b, 0) / n;
  const std = n > 1 ? Math.sqrt(values.reduce((a, v) => a + (v - mean) ** 2, 0) / (n - 1)) : 0;
  const rng = mulberry32(seed);
  const means: number[] = [];
  for (let b = 0; b < resamples && n > 1; b++) {
    let s = 0;
    for (let i = 0; i < n; i++) s += values[Math.floor(rng() * n)]!;
    means.push(s / n);
  }
  means.sort((a, b) => a - b);
  return {
    n,
    mean,
    std,
    median: quantile(sorted, 0.5),
    q25: quantile(sorted, 0.25),
    q75: quantile(sorted, 0.75),
    p10: quantile(sorted, 0.1),
    p90: quantile(sorted, 0.9),
    min: sorted[0] ?? NaN,
    max: sorted[n - 1] ?? NaN,
    ciLow: n > 1 ? quantile(means, 0.025) : mean,
    ciHigh: n > 1 ? quantile(means, 0.975) : mean,
  };
}
