/**
 * bench/fidelity's JSON records its model's attention shape from the GGUF header (issue 17): the
 * head size is `attention.key_length`, not n_embd / n_head, which differ for Gemma 3 (the run that
 * wrote bench/results/fidelity-gemma3.json recorded 160). Values read from the GGUF
 * headers (readModelMetadata on the pinned files): Gemma 3 270M: gemma3, 18 layers, d 640, 4/1 heads,
 * key_length = value_length = 256; SmolLM2-135M: llama, 30 layers, d 576, 9/3 heads, head size
 * 64 (= 576 / 9).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { modelShapeRecord } from '../../bench/fidelity/report';

test('the fidelity JSON records the GGUF key_length as the head size (Gemma 3 270M: 256, not 640 / 4 = 160)', () => {
  const gemma = { architecture: 'gemma3', blockCount: 18, contextLength: 32768, embeddingLength: 640, headCount: 4, headCountKv: 1, keyLength: 256, valueLength: 256, tensorLayers: 18 };
  assert.deepEqual(modelShapeRecord(gemma, 32768), { nLayer: 18, nHeadKv: 1, nHead: 4, headSize: 256, nCtxTrain: 32768 });
  const smol = { architecture: 'llama', blockCount: 30, contextLength: 8192, embeddingLength: 576, headCount: 9, headCountKv: 3, keyLength: 64, valueLength: 64, tensorLayers: 30 };
  assert.deepEqual(modelShapeRecord(smol, 8192), { nLayer: 30, nHeadKv: 3, nHead: 9, headSize: 64, nCtxTrain: 8192 });
  // a V head size of its own is recorded beside it (DeepSeek-style 192 / 128)
  assert.deepEqual(modelShapeRecord({ ...smol, keyLength: 192, valueLength: 128 }, 8192).valueHeadSize, 128);
});
