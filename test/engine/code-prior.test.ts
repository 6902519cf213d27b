/**
 * The code-aware prior scorer (src/engine/policies/code-prior.ts) on hand-built scores: which
 * positions get the bonus, by how much (β × the row's mean score per flag), and the rows kept
 * under a tiny budget, worked out by hand below.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CodePriorScorer, PRIOR_DEFINITION, PRIOR_IDENTIFIER, SnapKvScorer, snapPolicy } from '../../src/engine/policies';

// 1 layer × 2 KV heads, L = 8, window w = 2: P = 6 scored prefix positions per row.
// row 0: sum 1.2, mean 0.2; row 1: sum 0.6, mean 0.1 (the engine's pooled scores, kernel 1 here).
const row0 = [0.5, 0.1, 0.0, 0.3, 0.1, 0.2];
const row1 = [0.0, 0.6, 0.0, 0.0, 0.0, 0.0];
const pooled = Float32Array.from([...row0, ...row1]);
const input = { L: 8, budget: 4, nLayer: 1, nHeadKv: 2, pooledScores: pooled };
// position 2: a definition; 4: a definition and an identifier; 7 (in the window): an identifier
const flags = Uint8Array.from([0, 0, PRIOR_DEFINITION, 0, PRIOR_DEFINITION | PRIOR_IDENTIFIER, 0, 0, PRIOR_IDENTIFIER]);

test('the bonus is β × the row mean per flag, on the flagged prefix positions only', () => {
  const s = new CodePriorScorer(new SnapKvScorer({ window: 2, kernel: 1 }), { flags, bonus: 1 });
  const out = s.score(input);
  const f = (x: number) => Math.fround(x); // the base scores are f32
  const mean0 = (f(0.5) + f(0.1) + f(0) + f(0.3) + f(0.1) + f(0.2)) / 6;
  const mean1 = f(0.6) / 6;
  const want = [f(0.5), f(0.1), mean0, f(0.3), f(0.1) + 2 * mean0, f(0.2), 0, f(0.6), mean1, 0, 2 * mean1, 0];
  assert.equal(out.length, 12);
  want.forEach((x, i) => assert.ok(Math.abs(out[i]! - x) < 1e-12, `score ${i}: ${out[i]} vs ${x}`));
  // the base scores are not changed in place
  assert.deepEqual(Array.from(pooled), Array.from(Float32Array.from([...row0, ...row1])));
  assert.equal(s.id, 'snapkv-w2-max-k1-code-b1');
  assert.equal(s.protectedTail, 2);
});

test('kept rows under B = 4 (2 prefix slots + the window), by hand', () => {
  // without the prior: row 0 keeps 0.5 (p0) and 0.3 (p3); row 1 keeps 0.6 (p1) and the lowest tie p0
  const plain = snapPolicy({ window: 2, kernel: 1 }).select(input);
  assert.deepEqual(Array.from(plain), [0, 3, 6, 7, 0, 1, 6, 7]);
  // β = 1: row 0 p4 → 0.1 + 2·0.2 = 0.5 beats p3's 0.3; row 1 p4 → 2·0.1 = 0.2 beats p2's 0.1
  const prior = snapPolicy({ window: 2, kernel: 1, prior: { flags, bonus: 1 } }).select(input);
  assert.deepEqual(Array.from(prior), [0, 4, 6, 7, 1, 4, 6, 7]);
  // β = 0 is SnapKV itself
  assert.deepEqual(Array.from(snapPolicy({ window: 2, kernel: 1, prior: { flags, bonus: 0 } }).select(input)), Array.from(plain));
  // β = 3: row 0 p2 → 0.6 and p4 → 1.3 pass p0's 0.5
  assert.deepEqual(Array.from(snapPolicy({ window: 2, kernel: 1, prior: { flags, bonus: 3 } }).select(input)), [2, 4, 6, 7, 1, 4, 6, 7]);
});

test('no flags, or a row of zeros, leaves the order as it is; a negative bonus is refused', () => {
  const none = new CodePriorScorer(new SnapKvScorer({ window: 2, kernel: 1 }), { flags: new Uint8Array(8), bonus: 5 });
  assert.deepEqual(Array.from(none.score(input)), Array.from(pooled));
  const zeros = new CodePriorScorer(new SnapKvScorer({ window: 2, kernel: 1 }), { flags, bonus: 5 });
  assert.deepEqual(Array.from(zeros.score({ ...input, pooledScores: new Float32Array(12) })), new Array(12).fill(0));
  assert.throws(() => new CodePriorScorer(new SnapKvScorer(), { flags, bonus: -1 }), /bonus/);
});
