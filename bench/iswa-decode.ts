/**
 * bench/iswa-decode: decode speed of an interleaved sliding-window model (Gemma 3 shaped:
 * 5 sliding-window layers to 1 global, one KV head of size 256, window 512) at prompt length L,
 * three caches side by side in one run (sessions decode in turns so that machine drift hits all):
 * full attention; SnapKV on the global layers (L -> B; the sliding layers keep their window);
 * a plain context of B tokens (the physical bound of a B-cell global cache).
 *
 *   node --import tsx bench/iswa-decode.ts [--prompt 8192] [--decode 32] [--budget 1024] [--layers 18] [--embd 1024] [--threads N] [--decode-threads N] [--from-state] [--no-swa-full | --both-swa-full]
 *
 * --both-swa-full runs the three caches twice in one run, with swa_full true then false (six
 * sessions decoding in turns), so that the sliding cache's size is compared side by side too.
 * --no-swa-full opens every session with `swaFull: false` (llama_context_params.swa_full): the
 * sliding layers' cache holds GGML_PAD(n_swa + ubatch, 256) cells and reuses the ones its window
 * passed, so at decode the sliding layers scan about that many cells instead of the context's.
 *
 * --decode-threads N decodes every session on N threads and prefills on the default count. Without
 * it (nor --threads) the engine's default follows the cache length (threads.ts decodeThreadsFor:
 * all cores from 4,096 attended cells, one fewer below), so the full-attention cache may decode on
 * more threads than the compressed one: the 8K table below was measured that way.
 * --from-state prefills the prompt's first L - 32 tokens once, saves the sequence and restores it
 * into the full-attention and the SnapKV session, which then prefill the last 32 tokens (the
 * window, captured), as a cache hit does (one long prefill instead of two; the plain context the
 * same way at B). A restored iSWA cache holds its sliding layers' last n_swa positions only
 * (llama.cpp's state_write skips SWA-masked cells), where a prefilled one (swa_full) keeps the
 * masked cells that the sliding layers still scan at decode.
 *
 * Beside each measured speed-up, the physical bound of a memory-bound decode: bytes read per
 * token, weights + KV bytes (the model file's tensors, F32; the sequence's K and V, exact from the
 * cache statistics), full attention's over this cache's: (weights + KV_L) / (weights + KV).
 *
 * The synthetic model is written once under $TMPDIR/reposnap-bench (llama_model_init_from_user,
 * random F32 weights, 4 query heads, 1 KV head, vocabulary 4096). Prints a markdown table with the
 * KV bytes of each cache (global + sliding layers, exact: from the engine's cache statistics).
 */
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadModel } from '../src/engine/model';
import { createSession, type EngineSession, type SessionSnapshot } from '../src/engine/session';
import { ensureSyntheticModel } from '../src/engine/synthetic';

async function main() {
  const { values } = parseArgs({
    options: { prompt: { type: 'string' }, decode: { type: 'string' }, budget: { type: 'string' }, layers: { type: 'string' }, embd: { type: 'string' }, threads: { type: 'string' }, 'from-state': { type: 'boolean' }, 'decode-threads': { type: 'string' }, 'no-swa-full': { type: 'boolean' }, 'both-swa-full': { type: 'boolean' } },
  });
  const L = Number(values.prompt ?? 8192);
  const nDecode = Number(values.decode ?? 32);
  const B = Number(values.budget ?? 1024);
  const decodeThreads = values['decode-threads'] ? Number(values['decode-threads']) : undefined;
  const threads = values.threads ? Number(values.threads) : decodeThreads;
  const threadsBatch = values.threads ? Number(values.threads) : undefined;
  const nEmbd = Number(values.embd ?? 1024);
  const shape = { architecture: 'gemma3', slidingWindow: 512, nLayer: Number(values.layers ?? 18), nEmbd, nHead: 4, nHeadKv: 1, nFf: 2 * nEmbd, nVocab: 4096, nCtx: 32768, weightType: 'f32' as const, seed: 1 };
  const file = await ensureSyntheticModel(path.join(os.tmpdir(), 'reposnap-bench'), shape);
  const model = await loadModel(file);
  let seed = 1;
  const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) % (shape.nVocab - 3)) + 3;
  const prompt = Array.from({ length: L }, rand);
  const decodeTokens = Array.from({ length: nDecode }, rand);

  const runs: { label: string; session: EngineSession; prefillMs: number; snapMs: number; ms: number; cells: number; swaCells: number; kvBytes: number }[] = [];
  const swaFulls = values['both-swa-full'] ? [true, false] : [!values['no-swa-full']];
  let swaFull = swaFulls[0]!;
  const open = (n: number) => createSession(model, { contextSize: n + nDecode + 8, snapWindow: 32, threads, threadsBatch, flashAttention: 'on', swaFull });
  /** --from-state: the saved first n - 32 tokens of the last n of the prompt, and how long their prefill took. */
  const saved = new Map<number, { snap: SessionSnapshot; ms: number }>();
  const savedPrefix = async (n: number) => {
    let s = saved.get(n);
    if (!s) {
      const pre = open(n);
      const t0 = performance.now();
      await pre.prefill(prompt.slice(L - n, L - 32));
      s = { snap: await pre.snapshot(), ms: performance.now() - t0 };
      pre.dispose();
      saved.set(n, s);
      console.error(`# prefilled ${n - 32} tokens once: ${(s.ms / 1000).toFixed(1)} s`);
    }
    return s;
  };
  const plan = swaFulls.flatMap((f) => (['full', 'snap', 'plain'] as const).map((kind) => ({ kind, f })));
  for (const { kind, f } of plan) {
    if (f !== swaFull) saved.clear();
    swaFull = f;
    const n = kind === 'plain' ? B : L;
    const session = open(n);
    const t0 = performance.now();
    if (values['from-state']) {
      await session.restore((await savedPrefix(n)).snap, 'bench prefix');
      await session.prefill(prompt.slice(L - 32));
    } else {
      await session.prefill(prompt.slice(L - n));
    }
    const prefillMs = performance.now() - t0;
    const snapMs = kind === 'snap' ? (await session.snap({ window: 32, budget: B })).ms : 0;
    const st = session.stats();
    const label =
      (kind === 'full' ? `full attention, L = ${L}` : kind === 'snap' ? `SnapKV global layers, L = ${L} -> B = ${B}` : `plain context of ${B} tokens`) +
      (swaFulls.length > 1 ? `, swa_full ${f} (${st.swaKvSize} sliding cells)` : '');
    runs.push({ label, session, prefillMs, snapMs, ms: 0, cells: st.cells, swaCells: st.swaCells, kvBytes: st.kvBytes });
    console.error(`# ${label}: prefill ${(prefillMs / 1000).toFixed(1)} s`);
  }
  for (const t of decodeTokens) {
    for (const r of runs) {
      const t0 = performance.now();
      await r.session.step(t);
      r.ms += performance.now() - t0;
    }
  }
  const base = runs[0]!;
  const weights = model.info.sizeBytes;
  console.log(`synthetic gemma3: ${shape.nLayer} layers (${Math.floor(shape.nLayer / 6)} global), d ${nEmbd}, 4/1 heads, head size ${nEmbd / 4}, window 512, F32 weights (${weights} B), F16 KV, flash attention on; ${nDecode} decode steps each, ${decodeThreads !== undefined ? `decode on ${decodeThreads} thread(s), prefill on ${values.threads ?? 'the default count'}` : `${threads ?? 'default'} threads`}${values['from-state'] ? '; caches restored from a saved prefix (--from-state)' : ''}${swaFulls.length > 1 ? '; swa_full true and false (--both-swa-full)' : `; swa_full ${swaFull} (sliding cache ${runs[0]!.session.stats().swaKvSize} cells)`}`);
  console.log('| cache | global cells | sliding cells | KV bytes | bytes/token (weights + KV) | snap ms | decode ms/token | decode tok/s | speed-up | bound (weights + KV_L) / (weights + KV) |');
  console.log('|---|---|---|---|---|---|---|---|---|---|');
  for (const r of runs) {
    const msTok = r.ms / nDecode;
    const bound = (weights + base.kvBytes) / (weights + r.kvBytes);
    console.log(`| ${r.label} | ${r.cells} | ${r.swaCells} | ${r.kvBytes} | ${weights + r.kvBytes} | ${r.snapMs.toFixed(1)} | ${msTok.toFixed(2)} | ${(1000 / msTok).toFixed(1)} | ${(base.ms / r.ms).toFixed(2)}x | ${bound.toFixed(3)}x |`);
    r.session.dispose();
  }
  model.dispose();
}

void main();
