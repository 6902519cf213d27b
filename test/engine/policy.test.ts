/**
 * Any eviction policy's kept positions go through the same on-device compaction: a
 * StreamingLLM-style choice (attention sinks + recent tokens, different per head here) matches
 * the float64 reference with exactly those keys visible; invalid choices are refused and leave
 * the cache unchanged.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { SnapRefusedError } from '../../src/engine/errors';
import type { EngineModel } from '../../src/engine/model';
import { createSession } from '../../src/engine/session';
import { loadStory } from '../helpers/story';
import { keptToVisible, LlamaReference } from '../reference/llama-ref';

let model: EngineModel;
let ref: LlamaReference;
let prompt: number[];

before(async () => {
  ({ model, ref, prompt } = await loadStory());
});
after(() => model.dispose());

test('kept positions from a policy compact the cache and match the float64 reference', async () => {
  const L = prompt.length;
  const B = 80;
  const nLayer = ref.nLayer;
  const nKv = ref.nHeadKv;
  // head h of layer l keeps 4 + h + l sinks and the most recent tokens: every (layer, head) differs
  const kept: number[][][] = [];
  const flat = new Int32Array(nLayer * nKv * B);
  for (let l = 0; l < nLayer; l++) {
    kept.push([]);
    for (let h = 0; h < nKv; h++) {
      const sinks = 4 + h + l;
      const k = [...Array.from({ length: sinks }, (_, i) => i), ...Array.from({ length: B - sinks }, (_, i) => L - (B - sinks) + i)];
      kept[l]!.push(k);
      flat.set(k, (l * nKv + h) * B);
    }
  }
  const s = createSession(model, { contextSize: 1024, snapWindow: 0, threads: 1, flashAttention: 'off', kvCacheType: 'f32' });
  try {
    await s.prefill(prompt);
    const r = await s.compact(B, flat);
    assert.deepEqual([r.L, r.B, r.compacted], [L, B, true]);
    assert.deepEqual(Array.from(s.snapKept()), Array.from(flat));
    assert.equal(s.stats().cells, B);

    const state = ref.prefill(prompt);
    const visible = keptToVisible(kept);
    const next = Array.from(model.tokenize(' The end.'));
    let maxDiff = 0;
    for (let i = 0; i < next.length; i++) {
      const got = await s.step(next[i]!);
      const expect = ref.decode(state, next[i]!, L + i, visible);
      for (let v = 0; v < expect.length; v++) maxDiff = Math.max(maxDiff, Math.abs(got[v]! - expect[v]!));
    }
    assert.ok(maxDiff <= 1e-3, `max |Δlogit| = ${maxDiff}`);
    assert.equal(s.lastPosition(), L + next.length - 1, 'decoding continued at position L');
  } finally {
    s.dispose();
  }
});

test('invalid kept positions are refused and the cache is unchanged', async () => {
  const L = prompt.length;
  const B = 40;
  const n = ref.nLayer * ref.nHeadKv * B;
  const valid = new Int32Array(n);
  for (let r = 0; r < n; r += B) for (let j = 0; j < B; j++) valid[r + j] = L - B + j;
  const descending = Int32Array.from(valid);
  descending[5] = descending[4]!;
  const outOfRange = Int32Array.from(valid);
  outOfRange[B - 1] = L + 5;
  const s = createSession(model, { contextSize: 1024, snapWindow: 0, threads: 1 });
  try {
    await s.prefill(prompt);
    for (const [name, kept, pattern] of [
      ['not ascending', descending, /strictly ascending/],
      ['not in the sequence', outOfRange, /not in the sequence/],
      ['wrong size', valid.subarray(0, n - 1), /expected n_layer\*n_head_kv\*n_budget/],
    ] as const) {
      await assert.rejects(s.compact(B, kept), (e: Error) => e instanceof SnapRefusedError && pattern.test(e.message), name);
      assert.equal(s.stats().cells, L, `${name}: cache unchanged`);
    }
    assert.equal((await s.compact(B, valid)).B, B);
  } finally {
    s.dispose();
  }
});
