/**
 * A compacted cache compacted again, with flash attention on (issue 18: on the Vulkan engine with
 * lavapipe the second compaction corrupted the heap in 3-5 of 5 runs: a use after free of a stale
 * descriptor binding in ggml-vulkan, fixed by native/patches/0009). Runs on any engine; the Vulkan
 * lane (.ci/vulkan.sh) runs it with REPOSNAP_ADDON=reposnap-vulkan.node and every layer offloaded
 * (REPOSNAP_GPU_LAYERS). Each round: prefill L = 512 random tokens of a 2-layer synthetic
 * llama (4 query / 2 KV heads, f16 weights and cache), snap to B = 256, then to B = 64. Each
 * snap's kept positions are checked against the engine's own pooled scores recomputed here: per
 * (layer, KV head), ascending, the window's w positions, and a top-(B - w) of the prefix scores;
 * the second snap keeps a subset of the first's positions.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { defaultGpuLayers, loadModel, type EngineModel } from '../../src/engine/model';
import { createSession } from '../../src/engine/session';
import { ensureSyntheticModel } from '../../src/engine/synthetic';
import { engineBackends } from '../../src/engine/backends';
import { loadAddon } from '../../src/engine/native';

let dir: string;
let model: EngineModel;
const shape = { nLayer: 2, nEmbd: 256, nHead: 4, nHeadKv: 2, nFf: 512, nVocab: 1000, weightType: 'f16' as const };
const w = 32;

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-vulkan-'));
  model = await loadModel(await ensureSyntheticModel(dir, shape));
});
after(() => {
  model?.dispose();
  fs.rmSync(dir, { recursive: true, force: true });
});

/**
 * Checks one snap's kept positions ([n_layer][n_head_kv][B], ascending) against its pooled scores
 * ([n_layer][n_head_kv][L - w], over the sequence's first L - w cells in position order).
 * @param positions the sequence's positions before the snap, ascending (length L).
 */
function checkKept(kept: Int32Array, scores: Float32Array, positions: number[], B: number, label: string): void {
  const L = positions.length;
  const P = L - w;
  const rows = shape.nLayer * shape.nHeadKv;
  assert.equal(kept.length, rows * B, `${label}: kept length`);
  assert.equal(scores.length, rows * P, `${label}: scores length`);
  const window = positions.slice(P);
  for (let r = 0; r < rows; r++) {
    const row = Array.from(kept.subarray(r * B, (r + 1) * B));
    for (let j = 1; j < B; j++) assert.ok(row[j]! > row[j - 1]!, `${label}: row ${r} not ascending at ${j}`);
    assert.deepEqual(row.slice(B - w), window, `${label}: row ${r} lacks the window`);
    // a top-(B - w) of the prefix: no dropped prefix position scores above a kept one
    const s = scores.subarray(r * P, (r + 1) * P);
    const keptSet = new Set(row.slice(0, B - w));
    for (const p of row) assert.ok(positions.includes(p), `${label}: row ${r} keeps position ${p}, which the sequence does not hold`);
    let minKept = Infinity;
    let maxDropped = -Infinity;
    for (let i = 0; i < P; i++) {
      if (keptSet.has(positions[i]!)) minKept = Math.min(minKept, s[i]!);
      else maxDropped = Math.max(maxDropped, s[i]!);
    }
    assert.equal(keptSet.size, B - w, `${label}: row ${r} keeps ${keptSet.size} prefix positions`);
    assert.ok(minKept >= maxDropped, `${label}: row ${r} dropped a prefix position scoring ${maxDropped} > kept ${minKept}`);
  }
}

test('a compacted cache compacted again (L 512 -> 256 -> 64, flash attention on), three rounds', async () => {
  assert.equal(model.gpuLayers, defaultGpuLayers(), 'the model is loaded with REPOSNAP_GPU_LAYERS layers offloaded');
  for (let round = 0; round < 3; round++) {
    const s = createSession(model, { contextSize: 640, batchSize: 256, flashAttention: 'on', kvCacheType: 'f16', snapWindow: w, threads: 2 });
    try {
      let seed = 12345 + round;
      const toks = Array.from({ length: 512 }, () => {
        seed = (seed * 1103515245 + 12345) >>> 0;
        return 3 + ((seed >>> 8) % 997);
      });
      await s.prefill(toks);
      let positions = Array.from({ length: 512 }, (_, i) => i);
      for (const B of [256, 64]) {
        const r = await s.snap({ window: w, budget: B, kernel: 7, pooling: 'max', keepScores: true });
        assert.equal(r.compacted, true, `round ${round}, B ${B}: compacted`);
        const kept = s.snapKept();
        checkKept(kept, s.snapScores(), positions, B, `round ${round}, B ${B}`);
        // the next snap sees a sequence whose positions are those this one kept in any (layer,
        // KV head): with a uniform budget, slot j holds the largest position any row kept there
        const next: number[] = [];
        for (let j = 0; j < B; j++) {
          let p = -1;
          for (let row = 0; row < shape.nLayer * shape.nHeadKv; row++) p = Math.max(p, kept[row * B + j]!);
          next.push(p);
        }
        positions = next;
        assert.equal(s.stats().cells, B, `round ${round}, B ${B}: cells after the snap`);
      }
      // the cache still decodes
      const logits = await s.step(5);
      assert.ok(logits.every((x) => Number.isFinite(x)), `round ${round}: finite logits after two snaps`);
    } finally {
      s.dispose();
    }
  }
});

test('REPOSNAP_GPU_LAYERS sets the default gpuLayers (the GPU lane); unset or empty is 0; anything else is refused', () => {
  assert.equal(defaultGpuLayers({}), 0);
  assert.equal(defaultGpuLayers({ REPOSNAP_GPU_LAYERS: '' }), 0);
  assert.equal(defaultGpuLayers({ REPOSNAP_GPU_LAYERS: '999' }), 999);
  assert.equal(defaultGpuLayers({ REPOSNAP_GPU_LAYERS: '0' }), 0);
  for (const bad of ['-1', 'all', '1.5', ' 3']) {
    assert.throws(() => defaultGpuLayers({ REPOSNAP_GPU_LAYERS: bad }), /REPOSNAP_GPU_LAYERS must be a whole number >= 0/, bad);
  }
});

test('on the Vulkan lane the Vulkan module is the one beside the addon (gpu/libggml-vulkan.so), with a device and no note', { skip: process.env.REPOSNAP_BACKEND !== 'vulkan' ? 'the Vulkan lane sets REPOSNAP_BACKEND=vulkan (.ci/vulkan.sh)' : false }, () => {
  const addon = loadAddon();
  const load = addon.backendLoad!();
  assert.equal(load.dynamic, true, 'a portable engine');
  assert.equal(path.resolve(load.dir), path.dirname(path.resolve(process.env.REPOSNAP_ADDON!)), 'the addon named by REPOSNAP_ADDON');
  assert.deepEqual(load.loaded.map((f) => path.relative(load.dir, f)), [path.join('gpu', 'libggml-vulkan.so')]);
  assert.deepEqual(load.notes, []);
  const e = engineBackends(addon);
  assert.ok(e.backends.includes('Vulkan'), e.backends.join(', '));
  assert.ok(e.gpus.some((g) => g.startsWith('Vulkan0: ')), e.gpus.join(', '));
});
