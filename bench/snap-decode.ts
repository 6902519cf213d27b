/**
 * bench/snap-decode: decode speed with and without SnapKV at the same prompt length L,
 * measured side by side in one run (sessions decode in turns so that machine drift hits all).
 *
 *   node --import tsx bench/snap-decode.ts [--model file.gguf] [--prompt 2000] [--decode 64] [--budgets 256,1024]
 *
 * Default model: ../shared/models/stories260K.gguf (context 2048). Prints a table.
 */
import { parseArgs } from 'node:util';
import { loadModel } from '../src/engine/model';
import { createSession, type EngineSession } from '../src/engine/session';
import { checkTinyModel } from '../test/helpers/models';

async function main() {
  const { values } = parseArgs({
    options: { model: { type: 'string' }, prompt: { type: 'string' }, decode: { type: 'string' }, budgets: { type: 'string' }, threads: { type: 'string' } },
  });
  const file = values.model ?? checkTinyModel();
  const L = Number(values.prompt ?? 2000);
  const nDecode = Number(values.decode ?? 64);
  const budgets = (values.budgets ?? '256,1024').split(',').map(Number);
  const threads = values.threads ? Number(values.threads) : undefined;
  const model = await loadModel(file);
  const nVocab = model.info.nVocab;
  let seed = 1;
  const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) % (nVocab - 3)) + 3;
  const prompt = Array.from({ length: L }, rand);
  const decodeTokens = Array.from({ length: nDecode }, rand);

  const runs: { label: string; B: number; session: EngineSession; snapMs: number; ms: number; nKv: number; kvBytes: number }[] = [];
  for (const B of [0, ...budgets]) {
    const session = createSession(model, { contextSize: L + nDecode + 8, snapWindow: 32, threads, threadsBatch: threads, flashAttention: 'off' });
    await session.prefill(prompt);
    let snapMs = 0;
    if (B > 0) snapMs = (await session.snap({ window: 32, budget: B })).ms;
    const st = session.stats();
    runs.push({ label: B > 0 ? `SnapKV B=${B}` : 'full attention', B: B > 0 ? B : L, session, snapMs, ms: 0, nKv: st.nKv, kvBytes: st.kvBytes });
  }
  for (const t of decodeTokens) {
    for (const r of runs) {
      const t0 = performance.now();
      await r.session.step(t);
      r.ms += performance.now() - t0;
    }
  }
  const base = runs[0]!;
  console.log(`model ${model.info.description}, L = ${L}, ${nDecode} decode steps each, flash attention off`);
  console.log('| cache | cells | n_kv | KV bytes | snap ms | decode ms/token | decode tok/s | speed-up |');
  console.log('|---|---|---|---|---|---|---|---|');
  for (const r of runs) {
    const msTok = r.ms / nDecode;
    console.log(`| ${r.label} | ${r.B} | ${r.nKv} | ${r.kvBytes} | ${r.snapMs.toFixed(2)} | ${msTok.toFixed(3)} | ${(1000 / msTok).toFixed(0)} | ${(base.ms / r.ms).toFixed(2)}× |`);
    r.session.dispose();
  }
  model.dispose();
}

void main();
