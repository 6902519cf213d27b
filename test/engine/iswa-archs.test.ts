/**
 * SnapKV on the other interleaved sliding-window architectures of issue 17, beside Gemma 3
 * (iswa.test.ts): synthetic models that llama.cpp itself builds (`llama_model_init_from_user`, the
 * loader's default sliding-window pattern), F32 weights and F32 K/V:
 * - gpt-oss (`llama_model_openai_moe`): alternating layers, sliding ones first (period 2: layers
 *   1, 3 global), window 128, learned attention sinks `blk.N.attn_sinks` (one logit per query head,
 *   added to every softmax row: `ggml_soft_max_add_sinks` / `ggml_flash_attn_ext_add_sinks`) and
 *   a mixture of 4 experts (2 routed) in every layer; every sink is set to the logit 4 (e^4 ≈ 55,
 *   against a row's Σ e^(q·k/√d) of the order of its key count), so that they carry a visible share
 *   of each softmax: the same model with the sinks at −1e4 (none) decodes other logits;
 * - Cohere 2 (`llama_model_cohere2`): 3 sliding layers to 1 global (period 4: layers 3, 7 global),
 *   window 32, RoPE in the sliding layers only (the global layers use no position encoding),
 *   parallel attention and FFN, LayerNorm.
 * Checked for each, flash attention off and on:
 * - keep-all (B = L, forced) leaves the logits bit-identical to the uncompressed iSWA cache;
 * - for B < L the logits match the uncompressed iSWA cache with each global (layer, KV head)'s
 *   dropped keys hidden by a per-head mask (test/helpers/iswa-state.ts) within the tolerances of
 *   iswa.test.ts (1e-3 without flash attention, 1e-2 with), and differ from the unmasked cache's by
 *   more than 10× that; for gpt-oss both sides apply the same learned sinks, which SnapKV never
 *   touches (they are weights, not cache rows), so a compaction that lost them would fail the match;
 * - the sliding layers' window is untouched (stats), the KV bytes before and after are exact.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadModel, type EngineModel } from '../../src/engine/model';
import { createSession, type EngineSession } from '../../src/engine/session';
import { ensureSyntheticModel, type SyntheticShape } from '../../src/engine/synthetic';
import { maxAbsDiff, withSnapMask } from '../helpers/iswa-state';

interface Case {
  shape: SyntheticShape & { nLayer: number; nEmbd: number; nHead: number; nHeadKv: number; slidingWindow: number };
  /** The global layers by llama.cpp's pattern (llama_hparams::set_swa_pattern: il % period == period − 1). */
  globalLayers: number[];
  L: number;
  B: number;
}

const CASES: Case[] = [
  {
    shape: { architecture: 'gpt-oss', slidingWindow: 128, nLayer: 4, nEmbd: 128, nHead: 4, nHeadKv: 2, nFf: 64, nExpert: 4, nExpertUsed: 2, sinkLogit: 4, nVocab: 512, weightType: 'f32', seed: 5 },
    globalLayers: [1, 3],
    L: 320,
    B: 96,
  },
  {
    shape: { architecture: 'cohere2', slidingWindow: 32, nLayer: 8, nEmbd: 128, nHead: 4, nHeadKv: 2, nFf: 256, nVocab: 512, weightType: 'f32', seed: 7 },
    globalLayers: [3, 7],
    L: 160,
    B: 48,
  },
];

const W = 16;
const CONT = [7, 300, 41, 97, 5];

for (const c of CASES) {
  const { shape, globalLayers, L, B } = c;
  const nGlobal = globalLayers.length;
  const nSwaLayers = shape.nLayer - nGlobal;
  const headDim = shape.nEmbd / shape.nHead;
  /** K + V bytes of one cell over the given layers: layers · n_head_kv · (d_k + d_v) · 4 (F32 cache). */
  const bytesPerCell = (layers: number) => layers * shape.nHeadKv * (headDim + headDim) * 4;
  const prompt = Array.from({ length: L }, (_, i) => ((i * 37 + 11) % 500) + 3);

  describe(`${shape.architecture} iSWA`, () => {
    let dir: string;
    let model: EngineModel;

    before(async () => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), `reposnap-iswa-${shape.architecture}-`));
      model = await loadModel(await ensureSyntheticModel(dir, shape));
    });

    after(() => {
      model.dispose();
      fs.rmSync(dir, { recursive: true, force: true });
    });

    const open = (fa: 'on' | 'off'): EngineSession =>
      createSession(model, { contextSize: 512, snapWindow: W, threads: 1, threadsBatch: 1, flashAttention: fa, kvCacheType: 'f32' });

    async function continueWith(s: EngineSession): Promise<Float32Array[]> {
      const out: Float32Array[] = [];
      for (const t of CONT) out.push(Float32Array.from(await s.step(t)));
      return out;
    }

    test('the model is the architecture asked for, with its sliding window', () => {
      assert.deepEqual([model.meta.architecture, model.info.nSwa], [shape.architecture, shape.slidingWindow]);
    });

    if (shape.sinkLogit !== undefined) {
      test('the learned attention sinks act: the same weights with the sinks at -1e4 decode other logits', async () => {
        const noSinks = await loadModel(await ensureSyntheticModel(dir, { ...shape, sinkLogit: -1e4 }));
        const a = open('off');
        const b = createSession(noSinks, { contextSize: 512, snapWindow: W, threads: 1, threadsBatch: 1, flashAttention: 'off', kvCacheType: 'f32' });
        try {
          await a.prefill(prompt);
          await b.prefill(prompt);
          const d = maxAbsDiff(await continueWith(a), await continueWith(b));
          console.log(`# ${shape.architecture}: sinks ${shape.sinkLogit} vs none: max |Δlogit| ${d.toExponential(2)}`);
          assert.ok(d > 0.1, `the sinks change the logits (max |Δlogit| ${d})`);
        } finally {
          a.dispose();
          b.dispose();
          noSinks.dispose();
        }
      });
    }

    for (const fa of ['off', 'on'] as const) {
      test(`keep-all (B = L) is bit-identical to the uncompressed cache (flash attention ${fa})`, async () => {
        const full = open(fa);
        const kept = open(fa);
        try {
          await full.prefill(prompt);
          const lgFull = await continueWith(full);
          await kept.prefill(prompt);
          const r = await kept.snap({ window: W, budget: L, force: true });
          assert.deepEqual([r.compacted, r.L, r.B, r.nLayer, r.nHeadKv], [true, L, L, nGlobal, shape.nHeadKv], 'the global layers are compacted (forced keep-all)');
          assert.equal(maxAbsDiff(await continueWith(kept), lgFull), 0);
        } finally {
          full.dispose();
          kept.dispose();
        }
      });

      test(`B < L: logits match the uncompressed cache with the dropped global-layer keys hidden (flash attention ${fa})`, async () => {
        const s = open(fa);
        const full = open(fa);
        const ref = open(fa);
        try {
          await s.prefill(prompt);
          const before = s.stats();
          const r = await s.snap({ window: W, budget: B });
          const after = s.stats();
          const kept = s.snapKept();
          assert.deepEqual([r.compacted, r.L, r.B, r.nLayer, r.keptRows], [true, L, B, nGlobal, nGlobal * shape.nHeadKv * B]);
          for (let row = 0; row < nGlobal * shape.nHeadKv; row++) {
            const k = Array.from(kept.subarray(row * B, (row + 1) * B));
            assert.deepEqual(k.slice(B - W), Array.from({ length: W }, (_, i) => L - W + i), 'every head keeps the window');
          }
          // stats: B for the global layers, the sliding layers' window apart and untouched, KV bytes exact
          const win = Math.min(L, shape.slidingWindow);
          assert.deepEqual([before.cells, after.cells, before.swaCells, after.swaCells], [L, B, win, win]);
          assert.equal(before.kvBytes, L * bytesPerCell(nGlobal) + win * bytesPerCell(nSwaLayers));
          assert.equal(after.kvBytes, B * bytesPerCell(nGlobal) + win * bytesPerCell(nSwaLayers));
          assert.deepEqual([s.position, s.lastPosition()], [L, L - 1], 'decoding continues at L');
          const lg = await continueWith(s);

          await full.prefill(prompt);
          const snapFull = await full.snapshot();
          const lgFull = await continueWith(full);
          await ref.restore({ ...snapFull, payload: withSnapMask(snapFull.payload, kept, { L, B, nGlobal, nHeadKv: shape.nHeadKv }) });
          const lgRef = await continueWith(ref);

          const d = maxAbsDiff(lg, lgRef);
          const dFull = maxAbsDiff(lg, lgFull);
          // the bounds of iswa.test.ts: keys moved to other cells round differently in the F32
          // KQ / KQ·V sums without flash attention (1e-3); F16 rounding of Q and V with it (1e-2)
          const tol = fa === 'off' ? 1e-3 : 1e-2;
          console.log(`# ${shape.architecture}, flash attention ${fa}: max |Δlogit| vs masked ${d.toExponential(2)}, vs unmasked full ${dFull.toExponential(2)}`);
          assert.ok(d <= tol, `max |Δlogit| vs the masked uncompressed cache = ${d}`);
          assert.ok(dFull > 10 * tol, `compression changed the logits well beyond the bound (max |Δlogit| vs full = ${dFull})`);
        } finally {
          s.dispose();
          full.dispose();
          ref.dispose();
        }
      });
    }
  });
}
