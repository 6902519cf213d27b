/**
 * Guards: SnapKV refuses, with a clear message and the cache unchanged, the attention variants
 * a compacted cache would break — soft-capped attention logits (gemma2), ALiBi position biases
 * (bloom), multi-position RoPE (qwen2vl), chunked attention (llama4), multi-head latent attention
 * (deepseek2: its cache holds one latent row per layer and token, which SnapKV does not score),
 * sliding-window attention in every layer (gemma3 with pattern 0), recurrent layers (mamba) and
 * hybrid recurrent + attention models (jamba) — on small synthetic models of those architectures
 * that llama.cpp itself builds (llama_model_init_from_user). The pipeline then answers with full
 * attention and says so. (Shared cells: sequences.test.ts; uncaptured window: snapkv.test.ts.)
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { SnapRefusedError } from '../../src/engine/errors';
import { loadModel } from '../../src/engine/model';
import { createSession } from '../../src/engine/session';
import { ensureSyntheticModel } from '../../src/engine/synthetic';
import { askRepository, DEFAULT_SNAP } from '../../src/pipeline/ask';

let dir: string;
before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-guards-'));
});
after(() => fs.rmSync(dir, { recursive: true, force: true }));

const shape = { nLayer: 2, nEmbd: 256, nHead: 4, nHeadKv: 4, nFf: 512, nVocab: 512, weightType: 'f32' as const };

for (const [architecture, extra, pattern] of [
  // gemma2's global layers are compacted like gemma3's (iswa.test.ts), but it soft-caps attention logits
  ['gemma2', { slidingWindow: 64 }, /soft-caps attention logits/],
  ['bloom', {}, /ALiBi/],
  ['qwen2vl', {}, /multi-position RoPE/],
  // no sliding_window key: chunks of 8,192 in 3 of 4 layers (llama_model_llama4)
  ['llama4', { nLayer: 4 }, /chunked attention/],
  ['deepseek2', { nHeadKv: 1 }, /multi-head latent attention/],
  ['gemma3', { slidingWindow: 64, swaPattern: 0 }, /sliding-window attention in every layer/],
  ['mamba', {}, /not hybrid or recurrent/],
  ['jamba', {}, /not hybrid or recurrent/],
] as const) {
  // random SSM weights (mamba, jamba's even layers) may overflow: there only the logits' count is checked
  const recurrent = architecture === 'mamba' || architecture === 'jamba';
  test(`${architecture}${'swaPattern' in extra ? ' (sliding window in every layer)' : ''}: SnapKV refuses (${pattern.source}) and the cache is unchanged`, async () => {
    const file = await ensureSyntheticModel(dir, { ...shape, ...extra, architecture });
    const model = await loadModel(file);
    const s = createSession(model, { contextSize: 512, snapWindow: 16, threads: 1 });
    try {
      const toks = Array.from({ length: 200 }, (_, i) => ((i * 37) % 500) + 3);
      await s.prefill(toks);
      const cells = s.stats().cells;
      await assert.rejects(s.snap({ window: 16, budget: 64 }), (e: Error) => e instanceof SnapRefusedError && pattern.test(e.message));
      assert.equal(s.stats().cells, cells);
      const logits = await s.step(5);
      assert.equal(logits.length, shape.nVocab);
      if (!recurrent) assert.ok(logits.every(Number.isFinite), 'decoding goes on with full attention');
    } finally {
      s.dispose();
      model.dispose();
    }
  });
}

test('the pipeline answers with full attention and a visible notice when SnapKV refuses', async () => {
  const file = await ensureSyntheticModel(dir, { ...shape, architecture: 'bloom' });
  const model = await loadModel(file);
  const repo = path.join(dir, 'repo');
  fs.mkdirSync(repo, { recursive: true });
  fs.writeFileSync(path.join(repo, 'a.txt'), 'word '.repeat(300));
  const notices: string[] = [];
  try {
    const stats = await askRepository(
      { repo, question: 'What is in a.txt?', model, snap: { ...DEFAULT_SNAP, budget: 64, window: 16 }, contextSize: 1024, maxTokens: 4, session: { threads: 1 } },
      (e) => {
        if (e.kind === 'notice') notices.push(e.message);
      },
    );
    assert.equal(stats.B, stats.L, 'full attention');
    assert.equal(notices.length, 1);
    assert.match(notices[0]!, /ALiBi.*answering with full attention/);
  } finally {
    model.dispose();
  }
});
