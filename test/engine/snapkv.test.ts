/**
 * SnapKV inside llama.cpp, checked against independent computations on the real tiny model:
 * keep-all compaction is bit-identical to the uncompressed cache, and after a real compaction
 * the logits match a float64 forward pass that hides exactly the keys each (layer, KV head)
 * dropped, while the engine's selection is a top-k of the reference's pooled scores.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { SnapRefusedError } from '../../src/engine/errors';
import type { EngineModel } from '../../src/engine/model';
import type { KvCacheType } from '../../src/engine/native';
import { createSession } from '../../src/engine/session';
import { enginePrecision, scoreTolerance } from '../helpers/precision';
import { loadStory } from '../helpers/story';
import { keptToVisible, LlamaReference, snapkvScores } from '../reference/llama-ref';

let model: EngineModel;
let ref: LlamaReference;
let prompt: number[];
let continuation: number[];

before(async () => {
  ({ model, ref, prompt, continuation } = await loadStory());
});

after(() => model.dispose());

/**
 * Tolerances. With flash attention off, llama.cpp's CPU path on an f32 cache matches the float64
 * reference to ~5e-6 in the logits, so the issue's bounds apply as they are. llama.cpp's CPU
 * flash-attention kernel computes in half precision: on the uncompressed cache it already differs
 * from the reference by ~1e-2 in the logits (measured: 9.8e-3), so with it on the bounds are the
 * measured full-attention deviation (`noise`) plus the same margins. An engine that rounds its
 * matrix products' operands to f16 (the Vulkan lane) gets the half-precision bounds with flash
 * attention off too (test/helpers/precision.ts, measured there).
 */
const PRECISION = enginePrecision();
const SCORE_TOL = {
  off: scoreTolerance({ flashAttention: 'off', kvCacheType: 'f32', halfCpu: 5e-3 }),
  on: scoreTolerance({ flashAttention: 'on', kvCacheType: 'f32', halfCpu: 5e-3 }),
};
/** The f32 engine's full-attention deviation with flash attention off (measured 5.5e-6); the f16-operand engine's: measured 1.0e-2 in the prompt's logits. */
const FULL_NOISE_OFF = PRECISION === 'f32' ? 1e-4 : 5e-2;

/** Prefills the prompt, optionally snaps, then teacher-forces the continuation; returns its logits. */
async function run(opts: { fa: 'on' | 'off'; kv: KvCacheType; snap?: { budget: number; window: number; kernel: number; pooling: 'max' | 'avg'; force?: boolean } }) {
  const session = createSession(model, { contextSize: 1024, flashAttention: opts.fa, kvCacheType: opts.kv, snapWindow: opts.snap?.window ?? 16, threads: 1, threadsBatch: 1 });
  try {
    await session.prefill(prompt);
    const snap = opts.snap ? await session.snap({ ...opts.snap, keepScores: true }) : undefined;
    const kept = opts.snap ? session.snapKept() : undefined;
    const scores = opts.snap ? session.snapScores() : undefined;
    const promptLogits = session.lastLogits();
    const stats = session.stats();
    const positionAfterSnap = session.position;
    const logits: Float32Array[] = [];
    for (const t of continuation) logits.push(await session.step(t));
    return { snap, kept, scores, stats, promptLogits, positionAfterSnap, lastPos: session.lastPosition(), logits };
  } finally {
    session.dispose();
  }
}

for (const fa of ['off', 'on'] as const) {
  for (const kv of ['f32', 'f16'] as const) {
    test(`keep-all snap (B = L) is bit-identical to the uncompressed cache (flash attention ${fa}, ${kv} cache)`, async () => {
      const full = await run({ fa, kv });
      const L = prompt.length;
      const kept = await run({ fa, kv, snap: { budget: L, window: 16, kernel: 7, pooling: 'max', force: true } });
      assert.equal(kept.snap!.compacted, true);
      assert.equal(kept.snap!.L, L);
      assert.equal(kept.snap!.B, L);
      for (let i = 0; i < continuation.length; i++) {
        assert.ok(Buffer.from(full.logits[i]!.buffer).equals(Buffer.from(kept.logits[i]!.buffer)), `logits of continuation token ${i} differ`);
      }
    });
  }
}

for (const fa of ['off', 'on'] as const) {
  for (const pooling of ['max', 'avg'] as const) {
    test(`compacted cache matches a float64 reference that hides each head's dropped keys (flash attention ${fa}, ${pooling} pooling)`, async () => {
      const L = prompt.length;
      const w = 16;
      const B = 96;
      const kernel = 5;
      const r = await run({ fa, kv: 'f32', snap: { budget: B, window: w, kernel, pooling } });
      assert.equal(r.snap!.compacted, true);
      assert.equal(r.snap!.B, B);

      const nLayer = ref.nLayer;
      const nKv = ref.nHeadKv;
      // kept positions: [layer][head][B] ascending, window always kept
      const kept: number[][][] = [];
      for (let l = 0; l < nLayer; l++) {
        kept.push([]);
        for (let h = 0; h < nKv; h++) {
          const k = Array.from(r.kept!.subarray((l * nKv + h) * B, (l * nKv + h + 1) * B));
          for (let i = 1; i < B; i++) assert.ok(k[i]! > k[i - 1]!, 'kept positions ascending');
          assert.deepEqual(k.slice(B - w), Array.from({ length: w }, (_, i) => L - w + i), 'the window is kept');
          kept[l]!.push(k);
        }
      }

      // pooled scores: engine (f32) vs reference (f64)
      const state = ref.prefill(prompt);
      const refScores = snapkvScores(state, { window: w, kernel, pooling });
      let maxScoreDiff = 0;
      for (let l = 0; l < nLayer; l++) {
        for (let h = 0; h < nKv; h++) {
          const e = r.scores!.subarray((l * nKv + h) * (L - w), (l * nKv + h + 1) * (L - w));
          const s = refScores[l]![h]!;
          for (let j = 0; j < L - w; j++) maxScoreDiff = Math.max(maxScoreDiff, Math.abs(e[j]! - s[j]!));
          // the engine's selection is a top-(B - w) of the reference scores (up to f32 rounding)
          const keptSet = new Set(kept[l]![h]!);
          let minKept = Infinity;
          let maxDropped = -Infinity;
          for (let j = 0; j < L - w; j++) {
            if (keptSet.has(j)) minKept = Math.min(minKept, s[j]!);
            else maxDropped = Math.max(maxDropped, s[j]!);
          }
          assert.ok(minKept >= maxDropped - 2 * SCORE_TOL[fa], `layer ${l} head ${h}: kept ${minKept} < dropped ${maxDropped}`);
        }
      }
      assert.ok(maxScoreDiff < SCORE_TOL[fa], `max |Δscore| = ${maxScoreDiff}`);
      // the tolerance still tells a wrong graph: the reference with the pooling kernel two wider, or
      // shifted by one position, is far outside it (measured: 0.56 or more)
      for (const [label, wrong, shift] of [
        ['kernel + 2', snapkvScores(state, { window: w, kernel: kernel + 2, pooling }), 0],
        ['shifted by one', refScores, 1],
      ] as const) {
        let d = 0;
        for (let l = 0; l < nLayer; l++) {
          for (let h = 0; h < nKv; h++) {
            const e = r.scores!.subarray((l * nKv + h) * (L - w), (l * nKv + h + 1) * (L - w));
            for (let j = shift; j < L - w; j++) d = Math.max(d, Math.abs(e[j]! - wrong[l]![h]![j - shift]!));
          }
        }
        assert.ok(d > 10 * SCORE_TOL[fa], `a reference with the ${label} is within ${d} of the engine's scores: the tolerance ${SCORE_TOL[fa]} cannot tell a wrong graph`);
      }

      // at least two (layer, head) pairs keep different position sets
      const keys = new Set(kept.flat().map((k) => k.join(',')));
      assert.ok(keys.size >= 2, 'every head kept the same positions');

      // decoding continues at position L on B + 1 cells
      assert.equal(r.positionAfterSnap, L);
      assert.equal(r.stats.cells, B);
      assert.equal(r.lastPos, L + continuation.length - 1);

      // the engine's own deviation from the reference with full attention, over the same continuation
      const full = await run({ fa, kv: 'f32' });
      const fullState = ref.prefill(prompt);
      let noise = 0;
      for (let i = 0; i < continuation.length; i++) {
        const expect = ref.decode(fullState, continuation[i]!, L + i);
        for (let v = 0; v < expect.length; v++) noise = Math.max(noise, Math.abs(full.logits[i]![v]! - expect[v]!));
      }
      if (fa === 'off') assert.ok(noise < FULL_NOISE_OFF, `full-attention deviation ${noise} (${PRECISION} engine)`);

      // logits vs the reference with each head's dropped keys hidden
      const visible = keptToVisible(kept);
      let maxDiff = 0;
      for (let i = 0; i < continuation.length; i++) {
        const expect = ref.decode(state, continuation[i]!, L + i, visible);
        const got = r.logits[i]!;
        for (let v = 0; v < expect.length; v++) maxDiff = Math.max(maxDiff, Math.abs(got[v]! - expect[v]!));
      }
      assert.ok(maxDiff <= 1e-3 + 2 * noise, `max |Δlogit| = ${maxDiff} (full-attention deviation ${noise})`);
      console.log(`# flash attention ${fa}, ${pooling}: max |Δlogit| ${maxDiff.toExponential(2)}, max |Δscore| ${maxScoreDiff.toExponential(2)}, full-attention deviation ${noise.toExponential(2)}`);

      // and compression changed something: the full-attention logits differ from the compressed ones
      const fullFirst = ref.decode(ref.prefill(prompt), continuation[0]!, L);
      let fullDiff = 0;
      for (let v = 0; v < fullFirst.length; v++) fullDiff = Math.max(fullDiff, Math.abs(fullFirst[v]! - r.logits[0]![v]!));
      assert.ok(fullDiff > 1e-3, 'compression had no effect on the logits');
    });
  }
}

test('snap is a no-op when L <= B, and refuses a window that was not captured', async () => {
  const session = createSession(model, { contextSize: 512, snapWindow: 16, threads: 1 });
  try {
    await session.prefill(prompt);
    const r = await session.snap({ window: 16, budget: prompt.length + 10 });
    assert.equal(r.compacted, false);
    assert.equal(r.B, prompt.length);
    await assert.rejects(session.snap({ window: 32, budget: 64 }), SnapRefusedError);
    assert.equal(session.stats().cells, prompt.length, 'a refused snap leaves the cache unchanged');
  } finally {
    session.dispose();
  }
});

test('a window that straddles two ubatches gives the same compaction as one ubatch', async () => {
  const keptWith = async (batchSize: number) => {
    const session = createSession(model, { contextSize: 1024, batchSize, snapWindow: 16, flashAttention: 'off', kvCacheType: 'f32', threads: 1 });
    try {
      await session.prefill(prompt);
      await session.snap({ window: 16, budget: 64, kernel: 5 });
      return Array.from(session.snapKept());
    } finally {
      session.dispose();
    }
  };
  // prompt.length - 8 puts the ubatch boundary 8 tokens before the end: inside the window
  const one = await keptWith(512);
  const split = await keptWith(prompt.length - 8);
  assert.deepEqual(split, one);
});
