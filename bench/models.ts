/**
 * The benchmarks' text-capable synthetic model: a llama of 8 layers, n_embd 1024, 16/4 heads
 * (head size 64), n_ff 2816, F16 weights, seeded, with the tiny model's 512-token tokenizer so that
 * text can be packed and tokenized. Written once under bench/.models by the tests' GGUF writer.
 */
import fs from 'node:fs';
import path from 'node:path';
import { TINY_MODEL } from '../test/helpers/models';
import { writeSyntheticLlama } from '../test/reference/synthetic-llama';

/** Path of the model, created when missing. */
export function textSyntheticModel(): string {
  const file = path.join(__dirname, '.models', 'synthetic-8x1024-h64-f16.gguf');
  if (!fs.existsSync(file)) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    writeSyntheticLlama(file, { tokenizerFrom: TINY_MODEL, nEmbd: 1024, nHead: 16, nHeadKv: 4, nFf: 2816, nLayer: 8, weightType: 'F16', seed: 7 });
  }
  return file;
}
