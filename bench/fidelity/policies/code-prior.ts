/**
 * RepoSnap's SnapKV under the code-aware prior (issue 16 item 4) as the fidelity benchmark runs
 * it: the product's {@link CodePriorScorer} (src/engine/policies/code-prior.ts: SnapKV's pooled
 * window-attention scores + β · flags · the row's mean score) over SnapKV's scorer × the uniform
 * allocation, as `reposnap ask --prior code` runs it. The flags are per prompt
 * (bench/fidelity/code-prior.ts), so a run builds one policy per prompt; the id does not depend on
 * the flags, so every prompt's policy reports under one id.
 */
import { ScoredPolicy } from '../../../src/engine/policies/compose';
import { CodePriorScorer } from '../../../src/engine/policies/code-prior';
import { SnapKvScorer, type SnapKvScorerOptions } from '../../../src/engine/policies/snapkv';
import { UniformAllocator } from '../../../src/engine/policies/uniform';

/** SnapKV + the code-aware prior, uniform allocation. */
export class CodePriorPolicy extends ScoredPolicy {
  declare readonly scorer: CodePriorScorer;

  /**
   * @param opts SnapKV's window, kernel and pooling; `bonus` β ≥ 0 (default 1, the product's);
   *   `flags` per prompt position 0…L−1 (PRIOR_DEFINITION | PRIOR_IDENTIFIER; default none, which
   *   is SnapKV's selection under the prior's id)
   * @throws Error for a negative or non-finite bonus.
   */
  constructor(opts: SnapKvScorerOptions & { bonus?: number; flags?: Uint8Array } = {}) {
    super(new CodePriorScorer(new SnapKvScorer(opts), { flags: opts.flags ?? new Uint8Array(0), bonus: opts.bonus }), new UniformAllocator());
  }
}
