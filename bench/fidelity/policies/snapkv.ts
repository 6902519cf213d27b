/**
 * SnapKV (Li et al. 2024, sec. 4) as the benchmark runs it: the product's policy
 * (src/engine/policies: SnapKV's window-attention scorer × the uniform allocation), re-exported
 * under the benchmark's names. Given the engine's unpooled window scores, the scorer pools them on
 * the host, so every configuration of the grid runs from one capture per window and goes through
 * the same compaction as the other policies.
 */
export { SnapKvPolicy } from '../../../src/engine/policies/compose';
export { topKAscending } from '../../../src/engine/policies/policy';
export { pool1d, type SnapKvScorerOptions as SnapKvOptions } from '../../../src/engine/policies/snapkv';
