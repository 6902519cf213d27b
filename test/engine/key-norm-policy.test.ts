/**
 * The key-norm scorer (src/engine/policies/key-norm.ts; Devoto et al. 2024, kvpress's
 * KnormPress) on hand-computed cases: every (layer, KV head) keeps the prefix positions of lowest
 * key norm plus the protected tail; composed with the allocators as SnapKV's scorer is; the
 * product's snapPolicy builds it with the window as its tail and refuses the code prior beside it;
 * and the key-norm base topped up by SnapKV (src/engine/policies/key-norm-topup.ts), by hand.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkKept, KeyNormScorer, KeyNormTopUpScorer, ScoredPolicy, SnapKvScorer, snapPolicy, UniformAllocator, AdaKvAllocator, PyramidAllocator } from '../../src/engine/policies';
import { parseSnapOptions } from '../../src/config/snap-options';
import { readSettings } from '../../src/config/settings';

// 1 layer, 2 KV heads, L = 6
const norms = Float32Array.from([
  3, 1, 4, 1.5, 9, 2, // head 0
  0.5, 2, 0.1, 7, 1, 1, // head 1
]);
const input = { L: 6, nLayer: 1, nHeadKv: 2, keyNorms: norms };

test('scores are the negated norms of the prefix (the tail unscored)', () => {
  const s = new KeyNormScorer({ tail: 2 });
  assert.deepEqual(Array.from(s.score({ ...input, budget: 4 })), [3, 1, 4, 1.5, 0.5, 2, 0.1, 7].map((x) => -Math.fround(x)));
  assert.equal(s.scoreWindow, 0);
  assert.equal(s.protectedTail, 2);
  assert.equal(s.readsKeyNorms, true);
});

test('uniform allocation, tail 2, B = 4: each head keeps its two lowest prefix norms and the tail', () => {
  // head 0 prefix norms [3, 1, 4, 1.5]: lowest at 1 (1) and 3 (1.5); head 1 [0.5, 2, 0.1, 7]: 2 (0.1), 0 (0.5)
  const kept = new ScoredPolicy(new KeyNormScorer({ tail: 2 }), new UniformAllocator()).select({ ...input, budget: 4 });
  assert.deepEqual(Array.from(kept), [1, 3, 4, 5, 0, 2, 4, 5]);
});

test("tail 0 (KnormPress), B = 3: the three lowest norms of all positions, ties to the lower position", () => {
  // head 0 [3, 1, 4, 1.5, 9, 2]: 1, 3, 5; head 1 [0.5, 2, 0.1, 7, 1, 1]: 2, 0, then 4 and 5 tie at 1 -> 4
  const kept = new ScoredPolicy(new KeyNormScorer(), new UniformAllocator()).select({ ...input, budget: 3 });
  assert.deepEqual(Array.from(kept), [1, 3, 5, 0, 2, 4]);
});

test('composes with AdaKV and PyramidKV: valid kept rows with the same total budget', () => {
  const L = 40;
  const nLayer = 3;
  const nHeadKv = 2;
  const keyNorms = Float32Array.from({ length: nLayer * nHeadKv * L }, (_, i) => 1 + ((i * 37) % 101) / 10);
  for (const allocator of [new AdaKvAllocator({ alpha: 0.2 }), new PyramidAllocator({ beta: 4 })]) {
    const policy = new ScoredPolicy(new KeyNormScorer({ tail: 4 }), allocator);
    const inp = { L, budget: 12, nLayer, nHeadKv, keyNorms };
    const kept = policy.select(inp);
    checkKept(inp, kept, true);
    assert.equal(Array.from(kept).filter((p) => p >= 0).length, nLayer * nHeadKv * 12, allocator.id);
  }
});

test('the product policy: key-norm with the window as its tail, off the device fast path; the code prior refused beside it', () => {
  const p = snapPolicy({ scorer: 'key-norm', window: 8 });
  assert.ok(p.scorer instanceof KeyNormScorer);
  assert.equal(p.scorer.protectedTail, 8);
  assert.equal(p.onDevice, false);
  assert.equal(snapPolicy({}).onDevice, true);
  assert.throws(() => snapPolicy({ scorer: 'key-norm', prior: { flags: new Uint8Array(4) } }), /code prior applies to SnapKV's scores/);
  assert.throws(() => snapPolicy({ scorer: 'knorm' as never }), /unknown scorer 'knorm'/);
});

test('missing or mis-sized norms are refused', () => {
  const s = new KeyNormScorer({ tail: 2 });
  assert.throws(() => s.score({ L: 6, budget: 4, nLayer: 1, nHeadKv: 2 }), /needs key norms \[1\]\[2\]\[6\], got none/);
  assert.throws(() => s.score({ L: 6, budget: 4, nLayer: 1, nHeadKv: 2, keyNorms: new Float32Array(6) }), /got 6/);
  assert.throws(() => new KeyNormScorer({ tail: -1 }), /integer ≥ 0/);
});

// ---- the key-norm base topped up by SnapKV (src/engine/policies/key-norm-topup.ts) ----

test('key-norm top-up, w = 2, B = 6, base share 0.5: two prefix positions by lowest norm, two more by SnapKV among the rest, then the window', () => {
  // 1 layer, 1 KV head, L = 8: prefix 0…5, window 6, 7. Pooled SnapKV scores (kernel 1) of the prefix:
  const pooled = Float32Array.from([0.9, 0.1, 0.8, 0.7, 0.2, 0.3]);
  const keyNorms = Float32Array.from([5, 1, 6, 7, 2, 3, 9, 9]);
  // base = round(0.5 · (6 − 2)) = 2: lowest norms 1 (1) and 4 (2); top-up 2 by score among {0, 2, 3, 5}: 0 (0.9), 2 (0.8)
  const p = new ScoredPolicy(new KeyNormTopUpScorer(new SnapKvScorer({ window: 2, kernel: 1 })), new UniformAllocator());
  const inp = { L: 8, budget: 6, nLayer: 1, nHeadKv: 1, pooledScores: pooled, keyNorms };
  assert.deepEqual(Array.from(p.select(inp)), [0, 1, 2, 4, 6, 7]);
  // SnapKV alone would keep 0, 2, 3, 5 (0.9, 0.8, 0.7, 0.3); key norm alone 1, 4, 5, 0 (1, 2, 3, 5)
  assert.deepEqual(Array.from(new ScoredPolicy(new SnapKvScorer({ window: 2, kernel: 1 }), new UniformAllocator()).select(inp)), [0, 2, 3, 5, 6, 7]);
  // share 0 is SnapKV, share 1 is key norm with the window as tail
  assert.deepEqual(Array.from(new ScoredPolicy(new KeyNormTopUpScorer(new SnapKvScorer({ window: 2, kernel: 1 }), { baseShare: 0 }), new UniformAllocator()).select(inp)), [0, 2, 3, 5, 6, 7]);
  assert.deepEqual(Array.from(new ScoredPolicy(new KeyNormTopUpScorer(new SnapKvScorer({ window: 2, kernel: 1 }), { baseShare: 1 }), new UniformAllocator()).select(inp)), [0, 1, 4, 5, 6, 7]);
  // B = 5: base round(0.5 · 3) = 2 (round half up: 1.5 → 2), top-up 1: 0
  assert.deepEqual(Array.from(p.select({ ...inp, budget: 5 })), [0, 1, 4, 6, 7]);
});

test('key-norm top-up through the product policy: uniform only, no code prior, needs the norms; the schema and the settings agree', () => {
  const p = snapPolicy({ scorer: 'key-norm-topup', window: 4 });
  assert.ok(p.scorer instanceof KeyNormTopUpScorer);
  assert.deepEqual([p.scorer.protectedTail, p.scorer.scoreWindow, p.scorer.readsKeyNorms, p.onDevice], [4, 4, true, false]);
  assert.throws(() => snapPolicy({ scorer: 'key-norm-topup', allocation: 'adakv' }), /needs the uniform allocation, got 'adakv'/);
  assert.throws(() => snapPolicy({ scorer: 'key-norm-topup', prior: { flags: new Uint8Array(4) } }), /not to the key-norm top-up/);
  assert.throws(() => new KeyNormTopUpScorer(new SnapKvScorer(), { baseShare: 1.5 }), /in \[0, 1\], got 1.5/);
  const s = new KeyNormTopUpScorer(new SnapKvScorer({ window: 2, kernel: 1 }));
  assert.throws(() => s.score({ L: 8, budget: 6, nLayer: 1, nHeadKv: 1, pooledScores: new Float32Array(6) }), /needs key norms \[1\]\[1\]\[8\], got none/);
  assert.throws(() => parseSnapOptions({ scorer: 'key-norm-topup', allocation: 'pyramid' }), /key-norm-topup' needs allocation 'uniform'/);
  const r = readSettings({ get: <T>(k: string) => ({ scorer: 'key-norm-topup', budgetAllocation: 'adakv' } as Record<string, unknown>)[k] as T | undefined });
  assert.equal(r.settings.budgetAllocation, 'uniform');
  assert.deepEqual(r.problems, [`reposnap.scorer 'key-norm-topup' needs reposnap.budgetAllocation 'uniform' (got another); using uniform`]);
});
