/**
 * bench/fidelity: what SnapKV compression costs on a real trained model, against full
 * attention and other eviction policies (issues 7 and 13).
 *
 *   node --import tsx bench/fidelity/run.ts [options]
 *
 *   --model NAME       tiny (stories260K, default), smollm2, coder (`npm run models`), or a .gguf path
 *   --source KIND      stories (stories260K's own, cached in prompts.json; tiny only) or code (real
 *                      source files of npm packages in node_modules, code-prompts.ts); default:
 *                      stories for tiny, code for any other model
 *   --prompts N        stories: prompts to run, evenly spread over the cached lengths (default: all
 *                      48); code: prompts to build (default 24)
 *   --lengths MIN-MAX  code prompts' lengths [tokens], evenly spaced (default 1024-4096)
 *   --kv TYPE          KV cache type (default f32)
 *   --resume           keep the prompts already measured in the checkpoint under the same settings
 *                      (each prompt is appended there as it finishes)
 *   --checkpoint FILE  the checkpoint (default $TMPDIR/reposnap-fidelity/<out's name>.partial.jsonl)
 *   --measured-only    measure nothing: report the prompts the checkpoint already holds (a run
 *                      stopped early; prompts are measured in an order that spreads over the
 *                      lengths, and the JSON records how many of the planned prompts it covers)
 *   --no-device-check  skip the on-device SnapKV check (RepoSnap's own snap vs the host selection)
 *   --budgets LIST     budgets as fractions of L (default 0.05,0.1,0.25,0.5)
 *   --steps N          teacher-forced tokens after compression (default 64)
 *   --grid full|main|keynorm|topup|prior   SnapKV configurations: the whole window × pooling × kernel grid
 *                      (default) or only the plotted two (with the baselines); keynorm: RepoSnap's
 *                      default SnapKV beside the key-norm scorer (tail w = 32, and tail 0 =
 *                      KnormPress) at the same B, no baselines and no targets (issue 16 item 4);
 *                      topup: SnapKV beside the key-norm base (half the prefix budget) topped up
 *                      by SnapKV, and the key-norm scorer (tail w); prior: SnapKV beside SnapKV
 *                      under the code-aware prior (code prompts only; flags: code-prior.ts)
 *   --prior LIST       --grid prior: the prior's bonus multiples β (default 1,4)
 *   --retrieval N      retrieval-probe items (default: all cached; 0 skips the probe; stories only)
 *   --follow-up N      follow-up-probe threads (default 16; 0 skips the probe; stories only)
 *   --regenerate       sample prompts.json again (prompts, retrieval items) from the model
 *   --threads N        llama.cpp threads (default 1: the machine is shared)
 *   --out FILE         result JSON (default bench/results/fidelity.json for tiny, else
 *                      fidelity-<model>.json); plots go next to it, named after it
 *   --no-plots         skip the SVG/PNG plots
 *
 * A quick run: --prompts 6 --grid main --retrieval 8 --follow-up 3 --out /tmp/fidelity.json
 * Real models (docs/benchmarks.md, "Fidelity"): --model smollm2 --grid main --prompts 24 --lengths 1024-4096;
 *   --model coder --grid main --prompts 12 --lengths 2048-8192 --steps 32 --threads 2 --resume.
 * Models are sha256 checked; f32 KV cache, flash attention off.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { KvCacheType } from '../../src/engine/native';
import { loadModel } from '../../src/engine/model';
import { TINY_MODEL_SHA256 } from '../../test/helpers/models';
import { resolveBenchModel } from '../models';
import { measurePrompt, type PromptMeasurement } from './benchmark';
import { Checkpoint, measureOrder } from './checkpoint';
import { codePrompts, type CodePrompt } from './code-prompts';
import { TeacherForcer } from './engine';
import { followUpItems, runFollowUpItem, type FollowUpResult } from './follow-up';
import { summarize } from './metrics';
import type { EvictionPolicy } from './policy';
import { baselines, CodePriorPolicy, DEFAULT_SNAPKV_ID, KeyNormPolicy, KeyNormTopUpPolicy, snapKvGrid, SnapKvPolicy } from './policies';
import { codePromptPrior, type CodePromptPrior } from './code-prior';
import { processTagsCache } from '../../src/context/map/cache';
import { writePlots } from './plot';
import { machineInfo } from '../machine';
import { DEFAULT_GENERATOR, generatePrompts, readPromptCache, writePromptCache, type Prompt, type PromptCache } from './prompts';
import { checkTargets, followUpReport, markdownTable, modelShapeRecord, resultRows, retrievalReport, type PolicyRecord } from './report';
import { generateRetrieval, runRetrievalItem, type RetrievalCache, type RetrievalItemResult } from './retrieval';
import { SNAP_DEFAULTS } from '../../src/config/snap-options';

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
      model: { type: 'string' },
      source: { type: 'string' },
      lengths: { type: 'string' },
      kv: { type: 'string' },
      resume: { type: 'boolean' },
      'no-device-check': { type: 'boolean' },
      checkpoint: { type: 'string' },
      'measured-only': { type: 'boolean' },
      prior: { type: 'string' },
    },
  });
  const t0 = performance.now();
  const root = path.resolve(__dirname, '..', '..');
  const fractions = (values.budgets ?? '0.05,0.1,0.25,0.5').split(',').map(Number);
  const steps = Number(values.steps ?? 64);
  const threads = Number(values.threads ?? 1);
  const grid = values.grid ?? 'full';
  const bench = resolveBenchModel(values.model ?? 'tiny');
  const source = values.source ?? (bench.id === 'tiny' ? 'stories' : 'code');
  const kv = (values.kv ?? 'f32') as KvCacheType;
  const out = path.resolve(values.out ?? path.join(root, 'bench', 'results', bench.id === 'tiny' ? 'fidelity.json' : `fidelity-${bench.short}.json`));
  if (fractions.some((f) => !(f > 0 && f <= 1))) throw new Error('--budgets: fractions in (0, 1]');
  if (!(steps >= 1)) throw new Error('--steps: a positive number of tokens');
  if (grid !== 'full' && grid !== 'main' && grid !== 'keynorm' && grid !== 'topup' && grid !== 'prior') throw new Error('--grid: full, main, keynorm, topup or prior');
  const bonuses = (values.prior ?? '1,4').split(',').map(Number);
  if (bonuses.some((b) => !(b >= 0 && Number.isFinite(b)))) throw new Error('--prior: bonus multiples ≥ 0');
  if (values.prior !== undefined && grid !== 'prior') throw new Error('--prior goes with --grid prior');
  if (source !== 'stories' && source !== 'code') throw new Error('--source: stories or code');
  if (grid === 'prior' && source !== 'code') throw new Error('--grid prior: the prior flags definitions in source files; use --source code');
  if (source === 'stories' && bench.id !== 'tiny') throw new Error('--source stories: the cached stories are stories260K\'s own (--model tiny); use --source code with a real model');
  if (source === 'code' && (Number(values.retrieval ?? 0) > 0 || Number(values['follow-up'] ?? 0) > 0)) throw new Error('--retrieval and --follow-up probe story prompts: use them with --source stories');
  const lengthMatch = /^(\d+)-(\d+)$/.exec(values.lengths ?? '1024-4096');
  if (!lengthMatch) throw new Error('--lengths: MIN-MAX in tokens, e.g. 1024-4096');
  const [minTokens, maxTokens] = [Number(lengthMatch[1]), Number(lengthMatch[2])];

  const modelFile = bench.file;
  const model = await loadModel(modelFile);
  // the longest prompt, its continuation and one spare batch of the window re-decode
  const contextSize = source === 'stories' ? 2048 : maxTokens + steps + 64;
  if (source === 'code' && contextSize > model.info.nCtxTrain) throw new Error(`--lengths: ${maxTokens} tokens + ${steps} steps exceed ${bench.label}'s training context of ${model.info.nCtxTrain}`);
  const forcer = new TeacherForcer(model, { threads, contextSize, kvCacheType: kv });

  // prompts: stories (cached) or code (built from node_modules)
  let cache: PromptCache | null = null;
  let prompts: (Pick<Prompt, 'id' | 'tokens'> & Partial<CodePrompt>)[];
  let codePackages: string[] = [];
  if (source === 'stories') {
    cache = values.regenerate ? null : readPromptCache(TINY_MODEL_SHA256);
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
    const c = cache;
    prompts = spread(c.prompts.length, Number(values.prompts ?? c.prompts.length)).map((i) => c.prompts[i]!);
  } else {
    const built = codePrompts((text) => model.tokenize(text, { addSpecial: true }), { n: Number(values.prompts ?? 24), minTokens, maxTokens });
    prompts = built.prompts;
    codePackages = built.packages;
    log(`${prompts.length} code prompts of ${minTokens}–${maxTokens} tokens from ${codePackages.length} packages`);
  }

  // policies
  const defaultSnap = new SnapKvPolicy({ window: SNAP_DEFAULTS.window, kernel: SNAP_DEFAULTS.kernel, pooling: SNAP_DEFAULTS.pooling });
  const needleSnap = new SnapKvPolicy(NEEDLE_SNAPKV);
  const focused = grid === 'keynorm' || grid === 'topup' || grid === 'prior';
  const snaps: SnapKvPolicy[] = grid === 'full' ? snapKvGrid() : focused ? [defaultSnap] : [defaultSnap, needleSnap];
  const topUp = new KeyNormTopUpPolicy({ window: SNAP_DEFAULTS.window, kernel: SNAP_DEFAULTS.kernel, pooling: SNAP_DEFAULTS.pooling });
  const snapOpts = { window: SNAP_DEFAULTS.window, kernel: SNAP_DEFAULTS.kernel, pooling: SNAP_DEFAULTS.pooling };
  const base: EvictionPolicy[] =
    grid === 'keynorm'
      ? [new KeyNormPolicy({ tail: SNAP_DEFAULTS.window }), new KeyNormPolicy()]
      : grid === 'topup'
        ? [topUp, new KeyNormPolicy({ tail: SNAP_DEFAULTS.window })]
        : grid === 'prior'
          ? bonuses.map((bonus) => new CodePriorPolicy({ ...snapOpts, bonus }))
          : baselines();
  const policies: EvictionPolicy[] = [...snaps, ...base];
  const plottedIds = focused ? [DEFAULT_SNAPKV_ID, ...base.map((p) => p.id)] : [DEFAULT_SNAPKV_ID, needleSnap.id, ...base.map((p) => p.id)];
  const ordered = [...plottedIds.map((id) => policies.find((p) => p.id === id)!), ...policies.filter((p) => !plottedIds.includes(p.id))];
  const policyRecords: PolicyRecord[] = ordered.map((p) => ({
    id: p.id,
    family: p.family,
    label: p.id === DEFAULT_SNAPKV_ID ? `${p.label} (RepoSnap default)` : p.id === needleSnap.id ? `${p.label} (needle setting)` : p.label,
    params: p.params,
    plotted: plottedIds.includes(p.id),
  }));

  // the code-aware prior's flags, per prompt (the policies above carry none: each prompt gets its own)
  const priors = new Map<number, CodePromptPrior>();
  if (grid === 'prior') {
    const special = model.tokenize('x', { addSpecial: true }).length - model.tokenize('x').length;
    for (const p of prompts) {
      const prior = await codePromptPrior({ tokens: p.tokens, sources: p.sources! }, { window: SNAP_DEFAULTS.window, special, tokenBytes: (t) => model.tokenBytes(t), tags: processTagsCache() });
      priors.set(p.id, prior);
      log(`prompt #${p.id}: prior flags ${prior.definitionTokens} definition, ${prior.identifierTokens} identifier tokens (${prior.identifiers.join(', ') || 'no identifier'} in the window)${prior.unmappedRuns ? `, ${prior.unmappedRuns} run unmapped` : ''}`);
    }
  }
  const policiesFor = (id: number): EvictionPolicy[] => {
    const prior = priors.get(id);
    return prior ? policies.map((p) => (p instanceof CodePriorPolicy ? new CodePriorPolicy({ ...snapOpts, bonus: p.scorer.bonus, flags: prior.flags }) : p)) : policies;
  };

  // main measurement, appended prompt by prompt to a checkpoint (--resume keeps what it holds)
  const deviceCheck = values['no-device-check'] ? undefined : defaultSnap;
  const checkpointFile = path.resolve(values.checkpoint ?? path.join(os.tmpdir(), 'reposnap-fidelity', path.basename(out, '.json') + '.partial.jsonl'));
  const checkpoint = Checkpoint.open<PromptMeasurement>(checkpointFile, {
    model: { file: path.basename(modelFile), sha256: bench.sha256 },
    engine: { kv, threads: null, contextSize },
    prompts: prompts.map((p) => ({ id: p.id, sha256: p.tokensSha256 ?? null, L: p.tokens.length })),
    fractions,
    steps,
    policies: policies.map((p) => p.id),
    deviceCheck: deviceCheck?.id ?? null,
  }, (values.resume ?? false) || (values['measured-only'] ?? false));
  if (checkpoint.done.size) log(`resuming: ${checkpoint.done.size} prompts already measured in ${path.relative(process.cwd(), checkpoint.file)}`);
  // measured in an order that spreads any first k over the lengths; reported in prompt order
  const byIndex = new Map<number, PromptMeasurement>();
  for (const i of measureOrder(prompts.length)) {
    const prompt = prompts[i]!;
    let m = checkpoint.done.get(prompt.id);
    if (!m && !values['measured-only']) {
      m = await measurePrompt(forcer, prompt, policiesFor(prompt.id), { fractions, steps, deviceCheck }, i === 0);
      checkpoint.append(m);
      const d = m.byPolicy[DEFAULT_SNAPKV_ID]!;
      log(`prompt ${byIndex.size + 1}/${prompts.length} (#${i}, L = ${m.L}): ${(m.ms / 1000).toFixed(1)} s; SnapKV default top-1 ${d.map((f) => (100 * f.top1).toFixed(0)).join('/')} %`);
    }
    if (m) byIndex.set(i, m);
  }
  const measuredIndices = [...byIndex.keys()].sort((a, b) => a - b);
  const measurements: PromptMeasurement[] = measuredIndices.map((i) => byIndex.get(i)!);
  if (measurements.length === 0) throw new Error(`--measured-only: ${path.relative(process.cwd(), checkpoint.file)} holds no prompt of this run`);
  const planned = prompts.length;
  prompts = measuredIndices.map((i) => prompts[i]!);
  if (prompts.length < planned) log(`--measured-only: ${prompts.length} of ${planned} prompts measured; the report covers those`);
  const mainSeconds = (performance.now() - t0) / 1000;
  const measuredSeconds = measurements.reduce((a, m) => a + m.ms / 1000, 0);
  const rows = resultRows(measurements, policies, fractions);

  // retrieval probe
  const retrievalCache = (cache?.retrieval ?? { items: [], fillers: [], candidates: 0, fullRecalled: 0 }) as RetrievalCache;
  const nRetrieval = Number(values.retrieval ?? retrievalCache.items.length);
  const retrievalPolicies = policies.filter((p) => plottedIds.includes(p.id));
  const retrievalResults: RetrievalItemResult[] = [];
  for (const i of nRetrieval > 0 ? spread(retrievalCache.items.length, nRetrieval) : []) {
    retrievalResults.push(await runRetrievalItem(forcer, retrievalCache.fillers, retrievalCache.items[i]!, retrievalPolicies, fractions));
  }
  const retrieval = retrievalResults.length ? retrievalReport(retrievalResults, retrievalPolicies, fractions, retrievalCache.candidates, retrievalCache.fullRecalled) : null;
  if (retrieval) log(`retrieval: ${retrieval.items} items, full attention recall ${(100 * retrieval.fullRecall.rate).toFixed(0)} %`);

  // follow-up probe
  const nFollow = Number(values['follow-up'] ?? (source === 'stories' ? 16 : 0));
  const followResults: FollowUpResult[][] = [];
  for (const item of nFollow > 0 && cache ? followUpItems(cache.prompts, nFollow, FOLLOW_UP_PREFIX) : []) {
    followResults.push(await runFollowUpItem(forcer, item, fractions, { window: SNAP_DEFAULTS.window, kernel: SNAP_DEFAULTS.kernel, pooling: SNAP_DEFAULTS.pooling, answer1: 32, answer2: steps }));
  }
  const followUp = followResults.length ? followUpReport(followResults, fractions, FOLLOW_UP_PREFIX, { window: SNAP_DEFAULTS.window, kernel: SNAP_DEFAULTS.kernel, pooling: SNAP_DEFAULTS.pooling }) : null;
  if (followUp) log(`follow-up: ${followUp.items} threads`);

  const targets = focused ? [] : checkTargets(rows, [DEFAULT_SNAPKV_ID, needleSnap.id], base.filter((p) => p.family !== 'recent').map((p) => p.id), followUp);
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
    issue: source === 'stories' ? 7 : 13,
    meta: {
      model: {
        file: path.basename(modelFile),
        label: bench.label,
        sha256: bench.sha256,
        ...modelShapeRecord(model.meta, model.info.nCtxTrain),
        ...(bench.id === 'tiny' ? { trainedSequenceLength: 512 } : {}),
      },
      engine: { kvCacheType: kv, flashAttention: 'off', threads, contextSize },
      prompts: {
        source: source as 'stories' | 'code',
        n: prompts.length,
        planned,
        ids: prompts.map((p) => p.id),
        minL: Math.min(...lengths),
        maxL: Math.max(...lengths),
        meanL: r6(lengths.reduce((a, b) => a + b, 0) / lengths.length),
        ...(source === 'code'
          ? {
              packages: codePackages,
              note: 'each prompt: files of one npm package (then the next packages) in path order, each after a `// <package>/<path>` line, cut to L tokens',
              perPrompt: prompts.map((p) => ({ id: p.id, L: p.tokens.length, source: p.source, files: p.files, tokensSha256: p.tokensSha256 })),
            }
          : {}),
      },
      steps,
      fractions,
      grid,
      budgetRule: 'B = round(fraction · L), at least 1; SnapKV and random keep the last B positions when B ≤ w',
      continuation: 'full attention greedy (end of sequence excluded), steps + 1 tokens; step i is decoded after compression and predicts token i + 1',
      keepAllCheck: measurements[0]?.keepAll ?? null,
      startedAt: new Date(Date.now() - runSeconds * 1000).toISOString(),
      runSeconds: r6(runSeconds),
      mainSeconds: r6(mainSeconds),
      measuredSeconds: r6(measuredSeconds),
      machine: machineInfo(),
      ...(grid === 'prior'
        ? {
            prior: {
              bonuses,
              definitions: "each file's definition name lines (the product's tree-sitter tags, src/pipeline/code-prior.ts fileDefinitionLines) in the prompt's text, mapped to tokens byte by byte (codePriorFlags)",
              identifiers: `questionIdentifiers of the text of the prompt's last ${SNAP_DEFAULTS.window} tokens (SnapKV's observation window, read as the question; the continuation is not read), flagged wherever they occur`,
              perPrompt: prompts.map((p) => {
                const f = priors.get(p.id)!;
                return { id: p.id, L: p.tokens.length, definitionLines: f.definitionLines, definitionTokens: f.definitionTokens, identifierTokens: f.identifierTokens, unmappedRuns: f.unmappedRuns, identifiers: f.identifiers };
              }),
            },
          }
        : {}),
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
  if (!values['no-plots']) for (const f of await writePlots(report, path.dirname(out), path.basename(out, '.json'))) log(`wrote ${path.relative(process.cwd(), f)}`);

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
