/**
 * RepoSnap's KV-cache eviction policies (issue 16): scorers × allocators, composed into policies.
 * One small file each: policy.ts (interfaces and layout helpers), snapkv.ts (SnapKV's
 * window-attention scorer), key-norm.ts (the query-agnostic key-norm scorer), key-norm-topup.ts (a key-norm base topped up by SnapKV), code-prior.ts (a code-aware bonus over a base scorer), uniform.ts / adakv.ts / pyramid.ts (allocators), compose.ts (the
 * composition and the product's {@link snapPolicy}).
 */
export { AdaKvAllocator, type AdaKvOptions } from './adakv';
export { CodePriorScorer, DEFAULT_PRIOR_BONUS, PRIOR_DEFINITION, PRIOR_IDENTIFIER, type CodePriorOptions } from './code-prior';
export { allocatorFor, ScoredPolicy, SnapKvPolicy, snapPolicy, type BudgetAllocation, type SnapPolicyOptions, type SnapScorer } from './compose';
export { KeyNormScorer, type KeyNormScorerOptions } from './key-norm';
export { KeyNormTopUpScorer, type KeyNormTopUpOptions } from './key-norm-topup';
export {
  checkKept,
  keptWidth,
  range,
  sameForEveryHead,
  topKAscending,
  topKByScore,
  type Allocator,
  type EvictionPolicy,
  type PolicyFamily,
  type PolicyInput,
  type Scorer,
  type ScoreShape,
} from './policy';
export { PyramidAllocator, pyramidBudgets, type PyramidOptions } from './pyramid';
export { pool1d, SnapKvScorer, type SnapKvScorerOptions } from './snapkv';
export { rowOf, UniformAllocator } from './uniform';
