/**
 * The configuration matrix, each case against the float64 reference on the real tiny model:
 * flash attention on/off × K/V cache f32/f16 × window 16/32 × pooling max/avg × kernel 1/5/7 ×
 * budget B = w, w < B < L, B ≥ L. For each case: the engine's pooled scores match the
 * reference's, its kept set is a top-(B − w) of the reference scores, and the logits of a
 * teacher-forced continuation match the reference with exactly the dropped keys hidden — within
 * the engine's own deviation from the reference on the uncompressed cache for that configuration
 * (measured per configuration: f16 rounding, llama.cpp's half-precision CPU flash attention).
 * (q8_0 on head size 64 is in quantized.test.ts; a window across ubatches in snapkv.test.ts.)
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { loadModel, type EngineModel } from '../../src/engine/model';
import type { KvCacheType } from '../../src/engine/native';
import { createSession } from '../../src/engine/session';
import { checkTinyModel, STORY } from '../helpers/models';
import { scoreTolerance } from '../helpers/precision';
import { keptToVisible, LlamaReference, snapkvScores, type RefState } from '../reference/llama-ref';

let model: EngineModel;
let ref: LlamaReference;
let prompt: number[];
let next: number[];
let refState: RefState;
const fullRef: Float64Array[] = [];

before(async () => {
  const file = checkTinyModel();
  model = await loadModel(file);
  ref = LlamaReference.load(file);
  prompt = Array.from(model.tokenize(STORY, { addSpecial: true })).slice(0, 200);
  next = Array.from(model.tokenize(' The dog ran home.'));
  refState = ref.prefill(prompt);
  const s = ref.prefill(prompt);
  for (let i = 0; i < next.length; i++) fullRef.push(ref.decode(s, next[i]!, prompt.length + i));
});
after(() => model.dispose());

function maxAbs(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let d = 0;
  for (let i = 0; i < a.length; i++) d = Math.max(d, Math.abs(a[i]! - b[i]!));
  return d;
}

for (const fa of ['off', 'on'] as const) {
  for (const kv of ['f32', 'f16'] as KvCacheType[]) {
    test(`matrix: flash attention ${fa}, ${kv} cache`, async () => {
      const L = prompt.length;
      const noiseOf = new Map<number, number>();
      // the engine's deviation from the reference with full attention, for this configuration
      const full = createSession(model, { contextSize: 512, flashAttention: fa, kvCacheType: kv, snapWindow: 0, threads: 1 });
      let noise = 0;
      try {
        await full.prefill(prompt);
        for (let i = 0; i < next.length; i++) noise = Math.max(noise, maxAbs(await full.step(next[i]!), fullRef[i]!));
      } finally {
        full.dispose();
      }
      noiseOf.set(0, noise);
      // scores are sums of up to w probabilities; f16 keys and half-precision FA move them by ~1e-2,
      // as do an engine's f16 matmul operands (test/helpers/precision.ts)
      const scoreTol = scoreTolerance({ flashAttention: fa, kvCacheType: kv, halfCpu: 2e-2 });
      let cases = 0;
      let worst = 0;
      for (const w of [16, 32]) {
        for (const pooling of ['max', 'avg'] as const) {
          for (const kernel of [1, 5, 7]) {
            for (const B of [w, 96, L + 8]) {
              const s = createSession(model, { contextSize: 512, flashAttention: fa, kvCacheType: kv, snapWindow: w, threads: 1 });
              try {
                await s.prefill(prompt);
                const r = await s.snap({ window: w, budget: B, kernel, pooling, keepScores: true });
                const name = `w=${w} ${pooling} k=${kernel} B=${B}`;
                if (B >= L) {
                  assert.equal(r.compacted, false, name);
                  assert.equal(s.stats().cells, L, name);
                  continue;
                }
                assert.equal(r.B, B, name);
                const nKv = ref.nHeadKv;
                const kept: number[][][] = [];
                const refScores = snapkvScores(refState, { window: w, kernel, pooling });
                const engScores = s.snapScores();
                const keptFlat = s.snapKept();
                for (let l = 0; l < ref.nLayer; l++) {
                  kept.push([]);
                  for (let h = 0; h < nKv; h++) {
                    const k = Array.from(keptFlat.subarray((l * nKv + h) * B, (l * nKv + h + 1) * B));
                    kept[l]!.push(k);
                    const e = engScores.subarray((l * nKv + h) * (L - w), (l * nKv + h + 1) * (L - w));
                    const rs = refScores[l]![h]!;
                    assert.ok(maxAbs(e, rs) < scoreTol, `${name} layer ${l} head ${h}: |Δscore| ${maxAbs(e, rs)}`);
                    const set = new Set(k);
                    let minKept = Infinity;
                    let maxDropped = -Infinity;
                    for (let j = 0; j < L - w; j++) {
                      if (set.has(j)) minKept = Math.min(minKept, rs[j]!);
                      else maxDropped = Math.max(maxDropped, rs[j]!);
                    }
                    if (B > w) assert.ok(minKept >= maxDropped - 2 * scoreTol, `${name} layer ${l} head ${h}: not a top-k`);
                    assert.deepEqual(k.slice(B - w), Array.from({ length: w }, (_, i) => L - w + i), `${name}: window kept`);
                  }
                }
                const st = ref.prefill(prompt);
                const visible = keptToVisible(kept);
                let d = 0;
                for (let i = 0; i < next.length; i++) d = Math.max(d, maxAbs(await s.step(next[i]!), ref.decode(st, next[i]!, L + i, visible)));
                // f16 keys and values: with only B kept keys their rounding errors no longer average out
                // over hundreds of keys as in the full-attention deviation; 5e-2 is ~2^-11 (f16's
                // precision) × logits of magnitude ~20 × a few layers
                const tol = (kv === 'f16' ? 5e-2 : 1e-3) + 2 * noise;
                assert.ok(d <= tol, `${name}: max |Δlogit| ${d} (full-attention deviation ${noise})`);
                worst = Math.max(worst, d);
                cases++;
              } finally {
                s.dispose();
              }
            }
          }
        }
      }
      console.log(`# flash attention ${fa}, ${kv}: ${cases} compacted cases, worst max |Δlogit| ${worst.toExponential(2)}, full-attention deviation ${noise.toExponential(2)}`);
    });
  }
}

test('a prompt shorter than the window is left as it is', async () => {
  const s = createSession(model, { contextSize: 512, snapWindow: 32, threads: 1 });
  try {
    await s.prefill(prompt.slice(0, 20));
    const r = await s.snap({ window: 32, budget: 32 });
    assert.equal(r.compacted, false);
    assert.equal(s.stats().cells, 20);
  } finally {
    s.dispose();
  }
});
