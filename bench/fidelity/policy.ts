/**
 * The eviction-policy interface of the fidelity benchmark (issue 7): the product's own
 * (src/engine/policies/policy.ts, issue 16), re-exported so that the benchmark's baselines
 * (bench/fidelity/policies: StreamingLLM, keep-recent, random) and the product's score-based
 * policies (SnapKV's scorer × the uniform, AdaKV or PyramidKV allocation) implement one interface.
 *
 * A policy chooses, for one prompt of L tokens and a budget B, the positions every
 * (layer, KV head) keeps; the engine's compaction (`EngineSession.compact`, the same on-device
 * op SnapKV uses) then moves exactly those rows to the sequence's first cells.
 */
export { checkKept, keptWidth, range, sameForEveryHead, type EvictionPolicy, type PolicyFamily, type PolicyInput } from '../../src/engine/policies/policy';
