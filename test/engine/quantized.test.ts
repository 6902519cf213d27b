/**
 * Quantized KV caches on a head-size-64 synthetic llama (f16 weights, written by the test's own
 * GGUF writer so that the float64 reference reads it): keep-all compaction round-trips q8_0
 * blocks bit-exactly, and with
 * a q8_0 K cache (which llama.cpp stores Hadamard-rotated) the window queries are captured after
 * the rotation, so SnapKV's scores and selection agree with the float64 reference's.
 */
import assert from 'node:assert/strict';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { loadModel, type EngineModel } from '../../src/engine/model';
import { createSession } from '../../src/engine/session';
import fs from 'node:fs';
import { checkTinyModel } from '../helpers/models';
import { LlamaReference, snapkvScores } from '../reference/llama-ref';
import { writeSyntheticLlama } from '../reference/synthetic-llama';

let model: EngineModel;
let ref: LlamaReference;
let prompt: number[];
const shape = { nLayer: 2, nEmbd: 256, nHead: 4, nHeadKv: 1, nFf: 512 };
let dir: string;

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-quant-'));
  const file = path.join(dir, 'synthetic-h64.gguf');
  writeSyntheticLlama(file, { tokenizerFrom: checkTinyModel(), ...shape, weightType: 'F16', seed: 3 });
  model = await loadModel(file);
  ref = LlamaReference.load(file);
  let seed = 11;
  prompt = Array.from({ length: 300 }, () => ((seed = (seed * 1103515245 + 12345) >>> 0) % 500) + 1);
});
after(() => {
  model.dispose();
  fs.rmSync(dir, { recursive: true, force: true });
});

test('the synthetic model has the requested shape and matches the float64 reference', async () => {
  assert.deepEqual([model.info.nLayer, model.info.nEmbd, model.info.nHead, model.info.nHeadKv, model.info.nVocab], [2, 256, 4, 1, 512]);
  const s = createSession(model, { contextSize: 512, threads: 1, flashAttention: 'off', kvCacheType: 'f32', snapWindow: 0 });
  try {
    await s.prefill(prompt);
    const got = s.lastLogits();
    const expect = ref.prefill(prompt).logits;
    let d = 0;
    for (let v = 0; v < expect.length; v++) d = Math.max(d, Math.abs(got[v]! - expect[v]!));
    // f16 weights: llama.cpp rounds activations to f16 for the matmuls
    assert.ok(d < 2e-2, `max |Δlogit| ${d}`);
  } finally {
    s.dispose();
  }
});

test('a quantized KV cache with flash attention off is refused before llama.cpp, naming the type; f16 with it off is created', () => {
  for (const kvCacheType of ['q8_0', 'q4_0', 'q5_1'] as const) {
    assert.throws(
      () => createSession(model, { contextSize: 256, kvCacheType, flashAttention: 'off' }),
      (e: Error) => e.name === 'EngineError' && e.message.startsWith(`the quantized KV cache type ${kvCacheType} needs flash attention, which is off`),
    );
  }
  const s = createSession(model, { contextSize: 256, kvCacheType: 'f16', flashAttention: 'off' });
  s.dispose();
});

test('keep-all compaction of a q8_0 K/V cache is bit-identical (flash attention on)', async () => {
  const next = [5, 17, 42, 99, 7];
  const run = async (snap: boolean) => {
    const s = createSession(model, { contextSize: 512, threads: 1, flashAttention: 'on', kvCacheType: 'q8_0', snapWindow: 16 });
    try {
      await s.prefill(prompt);
      if (snap) assert.equal((await s.snap({ window: 16, budget: prompt.length, force: true })).B, prompt.length);
      const out: Buffer[] = [];
      for (const t of next) out.push(Buffer.from((await s.step(t)).buffer));
      return out;
    } finally {
      s.dispose();
    }
  };
  const a = await run(false);
  const b = await run(true);
  for (let i = 0; i < a.length; i++) assert.ok(a[i]!.equals(b[i]!), `token ${i}`);
});

test('with a q8_0 K cache (Hadamard-rotated) the window is captured after the rotation: scores match the reference', async () => {
  const w = 16;
  const B = 96;
  const L = prompt.length;
  const s = createSession(model, { contextSize: 512, threads: 1, flashAttention: 'on', kvCacheType: 'q8_0', snapWindow: w });
  try {
    await s.prefill(prompt);
    await s.snap({ window: w, budget: B, kernel: 5, keepScores: true });
    const scores = s.snapScores();
    const kept = s.snapKept();
    const refScores = snapkvScores(ref.prefill(prompt), { window: w, kernel: 5, pooling: 'max' });
    let maxDiff = 0;
    let wrong = 0;
    for (let l = 0; l < shape.nLayer; l++) {
      const e = scores.subarray(l * (L - w), (l + 1) * (L - w));
      const r = refScores[l]![0]!;
      for (let j = 0; j < L - w; j++) maxDiff = Math.max(maxDiff, Math.abs(e[j]! - r[j]!));
      // kept prefix positions vs the reference's top-(B - w), allowing near-ties (|Δscore| < 0.02)
      const order = Array.from({ length: L - w }, (_, j) => j).sort((x, y) => r[y]! - r[x]!);
      const threshold = r[order[B - w - 1]!]!;
      for (const p of kept.subarray(l * B, l * B + B - w)) if (r[p]! < threshold - 0.02) wrong++;
    }
    console.log(`# q8_0 + Hadamard: max |Δscore| ${maxDiff.toExponential(2)}, kept positions outside the reference's top-k: ${wrong} of ${shape.nLayer * (B - w)}`);
    // q8_0 quantization noise on q·k is ~1e-2 relative; a capture before the rotation would give unrelated scores
    assert.ok(maxDiff < 0.05, `max |Δscore| ${maxDiff}`);
    assert.equal(wrong, 0);
  } finally {
    s.dispose();
  }
});
