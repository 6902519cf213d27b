/**
 * The key-norm scorer through the product's pipeline (`snap.scorer: 'key-norm'`, issue 16 item 4)
 * on the tiny model with an f32 cache: every (layer, KV head) keeps exactly the B − w prefix
 * positions whose keys have the lowest L2 norm, recomputed here in float64 from the reference
 * model's K rows of the prompt the session holds (up to exact ties: layer 0's keys of equal
 * tokens have equal norms), plus the last w positions.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { loadModel, type EngineModel } from '../../src/engine/model';
import { askRepository, DEFAULT_SNAP } from '../../src/pipeline/ask';
import { checkTinyModel } from '../helpers/models';
import { LlamaReference } from '../reference/llama-ref';
import { checkLowestNorms } from '../reference/key-norm-ref';

let model: EngineModel;
let ref: LlamaReference;
let tmp: string;
let repo: string;

before(async () => {
  const file = checkTinyModel();
  model = await loadModel(file);
  ref = LlamaReference.load(file);
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-key-norm-'));
  repo = path.join(tmp, 'repo');
  fs.mkdirSync(repo);
  for (let i = 0; i < 6; i++) fs.writeFileSync(path.join(repo, `part${i}.js`), `// part ${i}: the dog ran to the park\nconsole.log(${i * 7}, 'a big red ball');\n`);
});
after(() => {
  model.dispose();
  fs.rmSync(tmp, { recursive: true, force: true });
});

test("snap.scorer 'key-norm' keeps each head's lowest-norm prefix keys (float64 recomputation) and the last w", async () => {
  const w = 8;
  const B = 64;
  let kept: Int32Array = new Int32Array(0);
  let tokens: number[] = [];
  const stats = await askRepository(
    {
      repo,
      question: 'Where did the dog run?',
      model,
      snap: { ...DEFAULT_SNAP, window: w, budget: B, scorer: 'key-norm' },
      contextSize: 1024,
      maxTokens: 2,
      session: { threads: 1, kvCacheType: 'f32', flashAttention: 'off' },
      afterSnap: (s) => {
        kept = s.snapKept();
        tokens = [...s.tokens];
      },
    },
    () => {},
  );
  const L = stats.L;
  assert.ok(L > B && L < 1000, `L = ${L}`);
  assert.equal(stats.B, B);
  assert.equal(tokens.length, L);
  const st = ref.prefill(tokens);
  const { nLayer, nHeadKv } = st;
  assert.equal(kept.length, nLayer * nHeadKv * B);
  for (let l = 0; l < nLayer; l++) {
    for (let h = 0; h < nHeadKv; h++) {
      const norm = (p: number) => Math.hypot(...st.K[l]![h]![p]!);
      const r = l * nHeadKv + h;
      // f32 cache: the engine's norms are the reference's to 1e-5 (test/engine/key-norms.test.ts)
      checkLowestNorms(kept.subarray(r * B, (r + 1) * B), norm, L, B, w, 1e-5, `layer ${l} head ${h}`);
    }
  }
});
