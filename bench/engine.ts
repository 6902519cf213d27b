/**
 * bench/engine: our engine against full attention and against node-llama-cpp's prebuilt
 * llama.cpp, on a synthetic or a real model, all in one run. Prints a table and writes
 * bench/results/engine-<date>[-<model>][-…].json.
 *
 *   node --expose-gc --import tsx bench/engine.ts [--lengths 2048,8192,16384,32768] [--budgets 256,1024,2048]
 *        [--decode 16] [--fa on|off] [--no-nlc] [--nlc-threads default,1,2]
 *        [--model smollm2|coder|file.gguf] [--shape layers,embd,heads,kvHeads,ff] [--weights f16|q8_0]
 *        [--out file.json]
 *   node --expose-gc --import tsx bench/engine.ts --addons A/reposnap.node,B/reposnap.node [--rounds 3] [other flags]
 *
 * With --addons: the same benchmark (without node-llama-cpp) for two or more engine builds side by
 * side in one run, e.g. a static build for this CPU (REPOSNAP_PORTABLE=0 REPOSNAP_OUT=…) against
 * the portable one: each round runs every build once in a child process (REPOSNAP_ADDON), builds in
 * turn, so that load changes on the machine hit all of them alike; the table gives each build's
 * median over the rounds (prefill tok/s, decode ms/token full and at each B) and its ratio to the
 * first build. Writes bench/results/engine-addons-<date>.json (every round's numbers).
 *
 * Per L: prefill tok/s (ours; node-llama-cpp at each --nlc-threads setting, the best of them
 * compared), snap ms and its share of prefill, decode ms/token uncompressed and at each B,
 * uncompressed at L = B (a plain context of B), KV bytes before/after, the peak resident memory of
 * prefill and of snap (VmHWM, reset between phases through /proc/self/clear_refs), decode at B
 * and of the plain context again on every core (the default decodes a short cache on all cores
 * but one, src/engine/threads.ts), and the
 * physical bound of decode's speed-up: decode reads every weight and every KV cell once per token,
 * so full ÷ B can be at most (weights + KV_L) / (weights + KV_B) in bytes read per token (weights =
 * llama_model_size, all tensors; KV = bytes per cell × cells). Prompts are seeded random tokens
 * (speed does not depend on the text).
 * Default model: synthetic llama, 8 layers, n_embd 1024, 16/4 heads (head size 64), n_ff 2816,
 * vocabulary 32,000, F16 weights (llama_model_init_from_user), under bench/.models. `--model`
 * takes a real model of `npm run models` by name (bench/models.ts) or a GGUF path.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadModel, type EngineModel } from '../src/engine/model';
import { createSession, type EngineSession } from '../src/engine/session';
import { ensureSyntheticModel } from '../src/engine/synthetic';
import { defaultThreads } from '../src/engine/threads';
import { resolveBenchModel } from './models';

const SHAPE = { nLayer: 8, nEmbd: 1024, nHead: 16, nHeadKv: 4, nFf: 2816, nVocab: 32000, nCtx: 131072, weightType: 'f16' as 'f16' | 'q8_0', seed: 1 };

function hwmBytes(): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) * 1024 : NaN;
}
function resetHwm(): void {
  try {
    fs.writeFileSync('/proc/self/clear_refs', '5');
  } catch {
    // not Linux: peaks are not measured
  }
}

async function decodeMs(s: EngineSession, steps: number, rand: () => number): Promise<number> {
  await s.step(rand()); // warm-up: graph build for the new n_kv
  const t = performance.now();
  for (let i = 0; i < steps; i++) await s.step(rand());
  return (performance.now() - t) / steps;
}

/** Fixes a session's decode threads at `n` (drops the default's choice by cache length); returns it. */
function allCores(s: EngineSession, n: number): EngineSession {
  s.adaptiveThreads = undefined;
  s.native.setThreads(n, n);
  return s;
}

function nlc(model: string, L: number, threads: string, fa: string, steps: number): { prefillTokS: number; decodeMs: number } | { error: string } {
  try {
    const out = execFileSync(process.execPath, [path.join(__dirname, 'nlc-child.mjs'), model, String(L), threads, fa, String(steps)], { encoding: 'utf8', timeout: 1_800_000 });
    return JSON.parse(out.trim().split('\n').pop()!);
  } catch (e) {
    return { error: String((e as Error).message).split('\n')[0]! };
  }
}

async function main() {
  const { values } = parseArgs({
    options: {
      lengths: { type: 'string' },
      budgets: { type: 'string' },
      decode: { type: 'string' },
      fa: { type: 'string' },
      'no-nlc': { type: 'boolean' },
      model: { type: 'string' },
      shape: { type: 'string' },
      weights: { type: 'string' },
      'nlc-threads': { type: 'string' },
      out: { type: 'string' },
      addons: { type: 'string' },
      rounds: { type: 'string' },
    },
  });
  if (values.addons) return compareAddons(values.addons.split(','), Number(values.rounds ?? 3), values.out);
  // --shape layers,embd,heads,kvHeads,ff (synthetic model of another size)
  const shape = { ...SHAPE };
  if (values.shape) {
    const [nLayer, nEmbd, nHead, nHeadKv, nFf] = values.shape.split(',').map(Number);
    Object.assign(shape, { nLayer, nEmbd, nHead, nHeadKv, nFf });
  }
  if (values.weights) {
    if (values.weights !== 'f16' && values.weights !== 'q8_0') throw new Error('--weights: f16 or q8_0');
    shape.weightType = values.weights;
  }
  const lengths = (values.lengths ?? '2048,8192,16384,32768').split(',').map(Number);
  const budgets = (values.budgets ?? '256,1024,2048').split(',').map(Number);
  const steps = Number(values.decode ?? 16);
  const fa = (values.fa ?? 'on') as 'on' | 'off';
  const bench = values.model ? resolveBenchModel(values.model) : null;
  const file = bench?.file ?? (await ensureSyntheticModel(path.join(__dirname, '.models'), shape));
  const nlcThreads = (values['nlc-threads'] ?? 'default,1,2').split(',').map((t) => t.trim());
  if (nlcThreads.some((t) => t !== 'default' && !(Number(t) >= 1))) throw new Error('--nlc-threads: a list of thread counts or default, e.g. default,1,2');
  const model: EngineModel = await loadModel(file);
  let seed = 7;
  const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) % (model.info.nVocab - 3)) + 3;
  const threads = defaultThreads();
  const weightBytes = model.info.sizeBytes;
  const results: Record<string, unknown>[] = [];

  for (const L of lengths) {
    const row: Record<string, unknown> = { L };
    const prompt = Array.from({ length: L }, rand);
    const s = createSession(model, { contextSize: L + 2 * steps + 8, flashAttention: fa, snapWindow: 32 });
    resetHwm();
    const t0 = performance.now();
    await s.prefill(prompt);
    const prefillMs = performance.now() - t0;
    row.prefillTokS = L / (prefillMs / 1000);
    row.prefillPeakBytes = hwmBytes();
    // the prefix goes to a state file, not a held copy: the snap peak below is the op's own
    const stateFile = path.join(os.tmpdir(), `reposnap-bench-${process.pid}-${L}.state`);
    await s.saveState(stateFile);
    row.kvBytesBefore = s.stats().kvBytes;
    row.decodeMsFull = await decodeMs(s, steps, rand);
    s.dispose();

    row.byBudget = [] as Record<string, unknown>[];
    for (const B of budgets.filter((b) => b < L)) {
      const c = createSession(model, { contextSize: L + 2 * steps + 8, flashAttention: fa, snapWindow: 32 });
      await c.loadState(stateFile);
      // the restored cache has no captured window: decode the last 32 prompt tokens again
      c.truncate(L - 32);
      await c.prefill(prompt.slice(L - 32));
      (globalThis as { gc?: () => void }).gc?.(); // drop the state file's buffers before measuring
      resetHwm();
      const rssBeforeSnap = hwmBytes();
      const r = await c.snap({ window: 32, budget: B, kernel: 7 });
      const snapPeak = hwmBytes();
      const kvAfter = c.stats().kvBytes;
      const dms = await decodeMs(c, steps, rand);
      // the same cache decoded on every core (the default decodes a short cache on all cores but one)
      const dmsAll = await decodeMs(allCores(c, threads.threadsBatch), steps, rand);
      c.dispose();
      // the physical bound: a plain context of B tokens
      const p = createSession(model, { contextSize: B + 2 * steps + 8, flashAttention: fa, snapWindow: 0 });
      await p.prefill(prompt.slice(0, B));
      const plainMs = await decodeMs(p, steps, rand);
      const plainMsAll = await decodeMs(allCores(p, threads.threadsBatch), steps, rand);
      p.dispose();
      const kvBefore = row.kvBytesBefore as number;
      (row.byBudget as Record<string, unknown>[]).push({
        B,
        snapMs: r.ms,
        snapShare: r.ms / prefillMs,
        snapPeakBytes: snapPeak,
        rssBeforeSnapBytes: rssBeforeSnap,
        kvBytesAfter: kvAfter,
        decodeMs: dms,
        decodeMsPlainB: plainMs,
        decodeMsAllCores: dmsAll,
        decodeMsPlainBAllCores: plainMsAll,
        speedup: (row.decodeMsFull as number) / dms,
        boundSpeedup: (weightBytes + kvBefore) / (weightBytes + kvAfter),
      });
    }

    fs.rmSync(stateFile, { force: true });
    if (!values['no-nlc']) {
      for (const t of nlcThreads) {
        row[t === 'default' ? 'nlcDefault' : `nlc${t}`] = nlc(file, L, t, fa, steps);
        console.error(`[bench] L=${L} node-llama-cpp threads=${t}: ${JSON.stringify(row[t === 'default' ? 'nlcDefault' : `nlc${t}`])}`);
      }
    }
    results.push(row);
    console.error(`[bench] L=${L} done`);
  }

  const f = (x: unknown, d = 1) => (typeof x === 'number' && Number.isFinite(x) ? x.toFixed(d) : '–');
  const mib = (x: unknown) => (typeof x === 'number' ? (x / 2 ** 20).toFixed(0) : '–');
  console.log(`model ${path.basename(file)}: ${model.info.description}, ${model.info.nLayer} layers, n_embd ${model.info.nEmbd}, heads ${model.info.nHead}/${model.info.nHeadKv}, vocab ${model.info.nVocab}, weights ${mib(weightBytes)} MiB; flash attention ${fa}; threads ${threads.threads}/${threads.threadsBatch} (decode/prefill); ${os.cpus().length} CPUs`);
  const nlcKeys = nlcThreads.map((t) => (t === 'default' ? 'nlcDefault' : `nlc${t}`));
  console.log(`\n| L | prefill tok/s (ours) | ${nlcThreads.map((t) => `nlc threads=${t}`).join(' | ')} | ours / nlc best | decode ms/tok full | nlc best | KV MiB | prefill peak MiB |`);
  console.log(`|---|---|${nlcThreads.map(() => '---|').join('')}---|---|---|---|---|`);
  for (const r of results) {
    const n = (k: string) => r[k] as { prefillTokS?: number; decodeMs?: number } | undefined;
    const bestPrefill = Math.max(0, ...nlcKeys.map((k) => n(k)?.prefillTokS ?? 0));
    const bestDecode = Math.min(Infinity, ...nlcKeys.map((k) => n(k)?.decodeMs ?? Infinity));
    console.log(`| ${r.L} | ${f(r.prefillTokS, 0)} | ${nlcKeys.map((k) => `${f(n(k)?.prefillTokS, 0)} (${f(n(k)?.decodeMs, 0)} ms)`).join(' | ')} | ${bestPrefill ? f((r.prefillTokS as number) / bestPrefill, 2) : '–'} | ${f(r.decodeMsFull, 2)} | ${f(bestDecode, 2)} | ${mib(r.kvBytesBefore)} | ${mib(r.prefillPeakBytes)} |`);
  }
  console.log(`\n| L | B | snap ms | snap / prefill | RSS before snap MiB | snap peak MiB | decode ms/tok at B | plain context of B | at B, ${threads.threadsBatch} threads | plain, ${threads.threadsBatch} threads | full ÷ B | bound (W + KV_L) / (W + KV_B) | KV MiB after | KV ratio | B/L |`);
  console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const r of results) {
    for (const b of r.byBudget as Record<string, number>[]) {
      console.log(`| ${r.L} | ${b.B} | ${f(b.snapMs)} | ${f(100 * b.snapShare!, 2)} % | ${mib(b.rssBeforeSnapBytes)} | ${mib(b.snapPeakBytes)} | ${f(b.decodeMs, 2)} | ${f(b.decodeMsPlainB, 2)} | ${f(b.decodeMsAllCores, 2)} | ${f(b.decodeMsPlainBAllCores, 2)} | ${f(b.speedup, 2)}× | ${f(b.boundSpeedup, 2)}× | ${mib(b.kvBytesAfter)} | ${f(b.kvBytesAfter! / (r.kvBytesBefore as number), 4)} | ${f(b.B! / (r.L as number), 4)} |`);
    }
  }
  const tag = `${bench ? `-${bench.short}` : ''}${values.shape ? `-${values.shape.replace(/,/g, 'x')}` : ''}${values.weights && values.weights !== 'f16' ? `-${values.weights}` : ''}${values.lengths ? `-L${lengths.join('-')}` : ''}`;
  const out = path.resolve(values.out ?? path.join(__dirname, 'results', `engine-${new Date().toISOString().slice(0, 10)}${tag}.json`));
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, JSON.stringify({ model: path.basename(file), modelLabel: bench?.label ?? null, weightBytes, shape: bench ? null : shape, fa, threads, steps, results }, null, 2) + '\n');
  console.log(`\nwrote ${path.relative(process.cwd(), out)}`);
  model.dispose();
}

/** The median of numbers (NaN for none). */
function median(xs: number[]): number {
  const v = xs.filter(Number.isFinite).sort((a, b) => a - b);
  return v.length === 0 ? NaN : v.length % 2 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
}

/**
 * --addons: runs this benchmark once per build per round in child processes (REPOSNAP_ADDON), the
 * builds in turn, and prints the medians side by side with each build's ratio to the first.
 * @param addons addon files (reposnap.node of each build).
 * @param rounds rounds (each build runs once a round).
 * @param outArg --out (default bench/results/engine-addons-<date>.json).
 */
function compareAddons(addons: string[], rounds: number, outArg: string | undefined): void {
  if (addons.length < 2) throw new Error('--addons: two or more addon files, comma-separated');
  for (const a of addons) if (!fs.existsSync(a)) throw new Error(`--addons: ${a} does not exist`);
  // every flag but --addons/--rounds/--out goes to the children, which never run node-llama-cpp
  const pass: string[] = [];
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i].split('=')[0];
    if (['--addons', '--rounds', '--out'].includes(flag)) {
      if (!argv[i].includes('=')) i++;
      continue;
    }
    pass.push(argv[i]);
  }
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-engine-addons-'));
  type Run = { results: Record<string, unknown>[] };
  const runs: Run[][] = addons.map(() => []);
  const engines: string[] = addons.map(() => '');
  for (let r = 0; r < rounds; r++) {
    addons.forEach((addon, i) => {
      const out = path.join(tmp, `${i}-${r}.json`);
      console.error(`[bench] round ${r + 1}/${rounds}: ${addon}`);
      execFileSync(process.execPath, ['--expose-gc', '--import', 'tsx', __filename, '--no-nlc', ...pass, '--out', out], {
        env: { ...process.env, REPOSNAP_ADDON: path.resolve(addon) },
        stdio: ['ignore', 'ignore', 'inherit'],
      });
      runs[i].push(JSON.parse(fs.readFileSync(out, 'utf8')) as Run);
      engines[i] ||= execFileSync(process.execPath, ['-e', `const a=require(${JSON.stringify(path.resolve(addon))});const l=a.backendLoad&&a.backendLoad();process.stdout.write(l&&l.dynamic?'portable, CPU variant '+l.cpuVariant:'static')`], { encoding: 'utf8' });
    });
  }
  fs.rmSync(tmp, { recursive: true, force: true });
  const f = (x: number, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : '–');
  const med = (i: number, pick: (run: Run) => number | undefined) => median(runs[i].map((run) => pick(run) ?? NaN));
  addons.forEach((a, i) => console.log(`build ${i + 1}: ${a} (${engines[i]})`));
  const Ls = runs[0][0].results.map((r) => r.L as number);
  const budgets = ((runs[0][0].results[0]?.byBudget ?? []) as { B: number }[]).map((b) => b.B);
  const cols = [
    { name: 'prefill tok/s', pick: (L: number) => (run: Run) => run.results.find((r) => r.L === L)?.prefillTokS as number | undefined, d: 0 },
    { name: 'decode ms/tok full', pick: (L: number) => (run: Run) => run.results.find((r) => r.L === L)?.decodeMsFull as number | undefined, d: 2 },
    ...budgets.map((B) => ({ name: `decode ms/tok at B=${B}`, pick: (L: number) => (run: Run) => ((run.results.find((r) => r.L === L)?.byBudget ?? []) as { B: number; decodeMs: number }[]).find((b) => b.B === B)?.decodeMs, d: 2 })),
  ];
  console.log(`\nmedians of ${rounds} rounds; ratio = build ÷ build 1\n`);
  console.log(`| L | ${cols.map((c) => addons.map((_, i) => `${c.name} (${i + 1})`).join(' | ') + ` | ratio`).join(' | ')} |`);
  console.log(`|---|${cols.map(() => addons.map(() => '---|').join('') + '---|').join('')}`);
  const table: Record<string, unknown>[] = [];
  for (const L of Ls) {
    const row: Record<string, unknown> = { L };
    const cells = cols.map((c) => {
      const m = addons.map((_, i) => med(i, c.pick(L)));
      row[c.name] = m;
      return `${m.map((x) => f(x, c.d)).join(' | ')} | ${m.slice(1).map((x) => f(x / m[0], 3)).join(', ')}`;
    });
    table.push(row);
    console.log(`| ${L} | ${cells.join(' | ')} |`);
  }
  const out = path.resolve(outArg ?? path.join(__dirname, 'results', `engine-addons-${new Date().toISOString().slice(0, 10)}.json`));
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, JSON.stringify({ addons, engines, rounds, args: pass, medians: table, runs }, null, 2) + '\n');
  console.log(`\nwrote ${path.relative(process.cwd(), out)}`);
}

void main();
