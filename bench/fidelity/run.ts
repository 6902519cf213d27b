/**
 * bench/fidelity: what SnapKV compression costs on a real trained model, against full
 * attention and other eviction policies (issue 7).
 *
 *   node --import tsx bench/fidelity/run.ts [options]
 *
 *   --prompts N        prompts to run, evenly spread over the cached lengths (default: all 48)
 *   --budgets LIST     budgets as fractions of L (default 0.05,0.1,0.25,0.5)
 *   --steps N          teacher-forced tokens after compression (default 64)
 *   --grid full|main   SnapKV configurations: the whole window × pooling × kernel grid (default)
 *                      or only the plotted two
 *   --retrieval N      retrieval-probe items (default: all cached; 0 skips the probe)
 *   --follow-up N      follow-up-probe threads (default 16; 0 skips the probe)
 *   --regenerate       sample prompts.json again (prompts, retrieval items) from the model
 *   --threads N        llama.cpp threads (default 1: the machine is shared)
 *   --out FILE         result JSON (default bench/results/fidelity.json); plots go next to it
 *   --no-plots         skip the SVG/PNG plots
 *
 * A quick run: --prompts 6 --grid main --retrieval 8 --follow-up 3 --out /tmp/fidelity.json
 * Model: ../shared/models/stories260K.gguf (sha256 checked), f32 KV cache, flash attention off.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadModel } from '../../src/engine/model';
import { checkTinyModel, TINY_MODEL_SHA256 } from '../../test/helpers/models';
import { measurePrompt, type PromptMeasurement } from './benchmark';
import { TeacherForcer } from './engine';
import { followUpItems, runFollowUpItem, type FollowUpResult } from './follow-up';
import { summarize } from './metrics';
import type { EvictionPolicy } from './policy';
import { baselines, DEFAULT_SNAPKV_ID, snapKvGrid, SnapKvPolicy } from './policies';
import { writePlots } from './plot';
import { DEFAULT_GENERATOR, generatePrompts, readPromptCache, writePromptCache, type Prompt, type PromptCache } from './prompts';
import { checkTargets, followUpReport, markdownTable, resultRows, retrievalReport, type PolicyRecord } from './report';
import { generateRetrieval, runRetrievalItem, type RetrievalCache, type RetrievalItemResult } from './retrieval';

/** The second SnapKV drawn in the plots: the paper's needle-test setting (window 16, kernel 5). */
const NEEDLE_SNAPKV = { window: 16, kernel: 5, pooling: 'max' as const };
const FOLLOW_UP_PREFIX = 1200;

const log = (s: string) => process.stderr.write(s + '\n');

/** Indices of n items spread evenly over total (all when n ≥ total). */
function spread(total: number, n: number): number[] {
  if (n >= total) return Array.from({ length: total }, (_, i) => i);
  if (n <= 1) return [0];
  return [...new Set(Array.from({ length: n }, (_, i) => Math.round((i * (total - 1)) / (n - 1))))];
}

/** Rounds to 6 significant digits (keeps the JSON readable). */
function r6(x: number): number {
  return Number.isFinite(x) ? Number(x.toPrecision(6)) : x;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      prompts: { type: 'string' },
      budgets: { type: 'string' },
      steps: { type: 'string' },
      grid: { type: 'string' },
      retrieval: { type: 'string' },
      'follow-up': { type: 'string' },
      regenerate: { type: 'boolean' },
      threads: { type: 'string' },
      out: { type: 'string' },
      'no-plots': { type: 'boolean' },
    },
  });
  const t0 = performance.now();
  const root = path.resolve(__dirname, '..', '..');
  const fractions = (values.budgets ?? '0.05,0.1,0.25,0.5').split(',').map(Number);
  const steps = Number(values.steps ?? 64);
  const threads = Number(values.threads ?? 1);
  const grid = values.grid ?? 'full';
  const out = path.resolve(values.out ?? path.join(root, 'bench', 'results', 'fidelity.json'));
  if (fractions.some((f) => !(f > 0 && f <= 1))) throw new Error('--budgets: fractions in (0, 1]');
  if (grid !== 'full' && grid !== 'main') throw new Error('--grid: full or main');

  const modelFile = checkTinyModel();
  const model = await loadModel(modelFile);
  const forcer = new TeacherForcer(model, { threads, contextSize: 2048 });

  // prompts (cached)
  let cache: PromptCache | null = values.regenerate ? null : readPromptCache(TINY_MODEL_SHA256);
  if (!cache) {
    log('generating prompts with the model …');
    cache = { model: { file: path.basename(modelFile), sha256: TINY_MODEL_SHA256 }, generator: DEFAULT_GENERATOR, prompts: await generatePrompts(forcer, 48) };
    writePromptCache(cache);
  }
  if (!cache.retrieval) {
    log('choosing retrieval items (full attention + control) …');
    cache.retrieval = await generateRetrieval(forcer, log);
    writePromptCache(cache);
  }
  const retrievalCache = cache.retrieval as RetrievalCache;
  const prompts: Prompt[] = spread(cache.prompts.length, Number(values.prompts ?? cache.prompts.length)).map((i) => cache.prompts[i]!);

  // policies
  const defaultSnap = new SnapKvPolicy({ window: 32, kernel: 7, pooling: 'max' });
  const needleSnap = new SnapKvPolicy(NEEDLE_SNAPKV);
  const snaps: SnapKvPolicy[] = grid === 'full' ? snapKvGrid() : [defaultSnap, needleSnap];
  const base = baselines();
  const policies: EvictionPolicy[] = [...snaps, ...base];
  const plottedIds = [DEFAULT_SNAPKV_ID, needleSnap.id, ...base.map((p) => p.id)];
  const ordered = [...plottedIds.map((id) => policies.find((p) => p.id === id)!), ...policies.filter((p) => !plottedIds.includes(p.id))];
  const policyRecords: PolicyRecord[] = ordered.map((p) => ({
    id: p.id,
    family: p.family,
    label: p.id === DEFAULT_SNAPKV_ID ? `${p.label} (RepoSnap default)` : p.id === needleSnap.id ? `${p.label} (needle setting)` : p.label,
    params: p.params,
    plotted: plottedIds.includes(p.id),
  }));

  // main measurement
  const measurements: PromptMeasurement[] = [];
  for (const [i, prompt] of prompts.entries()) {
    const m = await measurePrompt(forcer, prompt, policies, { fractions, steps, deviceCheck: defaultSnap }, i === 0);
    measurements.push(m);
    const d = m.byPolicy[DEFAULT_SNAPKV_ID]!;
    log(`prompt ${i + 1}/${prompts.length} (L = ${m.L}): ${(m.ms / 1000).toFixed(1)} s; SnapKV default top-1 ${d.map((f) => (100 * f.top1).toFixed(0)).join('/')} %`);
  }
  const mainSeconds = (performance.now() - t0) / 1000;
  const rows = resultRows(measurements, policies, fractions);

  // retrieval probe
  const nRetrieval = Number(values.retrieval ?? retrievalCache.items.length);
  const retrievalPolicies = policies.filter((p) => plottedIds.includes(p.id));
  const retrievalResults: RetrievalItemResult[] = [];
  for (const i of nRetrieval > 0 ? spread(retrievalCache.items.length, nRetrieval) : []) {
    retrievalResults.push(await runRetrievalItem(forcer, retrievalCache.fillers, retrievalCache.items[i]!, retrievalPolicies, fractions));
  }
  const retrieval = retrievalResults.length ? retrievalReport(retrievalResults, retrievalPolicies, fractions, retrievalCache.candidates, retrievalCache.fullRecalled) : null;
  if (retrieval) log(`retrieval: ${retrieval.items} items, full attention recall ${(100 * retrieval.fullRecall.rate).toFixed(0)} %`);

  // follow-up probe
  const nFollow = Number(values['follow-up'] ?? 16);
  const followResults: FollowUpResult[][] = [];
  for (const item of nFollow > 0 ? followUpItems(cache.prompts, nFollow, FOLLOW_UP_PREFIX) : []) {
    followResults.push(await runFollowUpItem(forcer, item, fractions, { window: 32, kernel: 7, pooling: 'max', answer1: 32, answer2: steps }));
  }
  const followUp = followResults.length ? followUpReport(followResults, fractions, FOLLOW_UP_PREFIX, { window: 32, kernel: 7, pooling: 'max' }) : null;
  if (followUp) log(`follow-up: ${followUp.items} threads`);

  const targets = checkTargets(rows, [DEFAULT_SNAPKV_ID, needleSnap.id], base.filter((p) => p.family !== 'recent').map((p) => p.id), followUp);
  const runSeconds = (performance.now() - t0) / 1000;
  const lengths = measurements.map((m) => m.L);
  const device = fractions.map((fraction, fi) => {
    const withDevice = measurements.filter((m) => m.device?.[fi]);
    const runs = withDevice.map((m) => m.device![fi]!);
    const host = withDevice.map((m) => m.byPolicy[DEFAULT_SNAPKV_ID]![fi]!);
    return {
      fraction,
      prompts: runs.length,
      hostTop1: summarize(host.map((h) => h.top1)),
      hostKl: summarize(host.map((h) => h.kl)),
      sharedKept: summarize(runs.map((r) => r.sharedKept)),
      top1: summarize(runs.map((r) => r.fidelity.top1)),
      kl: summarize(runs.map((r) => r.fidelity.kl)),
      pplRatio: summarize(runs.map((r) => r.fidelity.pplRatio)),
    };
  });

  const report = {
    issue: 7,
    meta: {
      model: { file: path.basename(modelFile), sha256: TINY_MODEL_SHA256, nLayer: model.info.nLayer, nHeadKv: model.info.nHeadKv, nHead: model.info.nHead, nCtxTrain: model.info.nCtxTrain, trainedSequenceLength: 512 },
      engine: { kvCacheType: 'f32', flashAttention: 'off', threads, contextSize: 2048 },
      prompts: { n: prompts.length, ids: prompts.map((p) => p.id), minL: Math.min(...lengths), maxL: Math.max(...lengths), meanL: r6(lengths.reduce((a, b) => a + b, 0) / lengths.length) },
      steps,
      fractions,
      grid,
      budgetRule: 'B = round(fraction · L), at least 1; SnapKV and random keep the last B positions when B ≤ w',
      continuation: 'full attention greedy (end of sequence excluded), steps + 1 tokens; step i is decoded after compression and predicts token i + 1',
      keepAllCheck: measurements[0]?.keepAll ?? null,
      startedAt: new Date(Date.now() - runSeconds * 1000).toISOString(),
      runSeconds: r6(runSeconds),
      mainSeconds: r6(mainSeconds),
      machine: { cpus: os.cpus().length, node: process.version },
    },
    policies: policyRecords,
    results: rows,
    deviceCheck: { policy: DEFAULT_SNAPKV_ID, note: 'RepoSnap on-device SnapKV (engine snap) vs the host selection from the same unpooled scores', byFraction: device },
    retrieval,
    followUp,
    targets,
    perPrompt: {
      ids: measurements.map((m) => m.promptId),
      L: lengths,
      byPolicy: Object.fromEntries(
        policies.map((p) => [
          p.id,
          {
            top1: fractions.map((_, fi) => measurements.map((m) => r6(m.byPolicy[p.id]![fi]!.top1))),
            kl: fractions.map((_, fi) => measurements.map((m) => r6(m.byPolicy[p.id]![fi]!.kl))),
            pplRatio: fractions.map((_, fi) => measurements.map((m) => r6(m.byPolicy[p.id]![fi]!.pplRatio))),
          },
        ]),
      ),
    },
  };
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, JSON.stringify(report, (_k, v: unknown) => (typeof v === 'number' ? r6(v) : v), 1) + '\n');
  log(`wrote ${path.relative(process.cwd(), out)} (${runSeconds.toFixed(0)} s)`);
  if (!values['no-plots']) for (const f of await writePlots(report, path.dirname(out))) log(`wrote ${path.relative(process.cwd(), f)}`);

  console.log(markdownTable(rows, policyRecords.filter((p) => p.plotted)));
  if (retrieval) {
    console.log(`\nretrieval (${retrieval.items} items of ${retrieval.candidates} candidates; full attention ${(100 * retrieval.fullRecall.rate).toFixed(0)} %):`);
    for (const p of retrievalPolicies) console.log(`  ${p.label}: ${retrieval.byPolicy.filter((b) => b.policy === p.id).map((b) => `${(100 * b.fraction).toFixed(0)} % → ${(100 * b.recall.rate).toFixed(0)} %`).join(', ')}`);
  }
  if (followUp) {
    console.log(`\nfollow-up (${followUp.items} threads):`);
    for (const b of followUp.byFraction) console.log(`  B/L ${(100 * b.fraction).toFixed(0)} %: continue top-1 ${(100 * b.continue.top1.mean).toFixed(1)} % KL ${b.continue.kl.mean.toFixed(4)} | re-snap top-1 ${(100 * b.resnap.top1.mean).toFixed(1)} % KL ${b.resnap.kl.mean.toFixed(4)}`);
  }
  console.log('\ntargets:');
  for (const t of targets) console.log(`  [${t.met ? 'met' : 'MISSED'}] ${t.target}: ${t.detail}`);
  forcer.dispose();
  model.dispose();
}

void main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
