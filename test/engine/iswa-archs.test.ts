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
 * Checked for each, flash attention off and on, by the same checks as Gemma 3 in iswa.test.ts
 * (test/helpers/iswa-checks.ts):
 * - keep-all (B = L, forced) leaves the logits bit-identical to the uncompressed iSWA cache;
 * - for B < L the logits match the uncompressed iSWA cache with each global (layer, KV head)'s
 *   dropped keys hidden by a per-head mask (test/helpers/iswa-state.ts) within the tolerances of
 *   iswa.test.ts (1e-3 without flash attention, 1e-2 with), and differ from the unmasked cache's by
 *   more than 10× that; for gpt-oss both sides apply the same learned sinks, which the compaction
 *   never moves (they are weights, not cache rows), so a compaction that lost them would fail the
 *   match (the scores' use of the sinks: attention-sinks.test.ts);
 * - the kept positions are ascending, end with the window and differ between heads; the sliding
 *   layers' window is untouched (stats), the KV bytes before and after are exact.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadModel, type EngineModel } from '../../src/engine/model';
import { createSession, type EngineSession } from '../../src/engine/session';
import { ensureSyntheticModel } from '../../src/engine/synthetic';
import { checkCompressedMatchesMasked, checkKeepAll, continueWith, type IswaCase } from '../helpers/iswa-checks';
import { maxAbsDiff } from '../helpers/iswa-state';

interface Case extends Omit<IswaCase, 'prompt' | 'W' | 'cont'> {
  L: number;
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
  const { shape, L } = c;
  const prompt = Array.from({ length: L }, (_, i) => ((i * 37 + 11) % 500) + 3);
  const iswaCase: IswaCase = { ...c, prompt, W, cont: CONT };

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
          const d = maxAbsDiff(await continueWith(a, CONT), await continueWith(b, CONT));
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
      test(`keep-all (B = L) is bit-identical to the uncompressed cache (flash attention ${fa})`, () => checkKeepAll(iswaCase, () => open(fa)));

      // the bounds of iswa.test.ts: keys moved to other cells round differently in the F32
      // KQ / KQ·V sums without flash attention (1e-3); F16 rounding of Q and V with it (1e-2)
      test(`B < L: logits match the uncompressed cache with the dropped global-layer keys hidden (flash attention ${fa})`, () =>
        checkCompressedMatchesMasked(iswaCase, () => open(fa), fa === 'off' ? 1e-3 : 1e-2, `flash attention ${fa}`));
    }
  });
}
