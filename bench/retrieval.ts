/**
 * bench/retrieval: the question-dependent retrieval's ranking (BM25F over the chunks of the files
 * not packed in full, `rankChunks`) on a large repository, cold (the chunk set indexed for this
 * question) against warm (the index kept from an earlier question on the same chunks, as a
 * follow-up on an unchanged repository finds it), side by side in one run.
 *
 *   node --import tsx bench/retrieval.ts [--real DIR] [--budget 2048] [--out FILE]
 *
 * The repository defaults to the patched llama.cpp tree that `npm run build:native` unpacks
 * (`native/build/llama.cpp`). It is packed once (ranked, the approximate tokenizer: bytes / 4,
 * `--budget` tokens), then for each question: `chunkSetKey` alone (the fingerprint a warm ranking
 * computes), a cold ranking (`resetChunkIndex` first) and a warm one; the two rankings must be
 * equal. Prints a table with the warm/cold ratio and writes the rows as JSON (default
 * bench/results/retrieval.json).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { packRepository } from '../src/context/pack';
import { chunkSetKey, rankChunks, resetChunkIndex } from '../src/context/retrieve/bm25';
import { machineInfo } from './machine';

const QUESTIONS = [
  'Which function computes the softmax with attention sinks?',
  'What does `llama_kv_cache::state_write` write?',
  'How is the rope frequency base read from the model file?',
];

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      real: { type: 'string', default: path.join('native', 'build', 'llama.cpp') },
      budget: { type: 'string', default: '2048' },
      out: { type: 'string', default: path.join('bench', 'results', 'retrieval.json') },
    },
  });
  const root = path.resolve(values.real!);
  if (!fs.existsSync(root)) throw new Error(`${root} does not exist: run 'npm run build:native' first, or pass --real DIR`);
  const budget = Number(values.budget);
  const t0 = performance.now();
  const pack = await packRepository(root, { tokenBudget: budget, countTokens: (t: string) => Math.ceil(Buffer.byteLength(t) / 4), packing: 'ranked' });
  const packMs = performance.now() - t0;
  const chunks = pack.retrievable;
  const textMB = chunks.reduce((n, c) => n + Buffer.byteLength(c.text), 0) / 1e6;
  const rows = [];
  for (const question of QUESTIONS) {
    let t = performance.now();
    chunkSetKey(chunks);
    const keyMs = performance.now() - t;
    resetChunkIndex();
    t = performance.now();
    const cold = rankChunks(chunks, question);
    const coldMs = performance.now() - t;
    t = performance.now();
    const warm = rankChunks(chunks.map((c) => ({ ...c })), question);
    const warmMs = performance.now() - t;
    const same = JSON.stringify(cold.map((r) => [r.chunk.path, r.chunk.name, r.chunk.startLine, r.score])) === JSON.stringify(warm.map((r) => [r.chunk.path, r.chunk.name, r.chunk.startLine, r.score]));
    if (!same) throw new Error(`${question}: the warm ranking differs from the cold one`);
    rows.push({ question, ranked: cold.length, first: cold[0] ? `${cold[0].chunk.path}#${cold[0].chunk.name}` : null, keyMs: Math.round(keyMs), coldMs: Math.round(coldMs), warmMs: Math.round(warmMs), warmOverCold: Number((warmMs / coldMs).toFixed(4)) });
  }
  const load = os.loadavg().map((x) => Number(x.toFixed(2)));
  const result = { meta: { machine: machineInfo(), date: new Date().toISOString(), load, repo: path.relative(process.cwd(), root) || root, budget, packMs: Math.round(packMs), chunks: chunks.length, textMB: Number(textMB.toFixed(1)) }, rows };
  fs.mkdirSync(path.dirname(values.out!), { recursive: true });
  fs.writeFileSync(values.out!, JSON.stringify(result, null, 2) + '\n');
  console.log(`${result.meta.repo}: ${chunks.length} chunks (${result.meta.textMB} MB) from a ranked pack of ${budget} tokens (${result.meta.packMs} ms), load ${load.join(' ')}`);
  console.log('question                                                   ranked  key ms  cold ms  warm ms  warm/cold');
  for (const r of rows) console.log(`${r.question.slice(0, 58).padEnd(58)} ${String(r.ranked).padStart(6)} ${String(r.keyMs).padStart(7)} ${String(r.coldMs).padStart(8)} ${String(r.warmMs).padStart(8)} ${r.warmOverCold.toFixed(4).padStart(10)}`);
}

void main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
