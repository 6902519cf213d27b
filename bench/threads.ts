/**
 * bench/threads: decode and prefill speed of the engine by thread count and flash attention,
 * measured side by side in one run, to choose the defaults (src/engine/threads.ts).
 *
 *   node --import tsx bench/threads.ts [--model file.gguf] [--prompt 2048] [--decode 32]
 *
 * Without --model it generates a synthetic llama (8 layers, n_embd 1024, 16/4 heads, head
 * size 64, F16 weights; seeded) under bench/.models. Prints one table; ratios are against the
 * fastest setting of the run.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadModel } from '../src/engine/model';
import { createSession } from '../src/engine/session';
import { textSyntheticModel } from './models';

async function main() {
  const { values } = parseArgs({ options: { model: { type: 'string' }, prompt: { type: 'string' }, decode: { type: 'string' } } });
  const nPrompt = Number(values.prompt ?? 2048);
  const nDecode = Number(values.decode ?? 32);
  const file = values.model ?? textSyntheticModel();
  const model = await loadModel(file);
  const nVocab = model.info.nVocab;
  let seed = 1;
  const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) % (nVocab - 3)) + 3;
  const prompt = Array.from({ length: nPrompt }, rand);

  const rows: { threads: number; fa: string; prefillTokS: number; decodeMs: number }[] = [];
  for (const fa of ['off', 'on'] as const) {
    for (const threads of [1, 2]) {
      const s = createSession(model, { contextSize: nPrompt + nDecode + 8, flashAttention: fa, threads, threadsBatch: threads, snapWindow: 0 });
      const t0 = performance.now();
      await s.prefill(prompt);
      const prefillMs = performance.now() - t0;
      const t1 = performance.now();
      for (let i = 0; i < nDecode; i++) await s.step(rand());
      const decodeMs = (performance.now() - t1) / nDecode;
      s.dispose();
      rows.push({ threads, fa, prefillTokS: nPrompt / (prefillMs / 1000), decodeMs });
    }
  }
  const bestPrefill = Math.max(...rows.map((r) => r.prefillTokS));
  const bestDecode = Math.min(...rows.map((r) => r.decodeMs));
  console.log(`model ${path.basename(file)}: ${model.info.description}, prompt ${nPrompt}, decode ${nDecode}`);
  console.log('| threads | flash attn | prefill tok/s | vs best | decode ms/token | vs best |');
  console.log('|---|---|---|---|---|---|');
  for (const r of rows) {
    console.log(`| ${r.threads} | ${r.fa} | ${r.prefillTokS.toFixed(0)} | ${(r.prefillTokS / bestPrefill).toFixed(2)} | ${r.decodeMs.toFixed(2)} | ${(r.decodeMs / bestDecode).toFixed(2)} |`);
  }
  model.dispose();
}

void main();
