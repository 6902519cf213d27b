/** A directed edge of a weighted graph over nodes `0 … n-1`. */
export interface WeightedEdge {
  from: number;
  to: number;
  /** A finite weight > 0. Parallel edges add up. */
  weight: number;
}

/** Options for `pagerank`; the defaults are networkx's (`networkx.pagerank`). */
export interface PageRankOptions {
  /** Damping factor α in (0, 1). Default 0.85. */
  alpha?: number;
  /**
   * Personalization (teleport) vector, length n, entries ≥ 0 with a positive sum; normalized
   * to sum 1. Default: uniform. Dangling nodes (no out-edges) jump by it too, as networkx does.
   */
  personalization?: readonly number[];
  /** Most power iterations. Default 100. */
  maxIterations?: number;
  /** Stop when Σ|x − x_prev| < n · tolerance. Default 1e-6. */
  tolerance?: number;
}

/**
 * Personalized PageRank by power iteration, in float64, with networkx's definition:
 * x ← α (Wᵀx + (Σ_{dangling d} x_d) p) + (1 − α) p, from x = 1/n, where W is the weight matrix
 * normalized by each node's out-weight and p the normalized personalization vector. Returns the
 * ranks (length n, sum 1). With no nodes, returns []. If the iteration has not converged after
 * `maxIterations`, returns the last iterate (networkx raises instead; the ranks only order files
 * here). Throws `RangeError` for an edge outside 0 … n-1, a non-positive or non-finite weight,
 * or a personalization vector of the wrong length, with a negative entry or a zero sum.
 *
 * Written here (~40 lines) because graphology-metrics' pagerank has no personalization vector,
 * which RepoSnap needs to favour the files the user has open.
 */
export function pagerank(n: number, edges: readonly WeightedEdge[], options: PageRankOptions = {}): Float64Array {
  const alpha = options.alpha ?? 0.85;
  const maxIterations = options.maxIterations ?? 100;
  const tolerance = options.tolerance ?? 1e-6;
  if (n === 0) return new Float64Array(0);
  const p = new Float64Array(n).fill(1 / n);
  if (options.personalization !== undefined) {
    const given = options.personalization;
    const sum = given.reduce((a, b) => a + b, 0);
    if (given.length !== n || given.some((v) => !(v >= 0)) || !(sum > 0) || !Number.isFinite(sum)) {
      throw new RangeError(`personalization must hold ${n} numbers >= 0 with a positive sum`);
    }
    for (let i = 0; i < n; i++) p[i] = given[i]! / sum;
  }
  const outWeight = new Float64Array(n);
  for (const e of edges) {
    if (!(e.from >= 0 && e.from < n && e.to >= 0 && e.to < n && Number.isInteger(e.from) && Number.isInteger(e.to))) {
      throw new RangeError(`edge ${e.from} -> ${e.to} is outside the ${n} nodes`);
    }
    if (!(e.weight > 0) || !Number.isFinite(e.weight)) throw new RangeError(`edge ${e.from} -> ${e.to} has weight ${e.weight}; weights must be finite and > 0`);
    outWeight[e.from]! += e.weight;
  }
  let x = new Float64Array(n).fill(1 / n);
  for (let iteration = 0; iteration < maxIterations; iteration++) {
    const last = x;
    x = new Float64Array(n);
    let dangling = 0;
    for (let i = 0; i < n; i++) if (outWeight[i] === 0) dangling += last[i]!;
    for (const e of edges) x[e.to]! += alpha * last[e.from]! * (e.weight / outWeight[e.from]!);
    let change = 0;
    for (let i = 0; i < n; i++) {
      x[i]! += (alpha * dangling + (1 - alpha)) * p[i]!;
      change += Math.abs(x[i]! - last[i]!);
    }
    if (change < n * tolerance) break;
  }
  return x;
}
