/**
 * src/engine/policies: the allocators and their composition with SnapKV's scorer on small
 * hand-checked cases (no engine): AdaKV's safeguard and layer-wide sharing with the engine's
 * tie-breaks, PyramidKV's budgets with the engine's rounding, the −1 padded layout, and the
 * uniform composition equal to the benchmark's SnapKV policy.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SnapKvPolicy as BenchSnapKvPolicy } from '../../bench/fidelity/policies/snapkv';
import { AdaKvAllocator, checkKept, PyramidAllocator, pyramidBudgets, ScoredPolicy, SnapKvScorer, snapPolicy, UniformAllocator } from '../../src/engine/policies';

/** Rows as sorted arrays (allocators return prefix indices in any order). */
const sorted = (rows: number[][]) => rows.map((r) => [...r].sort((a, b) => a - b));

test('uniform: every (layer, head) keeps its own top prefixBudget, ties to the lower position', () => {
  const scores = new Float32Array([0.9, 0.1, 0.8, 0.7, 0.7, 0.2, /* head 1 */ 0.3, 0.6, 0.05, 0.1, 0.5, 0.4]);
  assert.deepEqual(sorted(new UniformAllocator().allocate(scores, { nLayer: 1, nHeadKv: 2, P: 6 }, 3)), [
    [0, 2, 3], // 0.9, 0.8, then 0.7 at 3 before the tie at 4
    [1, 4, 5],
  ]);
});

test('AdaKV: each head keeps ⌊α·(B − w)⌋ by its own scores, the rest of the layer goes to the best scores over all heads', () => {
  // head 0 best-first: 0 (.9), 2 (.8), 3 (.7), 5 (.2), 1 (.1), 4 (0); head 1: 1 (.6), 4 (.5), 5 (.4), 0 (.3), 3 (.1), 2 (.05)
  const scores = new Float32Array([0.9, 0.1, 0.8, 0.7, 0.0, 0.2, /* head 1 */ 0.3, 0.6, 0.05, 0.1, 0.5, 0.4]);
  const shape = { nLayer: 1, nHeadKv: 2, P: 6 };
  // α = 0.5, B − w = 2: safeguard ⌊1⌋ each (0 and 1), then 2 more slots: .8 (head 0) and .7 (head 0) beat .5
  assert.deepEqual(sorted(new AdaKvAllocator({ alpha: 0.5 }).allocate(scores, shape, 2)), [[0, 2, 3], [1]]);
  // α = 0: all 4 slots by score over the layer: .9 .8 .7 (head 0), .6 (head 1)
  assert.deepEqual(sorted(new AdaKvAllocator({ alpha: 0 }).allocate(scores, shape, 2)), [[0, 2, 3], [1]]);
  // α = 1: every head keeps exactly its own top 2 (the uniform allocation)
  assert.deepEqual(sorted(new AdaKvAllocator({ alpha: 1 }).allocate(scores, shape, 2)), [[0, 2], [1, 4]]);
  // two layers share independently: layer 1 (head 1 strong) gives head 1 the extra slots
  const two = new Float32Array([...scores, 0.1, 0.2, 0.3, 0.0, 0.0, 0.0, /* head 1 */ 0.9, 0.8, 0.7, 0.6, 0.0, 0.0]);
  assert.deepEqual(sorted(new AdaKvAllocator({ alpha: 0.5 }).allocate(two, { ...shape, nLayer: 2 }, 2)), [[0, 2, 3], [1], [2], [0, 1, 2]]);
});

test('AdaKV: equal scores at equal positions go to the higher head (the engine max-heap order)', () => {
  // B − w = 1, two heads, α = 0: slot 1 is head 0's .9; slot 2 ties .5 at position 0 in both heads → head 1
  const scores = new Float32Array([0.5, 0.9, /* head 1 */ 0.5, 0.1]);
  assert.deepEqual(sorted(new AdaKvAllocator({ alpha: 0 }).allocate(scores, { nLayer: 1, nHeadKv: 2, P: 2 }, 1)), [[1], [0]]);
});

test('AdaKV refuses α outside [0, 1]; PyramidKV refuses β < 1', () => {
  assert.throws(() => new AdaKvAllocator({ alpha: 1.5 }), /\[0, 1\]/);
  assert.throws(() => new PyramidAllocator({ beta: 0.5 }), /≥ 1/);
  assert.throws(() => snapPolicy({ allocation: 'even' as never }), /unknown budget allocation/);
});

test('PyramidKV budgets: arithmetic from 2(B − w) − (B − w)/β down to (B − w)/β, rounded half away from zero, total exact', () => {
  // B − w = 20, β = 20: 39, 20, 1 (step 19), 60 in all
  assert.deepEqual(pyramidBudgets(3, 100, 20, 20), [39, 20, 1]);
  // B − w = 10, β = 4: 17.5, 12.5, 7.5, 2.5 round to 18, 13, 8, 3 (42); the first two layers give one back each
  assert.deepEqual(pyramidBudgets(4, 100, 10, 4), [17, 12, 8, 3]);
  // the first layer would need 19.5 > P = 15 positions: uniform
  assert.deepEqual(pyramidBudgets(2, 15, 10, 20), [10, 10]);
  // one layer: uniform
  assert.deepEqual(pyramidBudgets(1, 100, 10, 20), [10]);
});

test('PyramidKV: every head of a layer keeps the layer budget of its own best positions', () => {
  // 2 layers × 1 head, P = 6, B − w = 3, β = 3: budgets 5 (= 2·3 − 1) and 1
  const scores = new Float32Array([0.6, 0.5, 0.4, 0.3, 0.2, 0.1, /* layer 1 */ 0.1, 0.2, 0.3, 0.4, 0.5, 0.6]);
  assert.deepEqual(sorted(new PyramidAllocator({ beta: 3 }).allocate(scores, { nLayer: 2, nHeadKv: 1, P: 6 }, 3)), [[0, 1, 2, 3, 4], [5]]);
});

test('a scorer × an allocator: sorted prefix rows + the window, −1 padded to the longest row', () => {
  const scores = new Float32Array([0.9, 0.1, 0.8, 0.7, 0.0, 0.2, /* head 1 */ 0.3, 0.6, 0.05, 0.1, 0.5, 0.4]);
  const input = { L: 8, budget: 4, nLayer: 1, nHeadKv: 2, pooledScores: scores };
  const policy = snapPolicy({ window: 2, kernel: 3, allocation: 'adakv', adaAlpha: 0.5 });
  const kept = policy.select(input);
  // head 0: prefix 0 2 3 + window 6 7; head 1: prefix 1 + window, padded to C = 5
  assert.deepEqual(Array.from(kept), [0, 2, 3, 6, 7, /* head 1 */ 1, 6, 7, -1, -1]);
  checkKept(input, kept, true);
  assert.equal(policy.id, 'adakv-a0.5-snapkv-w2-max-k3');
  assert.equal(policy.family, 'adakv');
  // B ≤ w: the last B positions
  assert.deepEqual(Array.from(policy.select({ ...input, budget: 2 })), [6, 7, 6, 7]);
});

test('SnapKV × uniform is the benchmark SnapKV policy: same id, label, params and kept positions', () => {
  const L = 40;
  const w = 4;
  const raw = new Float32Array(2 * 2 * (L - w)).map((_, i) => Math.abs(Math.sin(i * 12.9898) * 43758.5453) % 1);
  const input = { L, budget: 12, nLayer: 2, nHeadKv: 2, windowScores: new Map([[w, raw]]) };
  for (const pooling of ['max', 'avg'] as const) {
    const composed = new ScoredPolicy(new SnapKvScorer({ window: w, kernel: 5, pooling }), new UniformAllocator());
    const bench = new BenchSnapKvPolicy({ window: w, kernel: 5, pooling });
    assert.equal(composed.id, `snapkv-w4-${pooling}-k5`);
    assert.equal(bench.id, composed.id);
    assert.equal(bench.label, composed.label);
    assert.deepEqual(bench.params, { window: 4, kernel: 5, pooling });
    const kept = composed.select(input);
    checkKept(input, kept);
    assert.deepEqual(Array.from(bench.select(input)), Array.from(kept));
  }
});
