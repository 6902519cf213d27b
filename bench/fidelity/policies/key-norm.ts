/**
 * The key-norm policy (Devoto et al. 2024, "A Simple and Effective L2 Norm-Based Strategy for KV
 * Cache Compression", sec. 3; kvpress's KnormPress) as the benchmark runs it: the product's
 * key-norm scorer (src/engine/policies/key-norm.ts: keep the keys of lowest L2 norm) × the uniform
 * allocation. Its input is the engine's `llama_snapkv_key_norms` of the uncompressed prompt
 * (PolicyInput.keyNorms); `tail` trailing positions are kept by every head, as SnapKV keeps its
 * observation window (tail = 32 compares the two rankings at the same B; tail 0 is KnormPress).
 */
import { ScoredPolicy } from '../../../src/engine/policies/compose';
import { KeyNormScorer } from '../../../src/engine/policies/key-norm';
import { KeyNormTopUpScorer } from '../../../src/engine/policies/key-norm-topup';
import { SnapKvScorer, type SnapKvScorerOptions } from '../../../src/engine/policies/snapkv';
import { UniformAllocator } from '../../../src/engine/policies/uniform';

export { KeyNormScorer } from '../../../src/engine/policies/key-norm';

/** Key norm with the uniform allocation. */
export class KeyNormPolicy extends ScoredPolicy {
  declare readonly scorer: KeyNormScorer;

  /** @param tail trailing positions every (layer, KV head) keeps [tokens], default 0 (KnormPress). */
  constructor(opts: { tail?: number } = {}) {
    super(new KeyNormScorer(opts), new UniformAllocator());
  }
}

/**
 * The key-norm base topped up by SnapKV (src/engine/policies/key-norm-topup.ts) with the uniform
 * allocation: `baseShare` of the prefix budget by key norm, the rest by SnapKV's pooled window
 * attention, the window kept; what `--scorer key-norm-topup` runs.
 */
export class KeyNormTopUpPolicy extends ScoredPolicy {
  declare readonly scorer: KeyNormTopUpScorer;

  /** @param opts SnapKV's window, kernel, pooling and the base share (default 0.5). */
  constructor(opts: SnapKvScorerOptions & { baseShare?: number } = {}) {
    super(new KeyNormTopUpScorer(new SnapKvScorer(opts), { baseShare: opts.baseShare }), new UniformAllocator());
  }
}
