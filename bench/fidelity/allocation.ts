/**
 * bench/fidelity/allocation: does sharing the budget unevenly help? RepoSnap's on-device SnapKV
 * with the uniform allocation, AdaKV and PyramidKV (`SnapParams.allocation`), at the same total
 * budget (n_layer · n_head_kv · B kept rows), on the fidelity benchmark's prompts: full
 * attention's greedy continuation teacher-forced on each compressed cache, paired per prompt.
 *
 *   node --import tsx bench/fidelity/allocation.ts [--prompts N] [--budgets LIST] [--steps N] [--out FILE]
 *
 * Prints a table and writes bench/results/allocation.json. Model: ../shared/models/stories260K.gguf,
 * f32 KV cache, flash attention off, SnapKV w = 32, max pooling, kernel 7 (RepoSnap's default).
 * Besides fidelity it reports the memory each allocation costs: llama.cpp's cells are shared by
 * every layer and head, so a non-uniform allocation holds C = (largest per-head budget) cells.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadModel } from '../../src/engine/model';
import type { BudgetAllocation } from '../../src/engine/native';
import { checkTinyModel, TINY_MODEL_SHA256 } from '../../test/helpers/models';
import { budgetFor, preparePrompt } from './benchmark';
import { greedyContinuation, TeacherForcer } from './engine';
import { compareToReference, referenceSteps, summarize, type PromptFidelity, type Summary } from './metrics';
import { readPromptCache } from './prompts';
import { SNAP_DEFAULTS } from '../../src/config/snap-options';

const ALLOCATIONS: readonly BudgetAllocation[] = ['uniform', 'adakv', 'pyramid'];
const SNAP = { window: SNAP_DEFAULTS.window, kernel: SNAP_DEFAULTS.kernel, pooling: SNAP_DEFAULTS.pooling };

const log = (s: string) => process.stderr.write(s + '\n');

/** One prompt × budget × allocation. */
interface Run {
  fidelity: PromptFidelity;
  /** Cells held after the snap ÷ B (1 for uniform). */
  cellRatio: number;
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { prompts: { type: 'string' }, budgets: { type: 'string' }, steps: { type: 'string' }, out: { type: 'string' } } });
  const root = path.resolve(__dirname, '..', '..');
  const fractions = (values.budgets ?? '0.05,0.1,0.25,0.5').split(',').map(Number);
  const steps = Number(values.steps ?? 64);
  const out = path.resolve(values.out ?? path.join(root, 'bench', 'results', 'allocation.json'));
  if (fractions.some((f) => !(f > 0 && f <= 1))) throw new Error('--budgets: fractions in (0, 1]');

  const model = await loadModel(checkTinyModel());
  const forcer = new TeacherForcer(model, { threads: 1, contextSize: 2048 });
  const cache = readPromptCache(TINY_MODEL_SHA256);
  if (!cache) throw new Error('bench/fidelity/prompts.json is missing: run bench/fidelity/run.ts once');
  const n = Math.min(cache.prompts.length, Number(values.prompts ?? cache.prompts.length));
  const prompts = cache.prompts.slice(0, n);
  const banned = new Set([model.info.eos]);

  // runs[fraction][allocation][prompt]
  const runs: Run[][][] = fractions.map(() => ALLOCATIONS.map(() => []));
  const t0 = performance.now();
  for (const [i, prompt] of prompts.entries()) {
    const L = prompt.tokens.length;
    const w = SNAP.window;
    const { base, full, tail } = await preparePrompt(forcer, prompt.tokens, [w]);
    await forcer.restore(full);
    const cont = await greedyContinuation(forcer, full.lastLogits, steps, banned);
    const ref = referenceSteps(cont.logits, cont.tokens.slice(1));
    const forced = cont.tokens.slice(0, steps);

    for (const [fi, fraction] of fractions.entries()) {
      const B = Math.max(w + 1, budgetFor(fraction, L));
      for (const [ai, allocation] of ALLOCATIONS.entries()) {
        // the capture must hold the prompt's last w queries: decode the tail again with it armed
        await forcer.restore(base);
        forcer.arm(w);
        await forcer.extend(tail);
        const r = await forcer.snapWith({ ...SNAP, budget: B, allocation });
        if (r.keptRows !== r.nLayer * r.nHeadKv * B) throw new Error(`${allocation}: ${r.keptRows} kept rows, expected ${r.nLayer * r.nHeadKv * B}`);
        runs[fi]![ai]!.push({ fidelity: compareToReference(ref, await forcer.force(forced)), cellRatio: r.B / B });
      }
    }
    log(`prompt ${i + 1}/${n} (L = ${L})`);
  }

  const fmt = (s: Summary, pct = false) => (pct ? `${(100 * s.mean).toFixed(1)} [${(100 * s.ciLow).toFixed(1)}, ${(100 * s.ciHigh).toFixed(1)}]` : `${s.mean.toFixed(3)} [${s.ciLow.toFixed(3)}, ${s.ciHigh.toFixed(3)}]`);
  const rows = fractions.flatMap((fraction, fi) =>
    ALLOCATIONS.map((allocation, ai) => {
      const rs = runs[fi]![ai]!;
      const uni = runs[fi]![0]!;
      return {
        fraction,
        allocation,
        top1: summarize(rs.map((r) => r.fidelity.top1)),
        kl: summarize(rs.map((r) => r.fidelity.kl)),
        pplRatio: summarize(rs.map((r) => r.fidelity.pplRatio)),
        /** Paired per prompt against uniform: top-1 and KL differences (positive Δtop1 / negative ΔKL = better). */
        dTop1: summarize(rs.map((r, p) => r.fidelity.top1 - uni[p]!.fidelity.top1)),
        dKl: summarize(rs.map((r, p) => r.fidelity.kl - uni[p]!.fidelity.kl)),
        cellRatio: summarize(rs.map((r) => r.cellRatio)),
      };
    }),
  );

  console.log(`\nBudget allocation at equal total budget (${n} prompts, ${steps} steps, SnapKV w=${SNAP.window} ${SNAP.pooling} k=${SNAP.kernel}; mean [95 % CI])\n`);
  console.log('| B/L | allocation | top-1 % | Δ top-1 vs uniform (pp) | KL (nats) | Δ KL vs uniform | ppl ratio | cells held ÷ B |');
  console.log('|---|---|---|---|---|---|---|---|');
  for (const r of rows) {
    console.log(`| ${r.fraction} | ${r.allocation} | ${fmt(r.top1, true)} | ${r.allocation === 'uniform' ? '–' : fmt(r.dTop1, true)} | ${fmt(r.kl)} | ${r.allocation === 'uniform' ? '–' : fmt(r.dKl)} | ${r.pplRatio.mean.toFixed(3)} | ${r.cellRatio.mean.toFixed(2)} |`);
  }

  const report = {
    meta: {
      model: { sha256: TINY_MODEL_SHA256 },
      engine: { kvCacheType: 'f32', flashAttention: 'off', threads: 1 },
      snap: SNAP,
      params: { adaAlpha: 0.2, pyramidBeta: 20 },
      prompts: prompts.map((p) => p.id),
      steps,
      fractions,
      budgetRule: 'B = max(w + 1, round(fraction · L)); every allocation keeps n_layer · n_head_kv · B rows',
      runSeconds: r4((performance.now() - t0) / 1000),
      startedAt: new Date().toISOString(),
    },
    rows: rows.map((r) => ({ ...r, top1: rounded(r.top1), kl: rounded(r.kl), pplRatio: rounded(r.pplRatio), dTop1: rounded(r.dTop1), dKl: rounded(r.dKl), cellRatio: rounded(r.cellRatio) })),
  };
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, JSON.stringify(report, null, 1) + '\n');
  log(`wrote ${path.relative(process.cwd(), out)} in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  forcer.dispose();
  model.dispose();
}

/** Rounds to 4 significant digits (keeps the JSON readable). */
function r4(x: number): number {
  return Number(x.toPrecision(4));
}

function rounded(s: Summary): Summary {
  return Object.fromEntries(Object.entries(s).map(([k, v]) => [k, typeof v === 'number' ? r4(v) : v])) as unknown as Summary;
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
