/**
 * SnapKV inside llama.cpp on a real model: SmolLM2-135M-Instruct Q4_1 (llama, 30 layers, 9 query /
 * 3 KV heads, head size 64, a 49,152-token BPE vocabulary), fetched by `npm run models`. The tests
 * fail (not skip) with a message saying so when the model is missing.
 *
 * - Keep-all compaction (B = L) is bit-identical to the uncompressed cache: flash attention off and
 *   on, f16 and q8_0 caches (a q8_0 V cache needs flash attention), and f32.
 * - With B < L (L = 640, B = 192, the default window, kernel and pooling): every (layer, KV head)
 *   keeps the window and a top-(B − w) of the engine's own pooled scores; a fresh prefill compacted
 *   by the host with the rows snapKept reports decodes bit-identically (the selection read back is
 *   the one gathered); with one more cell than any head keeps, hidden from every head by the
 *   per-head mask, flash attention on is bit-identical too. The logits differ from full attention
 *   (the check can tell), and flash attention on vs off on the full cache is measured as the
 *   engine's own kernel deviation on this model.
 *
 * Not here: "the uncompressed cache with each head's dropped keys hidden by the per-head mask"
 * (compact(C ≥ B + 2) with every row shorter than C): the engine gives the slots no row fills
 * position −1 and decoding then diverges (by 11–17 logits, on the tiny model against the float64
 * reference too): a fault of llama_snapkv_compact_kept, reported with issue 13, not tested here
 * until it is fixed. The float64 reference would need Q4_1/Q8_0 weights and ~1 GB of float64.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { loadModel, type EngineModel } from '../../src/engine/model';
import type { KvCacheType } from '../../src/engine/native';
import { createSession, type EngineSession } from '../../src/engine/session';
import { checkRealModel } from '../helpers/models';

const ROOT = path.resolve(__dirname, '..', '..');
/** Prompt length L: real text, long enough for a budget well below it, short enough for CI. */
const L = 640;
/** The product's default observation window, kernel and pooling. */
const W = 32;
const KERNEL = 7;
const B = 192;

let model: EngineModel;
let prompt: number[];
let continuation: number[];

before(async () => {
  const file = checkRealModel();
  model = await loadModel(file);
  // real code and prose, cut to L tokens: the first 8,000 bytes of this repository's README then its
  // engine's source as they were at 4262262, frozen in a fixture (the live files change with every
  // commit, and the tolerances below are near-tie counts of one text: a README edit turned the
  // yardstick's top-1 agreement from 20/20 into 17/20)
  const text = fs.readFileSync(path.join(ROOT, 'test', 'engine', 'fixtures', 'real-prompt.txt'), 'utf8');
  prompt = Array.from(model.tokenize(text, { addSpecial: true })).slice(0, L);
  assert.equal(prompt.length, L, 'the source text is long enough');
  continuation = Array.from(model.tokenize(' The session keeps the KV cache of the prompt and compresses it with SnapKV before decoding.'));
});
after(() => model.dispose());

function session(fa: 'on' | 'off', kv: KvCacheType, window = W): EngineSession {
  return createSession(model, { contextSize: 1024, flashAttention: fa, kvCacheType: kv, snapWindow: window, threads: 2, threadsBatch: 2 });
}

/** Teacher-forces the continuation; returns each step's logits. */
async function follow(s: EngineSession): Promise<Float32Array[]> {
  const out: Float32Array[] = [];
  for (const t of continuation) out.push(await s.step(t));
  return out;
}

function maxAbsDiff(a: Float32Array[], b: Float32Array[]): number {
  let d = 0;
  for (let i = 0; i < a.length; i++) for (let v = 0; v < a[i]!.length; v++) d = Math.max(d, Math.abs(a[i]![v]! - b[i]![v]!));
  return d;
}

function argmax(x: Float32Array): number {
  let best = 0;
  for (let i = 1; i < x.length; i++) if (x[i]! > x[best]!) best = i;
  return best;
}

test('the real model is the pinned SmolLM2-135M-Instruct: llama, 30 layers, 9/3 heads, head size 64, 8K context', () => {
  const i = model.info;
  assert.deepEqual([i.architecture, i.nLayer, i.nHead, i.nHeadKv, i.nEmbd / i.nHead, i.nVocab, i.nCtxTrain, i.nSwa], ['llama', 30, 9, 3, 64, 49152, 8192, 0]);
  assert.match(i.chatTemplate ?? '', /<\|im_start\|>/);
});

for (const [fa, kv] of [['off', 'f16'], ['on', 'f16'], ['on', 'q8_0'], ['off', 'f32']] as const) {
  test(`keep-all compaction (B = L) is bit-identical to the uncompressed cache (flash attention ${fa}, ${kv} cache)`, async () => {
    const full = session(fa, kv);
    const kept = session(fa, kv);
    try {
      await full.prefill(prompt);
      await kept.prefill(prompt);
      const r = await kept.snap({ window: W, budget: L, kernel: KERNEL, pooling: 'max', force: true });
      assert.deepEqual([r.compacted, r.L, r.B, r.keptRows], [true, L, L, 30 * 3 * L]);
      const a = await follow(full);
      const b = await follow(kept);
      for (let i = 0; i < a.length; i++) assert.ok(Buffer.from(a[i]!.buffer).equals(Buffer.from(b[i]!.buffer)), `logits of continuation token ${i} differ`);
    } finally {
      full.dispose();
      kept.dispose();
    }
  });
}

for (const fa of ['off', 'on'] as const) {
  test(`B < L: SnapKV's kept rows are a top-k of its scores, and its logits are those of the same rows compacted by the host (flash attention ${fa}, f16)`, async () => {
    const full = session(fa, 'f16', 0);
    const snapped = session(fa, 'f16');
    const byHost = session(fa, 'f16', 0);
    const padded = session(fa, 'f16', 0);
    try {
      await full.prefill(prompt);
      const fullLogits = await follow(full);

      await snapped.prefill(prompt);
      const r = await snapped.snap({ window: W, budget: B, kernel: KERNEL, pooling: 'max', keepScores: true });
      assert.deepEqual([r.compacted, r.L, r.B, r.keptRows], [true, L, B, r.nLayer * r.nHeadKv * B]);
      assert.equal(snapped.stats().cells, B);
      const kept = snapped.snapKept();
      const scores = snapped.snapScores();
      const nRows = r.nLayer * r.nHeadKv;
      assert.equal(kept.length, nRows * B);

      // each row: ascending, the window last, the rest a top-(B − w) of the engine's own pooled scores
      const rowSets = new Set<string>();
      for (let row = 0; row < nRows; row++) {
        const k = Array.from(kept.subarray(row * B, (row + 1) * B));
        for (let i = 1; i < B; i++) assert.ok(k[i]! > k[i - 1]!, `row ${row}: ascending`);
        assert.deepEqual(k.slice(B - W), Array.from({ length: W }, (_, i) => L - W + i), `row ${row}: the window is kept`);
        const s = scores.subarray(row * (L - W), (row + 1) * (L - W));
        const set = new Set(k.slice(0, B - W));
        let minKept = Infinity;
        let maxDropped = -Infinity;
        for (let j = 0; j < L - W; j++) {
          if (set.has(j)) minKept = Math.min(minKept, s[j]!);
          else maxDropped = Math.max(maxDropped, s[j]!);
        }
        assert.ok(minKept >= maxDropped, `row ${row}: kept score ${minKept} < dropped ${maxDropped}`);
        rowSets.add(k.join(','));
      }
      assert.ok(rowSets.size > nRows / 2, `only ${rowSets.size} distinct kept sets over ${nRows} (layer, KV head) pairs`);
      const a = await follow(snapped);

      // the same rows given by the host to a fresh prefill: the positions snapKept reports are the
      // rows SnapKV gathered, so decoding is bit-identical
      await byHost.prefill(prompt);
      const h = await byHost.compact(B, kept);
      assert.deepEqual([h.compacted, h.B, h.keptRows], [true, B, nRows * B]);
      const b = await follow(byHost);
      for (let i = 0; i < a.length; i++) assert.ok(Buffer.from(a[i]!.buffer).equals(Buffer.from(b[i]!.buffer)), `host-compacted logits of token ${i} differ`);

      // one more cell than any head keeps, hidden from every head by the per-head mask
      await padded.prefill(prompt);
      const C = B + 1;
      const rows = new Int32Array(nRows * C).fill(-1);
      for (let row = 0; row < nRows; row++) rows.set(kept.subarray(row * B, (row + 1) * B), row * C);
      const p = await padded.compact(C, rows);
      assert.deepEqual([p.compacted, p.B, p.keptRows], [true, C, nRows * B]);
      const c = await follow(padded);
      const maskDiff = maxAbsDiff(a, c);

      // the uncompressed cache's size, L − 1 cells, every head seeing only its SnapKV rows (the
      // others hidden by the per-head mask): the same attention set through a 3× longer attended
      // span, so the kernels sum in another order (flash attention splits the cells into chunks)
      const wide = session(fa, 'f16', 0);
      let wideDiff: number;
      let wideAgree: number;
      try {
        await wide.prefill(prompt);
        const CL = L - 1;
        const wrows = new Int32Array(nRows * CL).fill(-1);
        for (let row = 0; row < nRows; row++) wrows.set(kept.subarray(row * B, (row + 1) * B), row * CL);
        const q = await wide.compact(CL, wrows);
        assert.deepEqual([q.compacted, q.B, q.keptRows], [true, CL, nRows * B]);
        const d = await follow(wide);
        wideDiff = maxAbsDiff(a, d);
        wideAgree = a.filter((x, i) => argmax(x) === argmax(d[i]!)).length;
      } finally {
        wide.dispose();
      }

      const effect = maxAbsDiff(a, fullLogits);
      const agree = a.filter((x, i) => argmax(x) === argmax(fullLogits[i]!)).length;
      console.log(`# SmolLM2 flash attention ${fa}: SnapKV (B cells) vs its rows masked in an L − 1 cell cache: max |Δlogit| ${wideDiff.toFixed(3)}, top-1 agreement ${wideAgree}/${a.length}`);
      // tolerance: the engine's own kernel deviation on this model (flash attention on vs off over
      // the same full cache: max |Δlogit| 1.09, top-1 20/20), far below what dropping the keys does
      assert.ok(wideDiff < 1.5 && wideDiff < effect / 4, `masked L − 1 cell cache vs compacted: max |Δlogit| ${wideDiff} (SnapKV's own effect ${effect})`);
      // (flash attention off measured 18/20 here, on 19/20: two near-ties flip, as in the yardstick's own runs)
      assert.ok(wideAgree >= a.length - 2, `masked L − 1 cell cache vs compacted: top-1 agreement ${wideAgree}/${a.length}`);
      console.log(
        `# SmolLM2 L=${L} B=${B} flash attention ${fa}: SnapKV vs full max |Δlogit| ${effect.toFixed(3)}, top-1 agreement ${agree}/${a.length}, ` +
          `SnapKV vs one extra masked cell ${maskDiff.toExponential(2)}, snap ${r.ms.toFixed(1)} ms`,
      );
      // the comparison can tell: dropping 70 % of the keys moves the logits
      assert.ok(effect > 0.1, `SnapKV vs full ${effect}: compression changed nothing measurable`);
      // with flash attention on the masked cell changes no bit; with it off it does on this model
      // (steps diverge by up to ~1 logit; not on the tiny model): reported, asserted only where exact
      if (fa === 'on') assert.equal(maskDiff, 0, 'a cell hidden from every head by the per-head mask changed the logits');
    } finally {
      for (const s of [full, snapped, byHost, padded]) s.dispose();
    }
  });
}

test('flash attention on vs off on the uncompressed cache: the engine\'s own kernel deviation on this model (the yardstick for other comparisons)', async () => {
  const out: Float32Array[][] = [];
  for (const fa of ['off', 'on'] as const) {
    const s = session(fa, 'f16', 0);
    try {
      await s.prefill(prompt);
      out.push(await follow(s));
    } finally {
      s.dispose();
    }
  }
  const d = maxAbsDiff(out[0]!, out[1]!);
  const agree = out[0]!.filter((x, i) => argmax(x) === argmax(out[1]![i]!)).length;
  console.log(`# SmolLM2 L=${L}: flash attention on vs off, f16 cache: max |Δlogit| ${d.toExponential(2)}, top-1 agreement ${agree}/${out[0]!.length}`);
  // llama.cpp's CPU flash attention accumulates in f16: a real deviation, far below SnapKV's effect
  assert.ok(d > 0 && d < 4, `flash attention on vs off: max |Δlogit| ${d}`);
  assert.ok(agree >= out[0]!.length - 2, `top-1 agreement ${agree}/${out[0]!.length}`);
});
