/**
 * The policies the fidelity benchmark runs: the full SnapKV grid of issue 7 (the product's SnapKV
 * policy, src/engine/policies: SnapKV's scorer × the uniform allocation) and the bench-only
 * baselines (StreamingLLM, keep-recent, random), which implement the product's policy interface,
 * the product's query-agnostic key-norm scorer and its SnapKV top-up (./key-norm.ts), and SnapKV
 * under the product's code-aware prior (./code-prior.ts).
 */
import type { EvictionPolicy } from '../policy';
import { CodePriorPolicy } from './code-prior';
import { KeyNormPolicy, KeyNormTopUpPolicy } from './key-norm';
import { RandomPolicy } from './random';
import { RecentPolicy } from './recent';
import { SnapKvPolicy } from './snapkv';
import { StreamingLlmPolicy } from './streaming-llm';

export { CodePriorPolicy, KeyNormPolicy, KeyNormTopUpPolicy, RandomPolicy, RecentPolicy, SnapKvPolicy, StreamingLlmPolicy };

/** Observation windows of the SnapKV grid [tokens]. */
export const GRID_WINDOWS = [8, 16, 32] as const;
/** Pooling kernels of the SnapKV grid. */
export const GRID_KERNELS = [1, 5, 7] as const;
/** Poolings of the SnapKV grid. */
export const GRID_POOLINGS = ['max', 'avg'] as const;

/** SnapKV with every window × kernel × pooling of the grid (18 policies). */
export function snapKvGrid(): SnapKvPolicy[] {
  const out: SnapKvPolicy[] = [];
  for (const window of GRID_WINDOWS) for (const pooling of GRID_POOLINGS) for (const kernel of GRID_KERNELS) out.push(new SnapKvPolicy({ window, kernel, pooling }));
  return out;
}

/** The baselines: StreamingLLM (4 sinks), keep-recent, random + the window of RepoSnap's default SnapKV (32). */
export function baselines(): EvictionPolicy[] {
  return [new StreamingLlmPolicy({ sinks: 4 }), new RecentPolicy(), new RandomPolicy({ window: 32, seed: 1 })];
}

/** Id of RepoSnap's default SnapKV configuration (`reposnap ask`: w = 32, max pooling, k = 7). */
export const DEFAULT_SNAPKV_ID = 'snapkv-w32-max-k7';
