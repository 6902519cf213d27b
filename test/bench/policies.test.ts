/**
 * The fidelity benchmark's eviction policies (bench/fidelity/policies): exact kept positions on
 * small hand-checked cases, the layout [nLayer][nHeadKv][B], and the host SnapKV selection
 * against the engine's own on-device selection on the tiny model.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadModel } from '../../src/engine/model';
import { TeacherForcer } from '../../bench/fidelity/engine';
import { checkKept, type PolicyInput } from '../../bench/fidelity/policy';
import { RandomPolicy } from '../../bench/fidelity/policies/random';
import { RecentPolicy } from '../../bench/fidelity/policies/recent';
import { pool1d, SnapKvPolicy, topKAscending } from '../../bench/fidelity/policies/snapkv';
import { StreamingLlmPolicy } from '../../bench/fidelity/policies/streaming-llm';
import { budgetFor, sharedFraction } from '../../bench/fidelity/benchmark';
import { checkTinyModel, STORY } from '../helpers/models';

/** Rows of a kept layout: [layer·nHeadKv + head][B]. */
function rows(kept: Int32Array, B: number): number[][] {
  const out: number[][] = [];
  for (let r = 0; r < kept.length; r += B) out.push(Array.from(kept.subarray(r, r + B)));
  return out;
}

const shape = { nLayer: 2, nHeadKv: 2 };

test('keep-recent keeps the last B positions in every (layer, head)', () => {
  const input: PolicyInput = { L: 10, budget: 4, ...shape };
  const kept = new RecentPolicy().select(input);
  checkKept(input, kept);
  assert.deepEqual(rows(kept, 4), Array(4).fill([6, 7, 8, 9]));
});

test('StreamingLLM keeps 4 sinks and the most recent B − 4, and at most B/2 sinks', () => {
  const p = new StreamingLlmPolicy({ sinks: 4 });
  assert.deepEqual(rows(p.select({ L: 20, budget: 10, ...shape }), 10)[0], [0, 1, 2, 3, 14, 15, 16, 17, 18, 19]);
  assert.deepEqual(rows(p.select({ L: 20, budget: 6, ...shape }), 6)[3], [0, 1, 2, 17, 18, 19]);
  assert.deepEqual(rows(p.select({ L: 20, budget: 1, ...shape }), 1)[0], [19]);
  assert.deepEqual(rows(p.select({ L: 5, budget: 5, ...shape }), 5)[0], [0, 1, 2, 3, 4]);
});

test('pooling uses same padding; average pooling divides by the positions inside', () => {
  const s = [0.1, 0.9, 0.2, 0.0, 0.5, 0.3, 0.0, 0.7];
  assert.deepEqual(Array.from(pool1d(s, 3, 'max')), [0.9, 0.9, 0.9, 0.5, 0.5, 0.5, 0.7, 0.7]);
  const avg = Array.from(pool1d(s, 3, 'avg'));
  const expected = [(0.1 + 0.9) / 2, (0.1 + 0.9 + 0.2) / 3, (0.9 + 0.2) / 3, (0.2 + 0.5) / 3, (0.5 + 0.3) / 3, (0.5 + 0.3) / 3, (0.3 + 0.7) / 3, 0.7 / 2];
  avg.forEach((v, i) => assert.ok(Math.abs(v - expected[i]!) < 1e-15, `avg[${i}] = ${v}`));
  assert.deepEqual(Array.from(pool1d(s, 1, 'avg')), s);
  assert.deepEqual(topKAscending([0.5, 0.9, 0.9, 0.1], 2), [1, 2]);
  assert.deepEqual(topKAscending([0.9, 0.5, 0.9, 0.9], 2), [0, 2], 'ties go to the lower position');
});

test('SnapKV keeps the top B − w pooled prefix positions plus the window, per head', () => {
  // L = 10, w = 2: prefix positions 0..7 scored, window 8, 9; one layer, two KV heads
  const head0 = [0.1, 0.9, 0.2, 0.0, 0.5, 0.3, 0.0, 0.7];
  const head1 = [0.8, 0.0, 0.0, 0.3, 0.0, 0.0, 0.0, 0.1];
  const scores = new Map([[2, Float32Array.from([...head0, ...head1])]]);
  const input = (budget: number): PolicyInput => ({ L: 10, budget, nLayer: 1, nHeadKv: 2, windowScores: scores });
  const run = (kernel: number, pooling: 'max' | 'avg', budget: number) => rows(new SnapKvPolicy({ window: 2, kernel, pooling }).select(input(budget)), budget);

  // kernel 1: head 0 keeps 1 (0.9), 7 (0.7), 4 (0.5); head 1 keeps 0 (0.8), 3 (0.3), 7 (0.1)
  assert.deepEqual(run(1, 'max', 5), [[1, 4, 7, 8, 9], [0, 3, 7, 8, 9]]);
  // max kernel 3, head 0 pooled [.9 .9 .9 .5 .5 .5 .7 .7]: 0, 1, 2, then 6 before 7 (tie)
  assert.deepEqual(run(3, 'max', 6)[0], [0, 1, 2, 6, 8, 9]);
  // avg kernel 3, head 0 pooled [.5 .4 .367 .233 .267 .267 .333 .35]: 0, 1, 2, 7
  assert.deepEqual(run(3, 'avg', 6)[0], [0, 1, 2, 7, 8, 9]);
  // avg kernel 3, head 1 pooled [.4 .267 .1 .1 .1 0 .033 .05]: 0, 1, then 2 (tie with 3, 4)
  assert.deepEqual(run(3, 'avg', 5)[1], [0, 1, 2, 8, 9]);
  // B ≤ w: only the most recent B positions fit
  assert.deepEqual(run(7, 'max', 2), [[8, 9], [8, 9]]);
  assert.deepEqual(run(7, 'max', 1), [[9], [9]]);
  for (const B of [1, 2, 3, 6, 10]) checkKept(input(B), new SnapKvPolicy({ window: 2, kernel: 7, pooling: 'avg' }).select(input(B)));
  assert.throws(() => new SnapKvPolicy({ window: 4 }).select(input(6)), /needs window scores/);
  assert.throws(() => new SnapKvPolicy({ kernel: 4 }), /odd/);
});

test('random keeps the window and a seeded uniform sample of the prefix', () => {
  const p = new RandomPolicy({ window: 2, seed: 1 });
  // exact cases: everything, only the window, one prefix position left to draw
  assert.deepEqual(rows(p.select({ L: 6, budget: 6, ...shape }), 6)[0], [0, 1, 2, 3, 4, 5]);
  assert.deepEqual(rows(p.select({ L: 10, budget: 2, ...shape }), 2), Array(4).fill([8, 9]));
  assert.deepEqual(rows(p.select({ L: 10, budget: 1, ...shape }), 1)[0], [9]);
  assert.deepEqual(rows(p.select({ L: 3, budget: 3, ...shape }), 3)[0], [0, 1, 2]);

  const input: PolicyInput = { L: 40, budget: 12, ...shape };
  const a = p.select(input);
  checkKept(input, a);
  assert.deepEqual(a, p.select(input), 'same seed, same positions');
  assert.notDeepEqual(a, new RandomPolicy({ window: 2, seed: 2 }).select(input), 'another seed, other positions');
  const r = rows(a, 12);
  for (const row of r) assert.deepEqual(row.slice(-2), [38, 39], 'the window is kept');
  assert.ok(new Set(r.map((x) => x.join())).size > 1, 'heads draw different positions');

  // each prefix position is kept with probability (B − w)/(L − w) = 10/38 ≈ 0.263
  const counts = new Array(38).fill(0);
  const draws = 400;
  for (let seed = 0; seed < draws; seed++) for (const p0 of new RandomPolicy({ window: 2, seed }).select(input).subarray(0, 10)) counts[p0]++;
  for (const c of counts) assert.ok(Math.abs(c / draws - 10 / 38) < 0.09, `frequency ${c / draws}`);
});

test('checkKept refuses layouts the engine would refuse', () => {
  const input: PolicyInput = { L: 10, budget: 2, nLayer: 1, nHeadKv: 1 };
  assert.throws(() => checkKept(input, Int32Array.of(3, 3)), /strictly ascending/);
  assert.throws(() => checkKept(input, Int32Array.of(3, 10)), /strictly ascending/);
  assert.throws(() => checkKept(input, Int32Array.of(3)), /entries/);
  assert.equal(budgetFor(0.05, 400), 20);
  assert.equal(budgetFor(0.05, 10), 1);
  assert.equal(sharedFraction(Int32Array.of(1, 2, 5, 6), Int32Array.of(1, 3, 5, 6), 2), 0.75);
});

test('the host SnapKV selection from the engine\'s unpooled scores is the engine\'s own selection', async () => {
  const model = await loadModel(checkTinyModel());
  const forcer = new TeacherForcer(model, { contextSize: 512 });
  try {
    const tokens = Array.from(model.tokenize(STORY, { addSpecial: true }));
    const L = tokens.length;
    const w = 16;
    forcer.arm(w);
    await forcer.extend(tokens.slice(0, L - w));
    const base = await forcer.save(new Float32Array());
    await forcer.extend(tokens.slice(L - w));
    const scores = new Map([[w, await forcer.windowScores(w)]]);
    const { nLayer, nHeadKv } = forcer.shape;
    for (const [kernel, pooling, B, minShared] of [[1, 'max', 96, 1], [7, 'avg', 96, 0.99], [7, 'max', 64, 0.97]] as const) {
      const host = new SnapKvPolicy({ window: w, kernel, pooling }).select({ L, budget: B, nLayer, nHeadKv, windowScores: scores });
      await forcer.restore(base);
      await forcer.extend(tokens.slice(L - w));
      const device = await forcer.snap(w, B, kernel, pooling);
      // tolerance: float32 (engine) vs float64 (host) pooling and ggml's unstable top_k can swap exact or near ties
      const shared = sharedFraction(host, device, B);
      assert.ok(shared >= minShared, `kernel ${kernel} ${pooling}: ${shared} of the kept positions shared`);
    }
  } finally {
    forcer.dispose();
    model.dispose();
  }
});
