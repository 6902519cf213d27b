/**
 * The fidelity benchmark's metrics (bench/fidelity/metrics.ts, report.ts) on hand-computed
 * distributions.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { argmax, compareToReference, klDivergence, logSoftmax, quantile, referenceSteps, summarize } from '../../bench/fidelity/metrics';
import { wilson } from '../../bench/fidelity/report';
import { mulberry32, sampleToken } from '../../bench/fidelity/rng';

const close = (a: number, b: number, tol = 1e-12) => assert.ok(Math.abs(a - b) <= tol, `${a} vs ${b}`);

test('log softmax and KL on two-token distributions', () => {
  const lp = logSoftmax([0, Math.log(3)]); // [1/4, 3/4]
  close(lp[0]!, Math.log(0.25));
  close(lp[1]!, Math.log(0.75));
  const lq = logSoftmax([5, 5]); // [1/2, 1/2]
  // KL(P‖Q) = 1/4·ln(1/2) + 3/4·ln(3/2)
  close(klDivergence(lp, lq), 0.25 * Math.log(0.5) + 0.75 * Math.log(1.5));
  close(klDivergence(lp, lq), 0.130812035941137, 1e-12);
  assert.equal(klDivergence(lp, lp), 0);
  close(klDivergence(logSoftmax([1000, 0, -1000]), logSoftmax([1000, 0, -1000])), 0);
  assert.equal(argmax([1, 3, 3, 2]), 1);
});

test('top-1 agreement, mean KL and perplexity ratio over a continuation', () => {
  // step 1: full [1/4, 3/4], compressed [2/5, 3/5], target 1 (both pick 1)
  // step 2: full [3/4, 1/4], compressed [1/4, 3/4], target 0 (they disagree)
  const full = [[0, Math.log(3)], [Math.log(3), 0]];
  const comp = [[Math.log(2), Math.log(3)], [0, Math.log(3)]];
  const ref = referenceSteps(full, [1, 0]);
  const f = compareToReference(ref, comp);
  assert.equal(f.top1, 0.5);
  const kl1 = 0.25 * Math.log(0.25 / 0.4) + 0.75 * Math.log(0.75 / 0.6);
  const kl2 = 0.5 * Math.log(3);
  close(f.kl, (kl1 + kl2) / 2);
  // ppl ratio = exp(mean(ln p_full − ln p_comp)) = sqrt(0.75/0.6 · 0.75/0.25) = sqrt(3.75)
  close(f.pplRatio, Math.sqrt(3.75));
  // identical logits: no loss
  assert.deepEqual(compareToReference(ref, full), { top1: 1, kl: 0, pplRatio: 1 });
  // compressed halves the target's probability at every step: ratio 2
  // (p_full = 1/4, p_comp = 1/(1 + 3 + 1 + 3) = 1/8)
  const g = compareToReference(referenceSteps([[0, 0, 0, 0]], [0]), [[0, Math.log(3), 0, Math.log(3)]]);
  close(g.pplRatio, 2);
  assert.throws(() => compareToReference(ref, [full[0]!]), /reference steps/);
});

test('summaries over prompts: moments, quantiles and a bootstrap interval of the mean', () => {
  const s = summarize([1, 2, 3, 4]);
  assert.equal(s.n, 4);
  close(s.mean, 2.5);
  close(s.std, Math.sqrt(5 / 3));
  close(s.median, 2.5);
  close(s.q25, 1.75);
  close(s.q75, 3.25);
  assert.equal(s.min, 1);
  assert.equal(s.max, 4);
  assert.ok(s.ciLow >= 1 && s.ciLow < 2.5 && s.ciHigh > 2.5 && s.ciHigh <= 4, `${s.ciLow}–${s.ciHigh}`);
  assert.deepEqual(summarize([1, 2, 3, 4]), s, 'seeded bootstrap: reproducible');
  const one = summarize([0.7]);
  assert.deepEqual([one.mean, one.std, one.ciLow, one.ciHigh], [0.7, 0, 0.7, 0.7]);
  close(quantile([0, 10], 0.1), 1);
});

test('Wilson intervals of a recall', () => {
  const half = wilson(5, 10);
  close(half.rate, 0.5);
  close(half.low, 0.236593, 1e-6);
  close(half.high, 0.763407, 1e-6);
  const none = wilson(0, 10);
  assert.equal(none.low, 0);
  close(none.high, 0.277533, 1e-6);
});

test('seeded sampling is reproducible and honours temperature, top-p and bans', () => {
  const logits = [0, 1, 2, 3];
  const draw = (seed: number, opts = {}) => Array.from({ length: 50 }, ((r) => () => sampleToken(logits, r, opts))(mulberry32(seed)));
  assert.deepEqual(draw(3), draw(3));
  assert.ok(draw(3, { temperature: 1e-6 }).every((t) => t === 3), 'temperature → 0 is greedy');
  assert.ok(draw(4, { banned: new Set([3]) }).every((t) => t !== 3));
  // top-p 0.5: token 3 alone has p = e³/Σ ≈ 0.64 ≥ 0.5
  assert.ok(draw(5, { topP: 0.5 }).every((t) => t === 3));
});
