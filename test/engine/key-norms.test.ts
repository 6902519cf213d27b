/**
 * `llama_snapkv_key_norms` (native/patches/0007) and the key-norm scorer through the engine:
 * - the tiny model's key norms equal a float64 recomputation from the reference's post-RoPE K rows
 *   (f32 cache: to float rounding; f16 cache: to f16 rounding);
 * - a q8_0 cache gives the norms of the dequantized keys (within q8_0's rounding of the reference);
 * - after a compaction, slot j of (layer, KV head) holds the norm of the key it kept;
 * - an interleaved sliding-window model (gemma3) gives its global layers only, equal to the norms
 *   of the K rows its own state bytes hold;
 * - an empty sequence is refused with errParams;
 * - `snap({ scorer: 'key-norm' })` keeps exactly, per (layer, KV head), the B − w prefix positions
 *   of lowest reference norm plus the last w.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { SnapRefusedError } from '../../src/engine/errors';
import { loadModel, type EngineModel } from '../../src/engine/model';
import { loadAddon, type KvCacheType } from '../../src/engine/native';
import { createSession } from '../../src/engine/session';
import { ensureSyntheticModel } from '../../src/engine/synthetic';
import { checkTinyModel } from '../helpers/models';
import { loadStory } from '../helpers/story';
import { checkLowestNorms } from '../reference/key-norm-ref';
import { LlamaReference, type RefState } from '../reference/llama-ref';
import { writeSyntheticLlama } from '../reference/synthetic-llama';

let model: EngineModel;
let ref: LlamaReference;
let prompt: number[];
let refState: RefState;

before(async () => {
  ({ model, ref, prompt } = await loadStory());
  refState = ref.prefill(prompt);
});
after(() => model.dispose());

/** Float64 norms of the reference's K rows: [nLayer][nHeadKv][L]. */
function refNorms(st: RefState, L: number): Float64Array {
  const out = new Float64Array(st.nLayer * st.nHeadKv * L);
  for (let l = 0; l < st.nLayer; l++) {
    for (let h = 0; h < st.nHeadKv; h++) {
      for (let p = 0; p < L; p++) {
        const k = st.K[l]![h]![p]!;
        let s = 0;
        for (let d = 0; d < k.length; d++) s += k[d]! * k[d]!;
        out[(l * st.nHeadKv + h) * L + p] = Math.sqrt(s);
      }
    }
  }
  return out;
}

/** Largest |a − b| / b over the entries. */
function maxRelDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  assert.equal(a.length, b.length);
  let d = 0;
  for (let i = 0; i < a.length; i++) d = Math.max(d, Math.abs(a[i]! - b[i]!) / b[i]!);
  return d;
}

/**
 * Tolerances [relative]: layer 0's keys see no attention yet, so they differ from the reference
 * only by the cache's own rounding (f32 ~1e-7; f16: 11-bit mantissa, ≤ 2^-11 = 4.9e-4 per
 * element, so per norm); later layers' keys also carry the rounding of the attention over an f16
 * cache in the layers below (measured 2.0e-3).
 */
const TOL: Record<'f32' | 'f16', { layer0: number; all: number }> = { f32: { layer0: 1e-5, all: 1e-5 }, f16: { layer0: 5e-4, all: 5e-3 } };

for (const kv of ['f32', 'f16'] as KvCacheType[]) {
  test(`key norms of the tiny model equal the float64 reference's (${kv} cache)`, async () => {
    const s = createSession(model, { contextSize: 1024, flashAttention: 'off', kvCacheType: kv, snapWindow: 16, threads: 1, threadsBatch: 1 });
    try {
      await s.prefill(prompt);
      const r = await s.keyNorms();
      const L = prompt.length;
      assert.deepEqual([r.L, r.nLayer, r.nHeadKv], [L, model.info.nLayer, model.info.nHeadKv]);
      assert.equal(r.norms.length, model.info.nLayer * model.info.nHeadKv * L);
      const expect = refNorms(refState, L);
      const tol = TOL[kv as 'f32' | 'f16'];
      const n0 = model.info.nHeadKv * L;
      const d0 = maxRelDiff(r.norms.subarray(0, n0), expect.subarray(0, n0));
      const d = maxRelDiff(r.norms, expect);
      assert.ok(d0 < tol.layer0, `layer 0: max relative |Δnorm| ${d0} ≥ ${tol.layer0}`);
      assert.ok(d < tol.all, `max relative |Δnorm| ${d} ≥ ${tol.all}`);
      assert.equal(s.stats().cells, L, 'the cache is unchanged');
    } finally {
      s.dispose();
    }
  });
}

test('after a compaction, slot j of each (layer, KV head) holds the norm of the key it kept', async () => {
  const s = createSession(model, { contextSize: 1024, flashAttention: 'off', kvCacheType: 'f32', snapWindow: 16, threads: 1, threadsBatch: 1 });
  try {
    await s.prefill(prompt);
    const before = await s.keyNorms();
    const L = prompt.length;
    const B = 96;
    const snap = await s.snap({ window: 16, budget: B, kernel: 5, pooling: 'max' });
    assert.equal(snap.B, B);
    const kept = s.snapKept();
    const after = await s.keyNorms();
    assert.deepEqual([after.L, after.nLayer, after.nHeadKv], [B, before.nLayer, before.nHeadKv]);
    const rows = before.nLayer * before.nHeadKv;
    for (let r = 0; r < rows; r++) {
      for (let j = 0; j < B; j++) {
        // the rows are moved, not recomputed: bit-identical
        assert.equal(after.norms[r * B + j], before.norms[r * L + kept[r * B + j]!], `row ${r} slot ${j}`);
      }
    }
  } finally {
    s.dispose();
  }
});

test('an empty sequence is refused with errParams', async () => {
  const s = createSession(model, { contextSize: 256, flashAttention: 'off', kvCacheType: 'f32', snapWindow: 16, threads: 1 });
  try {
    const r = await s.native.snapKeyNorms(0);
    assert.equal(r.status, loadAddon().snapStatus.errParams);
    assert.match(r.error, /sequence 0 holds no cells/);
    assert.equal(r.norms.length, 0);
    await assert.rejects(() => s.keyNorms(), (e: Error) => e instanceof SnapRefusedError && /key norms refused: sequence 0 holds no cells/.test(e.message));
  } finally {
    s.dispose();
  }
});

test("snap({ scorer: 'key-norm' }) keeps, per (layer, KV head), the lowest reference norms of the prefix and the last w", async () => {
  const s = createSession(model, { contextSize: 1024, flashAttention: 'off', kvCacheType: 'f32', snapWindow: 16, threads: 1, threadsBatch: 1 });
  try {
    await s.prefill(prompt);
    const L = prompt.length;
    const w = 16;
    const B = 80;
    const r = await s.snap({ window: w, budget: B, scorer: 'key-norm' });
    assert.deepEqual([r.compacted, r.L, r.B], [true, L, B]);
    const kept = s.snapKept();
    const norms = refNorms(refState, L);
    const rows = model.info.nLayer * model.info.nHeadKv;
    for (let row = 0; row < rows; row++) {
      checkLowestNorms(kept.subarray(row * B, (row + 1) * B), (p) => norms[row * L + p]!, L, B, w, TOL.f32.all, `layer ${Math.floor(row / model.info.nHeadKv)} head ${row % model.info.nHeadKv}`);
    }
  } finally {
    s.dispose();
  }
});

test('a q8_0 cache gives the norms of its dequantized keys (head size 64 synthetic llama)', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-knorm-q8-'));
  try {
    const file = path.join(dir, 'synthetic-h64.gguf');
    writeSyntheticLlama(file, { tokenizerFrom: checkTinyModel(), nLayer: 2, nEmbd: 256, nHead: 4, nHeadKv: 1, nFf: 512, weightType: 'F16', seed: 3 });
    const m = await loadModel(file);
    const mref = LlamaReference.load(file);
    let seed = 11;
    const toks = Array.from({ length: 200 }, () => ((seed = (seed * 1103515245 + 12345) >>> 0) % 500) + 1);
    const expect = refNorms(mref.prefill(toks), toks.length);
    const norms: Record<string, Float32Array> = {};
    try {
      for (const kv of ['f16', 'q8_0'] as const) {
        const s = createSession(m, { contextSize: 512, flashAttention: 'on', kvCacheType: kv, snapWindow: 16, threads: 1, threadsBatch: 1 });
        try {
          await s.prefill(toks);
          norms[kv] = (await s.keyNorms()).norms;
        } finally {
          s.dispose();
        }
      }
    } finally {
      m.dispose();
    }
    // f16 weights: llama.cpp rounds activations to f16 for the matmuls (the logits differ by up to 2e-2)
    const dF16 = maxRelDiff(norms.f16!, expect);
    assert.ok(dF16 < 1e-2, `f16: max relative |Δnorm| ${dF16}`);
    // q8_0: 8-bit blocks of 32 (each element within half a step of amax/127 of its block)
    const dQ8 = maxRelDiff(norms.q8_0!, expect);
    assert.ok(dQ8 < 2e-2, `q8_0: max relative |Δnorm| ${dQ8}`);
    assert.ok(maxRelDiff(norms.q8_0!, norms.f16!) > 0, 'q8_0 norms are its own, not the f16 ones');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('gemma3 iSWA: the global layers only, equal to the norms of the K rows in its own state bytes', async () => {
  const SHAPE = { architecture: 'gemma3', slidingWindow: 32, nLayer: 12, nEmbd: 128, nHead: 4, nHeadKv: 2, nFf: 256, nVocab: 512, weightType: 'f32' as const, seed: 3 };
  const headDim = SHAPE.nEmbd / SHAPE.nHead;
  const L = 160;
  const toks = Array.from({ length: L }, (_, i) => ((i * 37 + 11) % 500) + 3);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-knorm-iswa-'));
  const m = await loadModel(await ensureSyntheticModel(dir, SHAPE));
  try {
    const s = createSession(m, { contextSize: 512, snapWindow: 16, threads: 1, threadsBatch: 1, flashAttention: 'off', kvCacheType: 'f32' });
    try {
      await s.prefill(toks);
      const r = await s.keyNorms();
      assert.deepEqual([r.L, r.nLayer, r.nHeadKv], [L, 2, SHAPE.nHeadKv]);
      // llama_state_seq_get_data: u32 magic, i32 seq_id, the base (global-layer) cache: u32 n_stream,
      // u32 cells, per cell (i32 pos, u32 n_seq_id, i32 seq_id), u32 v_trans, u32 n_layer, then per
      // layer i32 k_type, u64 k_row_bytes and the cells' K rows
      const b = await s.native.stateGet(0);
      assert.equal(b.readUInt32LE(8), 1);
      assert.equal(b.readUInt32LE(12), L);
      let o = 16 + 12 * L;
      o += 4; // v_trans
      assert.equal(b.readUInt32LE(o), 2, 'two global layers in the base cache');
      o += 4;
      const expect = new Float64Array(2 * SHAPE.nHeadKv * L);
      for (let l = 0; l < 2; l++) {
        assert.equal(b.readInt32LE(o), 0, 'F32 K');
        const rowBytes = Number(b.readBigUInt64LE(o + 4));
        assert.equal(rowBytes, SHAPE.nHeadKv * headDim * 4);
        o += 12;
        for (let p = 0; p < L; p++) {
          for (let h = 0; h < SHAPE.nHeadKv; h++) {
            let acc = 0;
            for (let d = 0; d < headDim; d++) {
              const x = b.readFloatLE(o + p * rowBytes + (h * headDim + d) * 4);
              acc += x * x;
            }
            expect[(l * SHAPE.nHeadKv + h) * L + p] = Math.sqrt(acc);
          }
        }
        o += L * rowBytes;
      }
      const d = maxRelDiff(r.norms, expect);
      assert.ok(d < 1e-6, `max relative |Δnorm| ${d}`);
    } finally {
      s.dispose();
    }
  } finally {
    m.dispose();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("snap({ scorer: 'key-norm-topup' }): per (layer, KV head) the base of lowest engine norms, SnapKV's best engine scores among the rest, the window", async () => {
  const w = 16;
  const B = 80;
  const opts = { contextSize: 1024, flashAttention: 'off' as const, kvCacheType: 'f32' as const, snapWindow: w, threads: 1, threadsBatch: 1 };
  const L = prompt.length;
  // the engine's own inputs, from uncompressed copies of the same prompt: key norms, SnapKV's pooled scores
  const a = createSession(model, opts);
  let norms: Float32Array;
  let scores: Float32Array;
  try {
    await a.prefill(prompt);
    norms = (await a.keyNorms()).norms;
    await a.snap({ window: w, budget: B, keepScores: true });
    scores = Float32Array.from(a.snapScores());
  } finally {
    a.dispose();
  }
  const s = createSession(model, opts);
  try {
    await s.prefill(prompt);
    const r = await s.snap({ window: w, budget: B, scorer: 'key-norm-topup' });
    assert.deepEqual([r.compacted, r.L, r.B], [true, L, B]);
    const kept = s.snapKept();
    const P = L - w;
    const base = Math.round(0.5 * (B - w));
    const rows = model.info.nLayer * model.info.nHeadKv;
    assert.equal(scores.length, rows * P);
    for (let row = 0; row < rows; row++) {
      const byNorm = Array.from({ length: P }, (_, p) => p).sort((x, y) => norms[row * L + x]! - norms[row * L + y]! || x - y);
      const chosen = new Set(byNorm.slice(0, base));
      const byScore = Array.from({ length: P }, (_, p) => p).filter((p) => !chosen.has(p)).sort((x, y) => scores[row * P + y]! - scores[row * P + x]! || x - y);
      for (const p of byScore.slice(0, B - w - base)) chosen.add(p);
      const expected = [...[...chosen].sort((x, y) => x - y), ...Array.from({ length: w }, (_, i) => P + i)];
      assert.deepEqual(Array.from(kept.subarray(row * B, (row + 1) * B)), expected, `layer ${Math.floor(row / model.info.nHeadKv)} head ${row % model.info.nHeadKv}`);
    }
  } finally {
    s.dispose();
  }
});
