/**
 * Aggregation of the code-QA benchmark into bench/results/repoqa-<model>.json (issue 13, part 3):
 * the `summary` rows `{model, policy, fraction, n, accuracy, agreement, kl}`, the same metrics
 * with their spread and 95 % intervals, paired differences per question (vs full attention, vs
 * SnapKV), accuracy by question kind, the issue's targets (reported, not asserted), the prefix
 * reuse timings, a Markdown table and the plots.
 *
 * Intervals: 95 % percentile bootstrap of the mean over questions (bench/fidelity/metrics.ts
 * `summarize`, 1,000 seeded resamples); a paired difference is the bootstrap of the per-question
 * differences (so the same question is compared with itself). Full attention's accuracy by kind
 * also has a Wilson interval (bench/fidelity/report.ts `wilson`).
 */
import fs from 'node:fs';
import path from 'node:path';
import { summarize, type Summary } from '../fidelity/metrics';
import type { EvictionPolicy } from '../fidelity/policy';
import { DEFAULT_SNAPKV_ID } from '../fidelity/policies';
import { wilson, type Proportion } from '../fidelity/report';
import { packageId, type RepoPackage } from './packages';
import { QUESTION_KINDS } from './questions';
import type { BranchRecord, QuestionRecord, RunConfig } from './run';
import { writeRepoQaPlots } from './plot';
import type { MachineInfo } from '../machine';

/** One row of the top-level `summary` (means over questions; `kl` over questions whose answer has a teacher-forced step). */
export interface SummaryRow {
  model: string;
  /** `full`, `snapkv` (RepoSnap's default: w = 32, max, kernel 7), `streamingllm`, `random`, or a grid configuration `snapkv-w8-k1-avg`. */
  policy: string;
  /** B/L (1 for full attention). */
  fraction: number;
  /** Questions. */
  n: number;
  /** Exact-match accuracy in [0, 1]. */
  accuracy: number;
  /** Fraction of answers equal to full attention's after normalisation. */
  agreement: number;
  /** Mean KL(full ‖ compressed) of the answer tokens [nats] (teacher-forced full-attention answer). */
  kl: number;
}

/** The same with spreads, intervals and paired differences. */
export interface ResultRow {
  policy: string;
  /** The eviction policy's id in bench/fidelity (`snapkv-w32-max-k7`, …), `full` for full attention. */
  policyId: string;
  fraction: number;
  n: number;
  accuracy: Summary;
  agreement: Summary;
  /** Answers whose tokens equal full attention's. */
  sameTokens: Summary;
  kl: Summary;
  /** Per-step top-1 agreement on the teacher-forced answer. */
  top1: Summary;
  /** Paired, per question: accuracy of this policy − full attention's. */
  accuracyVsFull: Summary;
  /** Paired, per question, against RepoSnap's default SnapKV at the same budget (this − SnapKV); absent for SnapKV itself. */
  vsSnapkv?: { accuracy: Summary; agreement: Summary; kl: Summary };
}

/** Summary name of a policy id. */
export function policyName(id: string, defaultSnapId: string): string {
  if (id === defaultSnapId) return 'snapkv';
  if (id.startsWith('streaming-llm')) return 'streamingllm';
  if (id.startsWith('random')) return 'random';
  const m = /^snapkv-w(\d+)-(max|avg)-k(\d+)$/.exec(id);
  if (m) return `snapkv-w${m[1]}-k${m[3]}-${m[2]}`;
  return id;
}

const mean = (xs: readonly number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);
const b01 = (x: boolean) => (x ? 1 : 0);

/** Result rows of one policy over the records that ran it. */
function rowsFor(records: readonly QuestionRecord[], id: string, name: string, fractions: readonly number[], snapId: string): ResultRow[] {
  return fractions.map((fraction, fi) => {
    const rs = records.filter((r) => r.branches[id]?.[fi]);
    const b = (r: QuestionRecord): BranchRecord => r.branches[id]![fi]!;
    const withKl = rs.filter((r) => b(r).kl !== null);
    const row: ResultRow = {
      policy: name,
      policyId: id,
      fraction,
      n: rs.length,
      accuracy: summarize(rs.map((r) => b01(b(r).correct))),
      agreement: summarize(rs.map((r) => b01(b(r).agree))),
      sameTokens: summarize(rs.map((r) => b01(b(r).same))),
      kl: summarize(withKl.map((r) => b(r).kl!)),
      top1: summarize(withKl.map((r) => b(r).top1!)),
      accuracyVsFull: summarize(rs.map((r) => b01(b(r).correct) - b01(r.full.correct))),
    };
    if (id !== snapId) {
      const s = (r: QuestionRecord): BranchRecord => r.branches[snapId]![fi]!;
      const both = rs.filter((r) => r.branches[snapId]?.[fi]);
      const klBoth = both.filter((r) => b(r).kl !== null && s(r).kl !== null);
      row.vsSnapkv = {
        accuracy: summarize(both.map((r) => b01(b(r).correct) - b01(s(r).correct))),
        agreement: summarize(both.map((r) => b01(b(r).agree) - b01(s(r).agree))),
        kl: summarize(klBoth.map((r) => b(r).kl! - s(r).kl!)),
      };
    }
    return row;
  });
}

/** Full attention's row (agreement 1 and KL 0 by definition). */
function fullRow(records: readonly QuestionRecord[]): ResultRow {
  const ones = records.map(() => 1);
  const zeros = records.map(() => 0);
  return {
    policy: 'full',
    policyId: 'full',
    fraction: 1,
    n: records.length,
    accuracy: summarize(records.map((r) => b01(r.full.correct))),
    agreement: summarize(ones),
    sameTokens: summarize(ones),
    kl: summarize(zeros),
    top1: summarize(ones),
    accuracyVsFull: summarize(zeros),
  };
}

/** Accuracy by kind: full attention (Wilson interval), chance, SnapKV and the baselines at each budget. */
export interface KindRow {
  kind: string;
  n: number;
  full: Proportion;
  /**
   * Accuracy of a uniform guess, mean over the kind's questions: among the repository's files
   * (`file`), its functions (`doc`, `first-call`), or the distinct answers of that kind among all
   * its generated questions (`param`, `return`, `constant`).
   */
  chance: number;
  byPolicy: { policy: string; fraction: number; accuracy: number; agreement: number }[];
}

/** One target of the issue and whether this run meets it. */
export interface TargetCheck {
  target: string;
  met: boolean;
  detail: string;
}

const pct = (x: number) => `${(100 * x).toFixed(1)} %`;
const ci = (s: Summary, f: (x: number) => string) => `${f(s.mean)} [${f(s.ciLow)}, ${f(s.ciHigh)}]`;
/** −s with its interval, scaled: the mean and the bounds of the negated difference, low bound first. */
const negCi = (s: Summary, k: number, digits: number) => `${(-k * s.mean).toFixed(digits)} [${(-k * s.ciHigh).toFixed(digits)}, ${(-k * s.ciLow).toFixed(digits)}]`;

/** The issue's targets on the aggregated rows. */
export function checkTargets(rows: readonly ResultRow[], fractions: readonly number[]): TargetCheck[] {
  const get = (p: string, f: number) => rows.find((r) => r.policy === p && r.fraction === f);
  const full = rows.find((r) => r.policy === 'full')!;
  const out: TargetCheck[] = [];
  const s25 = get('snapkv', 0.25);
  if (s25) {
    const d = s25.accuracyVsFull;
    out.push({
      target: 'SnapKV at B/L = 25 %: accuracy within 2 points of full attention',
      met: d.mean >= -0.02,
      detail: `full ${pct(full.accuracy.mean)}, SnapKV ${pct(s25.accuracy.mean)}: paired difference ${ci(d, (x) => `${(100 * x).toFixed(1)}`)} points (n = ${s25.n})`,
    });
    out.push({ target: 'SnapKV at B/L = 25 %: agreement with full attention ≥ 90 %', met: s25.agreement.mean >= 0.9, detail: `agreement ${ci(s25.agreement, pct)}` });
  }
  for (const base of ['streamingllm', 'random']) {
    if (!rows.some((r) => r.policy === base)) continue;
    const misses: string[] = [];
    for (const f of fractions) {
      const r = get(base, f);
      const s = get('snapkv', f);
      if (!r?.vsSnapkv || !s) continue;
      // r − SnapKV: SnapKV is ahead when accuracy and agreement are not lower and KL not higher
      if (r.vsSnapkv.accuracy.mean > 0) misses.push(`${pct(f)}: accuracy ${pct(s.accuracy.mean)} < ${pct(r.accuracy.mean)}`);
      if (r.vsSnapkv.agreement.mean > 0) misses.push(`${pct(f)}: agreement ${pct(s.agreement.mean)} < ${pct(r.agreement.mean)}`);
      if (r.vsSnapkv.kl.mean < 0) misses.push(`${pct(f)}: KL ${s.kl.mean.toFixed(3)} > ${r.kl.mean.toFixed(3)}`);
    }
    const detail = fractions
      .map((f) => {
        const r = get(base, f);
        if (!r?.vsSnapkv) return '';
        const v = r.vsSnapkv;
        return `${pct(f)}: Δaccuracy ${negCi(v.accuracy, 100, 1)} pts, Δagreement ${negCi(v.agreement, 100, 1)} pts, ΔKL ${ci(v.kl, (x) => x.toFixed(3))}`;
      })
      .filter((s) => s)
      .join('; ');
    out.push({ target: `SnapKV ahead of ${base} at every budget (accuracy, agreement, KL)`, met: misses.length === 0, detail: `${misses.length ? `behind at ${misses.join(', ')}. ` : ''}SnapKV − ${base} for accuracy and agreement, ${base} − SnapKV for KL (paired, 95 % CI): ${detail}` });
  }
  return out;
}

/** Markdown table: one line per policy and budget. */
export function markdownTable(rows: readonly ResultRow[]): string {
  const lines = [
    '| policy | B/L | n | accuracy [95 % CI] | Δ vs full (paired) | agreement with full | KL of the answer [nats] |',
    '|---|---|---|---|---|---|---|',
  ];
  const num = (x: number) => (100 * x).toFixed(1);
  for (const r of rows) {
    const budget = r.policy === 'full' ? '100 %' : `${(100 * r.fraction).toFixed(0)} %`;
    const d = r.policy === 'full' ? '' : `${num(r.accuracyVsFull.mean)} [${num(r.accuracyVsFull.ciLow)}, ${num(r.accuracyVsFull.ciHigh)}]`;
    lines.push(
      `| ${r.policy} | ${budget} | ${r.n} | ${num(r.accuracy.mean)} [${num(r.accuracy.ciLow)}, ${num(r.accuracy.ciHigh)}] | ${d} | ${num(r.agreement.mean)} [${num(r.agreement.ciLow)}, ${num(r.agreement.ciHigh)}] | ${r.kl.mean.toFixed(3)} [${r.kl.ciLow.toFixed(3)}, ${r.kl.ciHigh.toFixed(3)}] |`,
    );
  }
  return lines.join('\n');
}

/** Inputs of {@link writeReport}. */
export interface ReportInput {
  /** Kinds the model answers well above chance at full attention (accuracy is also reported on them apart). */
  answerable: readonly string[];
  modelId: string;
  modelFile: string;
  config: RunConfig;
  main: readonly EvictionPolicy[];
  grid: readonly EvictionPolicy[];
  prefixTimes: { repo: string; tokens: number; prefillMs: number; prefilledAt?: string; loadMs?: number }[];
  packages: readonly RepoPackage[];
  /** Per repository id: its files and the distinct answers of each kind among all its generated questions (the chance levels). */
  candidates: Record<string, { files: number; answers: Partial<Record<string, number>> }>;
  out: string;
  root: string;
  /** The machine of the run (bench/machine.ts), recorded as `meta.machine` when given. */
  machine?: MachineInfo;
}

/** Rounds to 6 significant digits (keeps the JSON readable). */
function r6(x: number): number {
  return Number.isFinite(x) ? Number(x.toPrecision(6)) : x;
}

/** Aggregates the records into the result JSON. */
export function buildReport(records: readonly QuestionRecord[], input: ReportInput) {
  const fractions = input.config.fractions;
  const snapId = DEFAULT_SNAPKV_ID;
  const rows: ResultRow[] = [fullRow(records)];
  for (const p of input.main) rows.push(...rowsFor(records, p.id, policyName(p.id, snapId), fractions, snapId));
  const gridRecords = records.filter((r) => r.grid);
  const gridRows: ResultRow[] = [];
  if (gridRecords.length > 0) {
    gridRows.push({ ...fullRow(gridRecords), policy: 'full (grid questions)' });
    for (const p of [...input.main.filter((q) => q.id === snapId), ...input.grid]) {
      const name = policyName(p.id, '');
      gridRows.push(...rowsFor(gridRecords, p.id, name, fractions, snapId));
    }
  }
  const kept = records.filter((r) => input.answerable.includes(r.kind));
  const answerable = {
    kinds: input.answerable,
    n: kept.length,
    note: 'accuracy on the kinds the model answers well above chance at full attention (agreement and KL: all questions, in results)',
    results: kept.length === records.length ? null : [fullRow(kept), ...input.main.flatMap((p) => rowsFor(kept, p.id, policyName(p.id, snapId), fractions, snapId))],
  };
  const summary: SummaryRow[] = [...rows, ...gridRows.filter((r) => !r.policy.startsWith('full'))].map((r) => ({
    model: input.modelId,
    policy: r.policy,
    fraction: r.fraction,
    n: r.n,
    accuracy: r6(r.accuracy.mean),
    agreement: r6(r.agreement.mean),
    kl: r6(r.kl.mean),
  }));

  const byKind: KindRow[] = QUESTION_KINDS.map((kind) => {
    const rs = records.filter((r) => r.kind === kind);
    const chance = mean(
      rs.map((r) => {
        const c = input.candidates[r.repo];
        if (!c) return NaN;
        return kind === 'file' ? 1 / c.files : 1 / Math.max(1, c.answers[kind === 'doc' || kind === 'first-call' ? 'functions' : kind] ?? 1);
      }),
    );
    const byPolicy = input.main.flatMap((p) =>
      fractions.map((fraction, fi) => ({
        policy: policyName(p.id, snapId),
        fraction,
        accuracy: mean(rs.map((r) => b01(r.branches[p.id]![fi]!.correct))),
        agreement: mean(rs.map((r) => b01(r.branches[p.id]![fi]!.agree))),
      })),
    );
    return { kind, n: rs.length, full: wilson(rs.filter((r) => r.full.correct).length, rs.length), chance: rs.length ? chance : NaN, byPolicy };
  }).filter((k) => k.n > 0);

  const byRepo = [...new Set(records.map((r) => r.repo))].map((repo) => {
    const rs = records.filter((r) => r.repo === repo);
    const snap25 = fractions.indexOf(0.25);
    return {
      repo,
      n: rs.length,
      L: r6(mean(rs.map((r) => r.L))),
      fullAccuracy: r6(mean(rs.map((r) => b01(r.full.correct)))),
      snapkv25Accuracy: snap25 >= 0 && rs.every((r) => r.branches[snapId]) ? r6(mean(rs.map((r) => b01(r.branches[snapId]![snap25]!.correct)))) : null,
      snapkv25Agreement: snap25 >= 0 && rs.every((r) => r.branches[snapId]) ? r6(mean(rs.map((r) => b01(r.branches[snapId]![snap25]!.agree)))) : null,
    };
  });

  const branchMs = records.flatMap((r) => input.main.flatMap((p) => r.branches[p.id]!.map((b) => b.ms)));
  const timing = {
    prefixes: input.prefixTimes.map((p) => ({ ...p, tokensPerSecond: r6(p.tokens / (p.prefillMs / 1000)) })),
    question: {
      prefilledTokens: summarize(records.map((r) => r.prefilledTokens)),
      prefillMs: summarize(records.map((r) => r.prefillMs)),
      restoreMs: summarize(records.map((r) => r.restoreMs)),
      snapshotMs: summarize(records.map((r) => r.snapshotMs)),
      scoresMs: summarize(records.map((r) => r.scoresMs)),
      fullAnswerMs: summarize(records.map((r) => r.full.ms)),
      branchMs: summarize(branchMs),
      questionMs: summarize(records.map((r) => r.ms)),
    },
    note: 'one prefill per repository (the prefix: head + files, saved as a state file and restored for every question); each question restores it and prefills only its own tokens (plus the prefix tokens prefilled again so that the window holds 32 queries), then every policy and budget restores the question\'s state (no prefill)',
  };
  const prefixMsPerQuestion = mean(input.prefixTimes.map((p) => p.prefillMs));
  const keepAll = records.filter((r) => r.keepAll).map((r) => ({ id: r.id, kl: r.keepAll!.kl, same: r.keepAll!.same }));
  const targets = checkTargets(rows, fractions);

  return {
    issue: 13,
    summary,
    meta: {
      model: { id: input.modelId, file: input.modelFile },
      config: input.config,
      questions: records.length,
      gridQuestions: gridRecords.length,
      repositories: input.packages.map((p) => ({ id: packageId(p), integrity: p.integrity, include: p.include })),
      policies: [...input.main, ...input.grid].map((p) => ({ id: p.id, name: policyName(p.id, snapId), label: p.label, params: p.params })),
      budgetRule: 'B = round(fraction · L), at least 1, L = prompt tokens (prefix + question)',
      scoring: 'bench/repoqa/scoring.ts: candidate = first path-like word (file questions), else first line of a fenced block, else first code span that is not the question\'s subject, else the last word of the first sentence; stripped, case-folded; paths: unique file names stand for their path; identifiers: last dotted segment; numbers by value',
      answers: `greedy; ends at the end of generation, ${input.config.answerTokens} tokens, or once the candidate is settled (scoring.ts answerComplete)`,
      kl: 'mean over the full-attention answer\'s tokens after the first (teacher-forced) of KL(full ‖ compressed) [nats]; the first token comes from the prefill\'s logits in every branch',
      intervals: '95 % percentile bootstrap over questions (1,000 resamples); differences paired per question',
      keepAllCheck: keepAll,
      prefixVsQuestionPrefill: { prefixMs: r6(prefixMsPerQuestion), questionPrefillMs: r6(mean(records.map((r) => r.prefillMs))) },
      ...(input.machine ? { machine: input.machine } : {}),
    },
    results: rows,
    answerable,
    grid: gridRows,
    byKind,
    byRepo,
    timing,
    targets,
    /** Per question: id, kind, expected answer, L, full attention's answer and correctness; per main policy and budget [correct, agree, KL]. */
    perQuestion: records.map((r) => ({
      id: r.id,
      kind: r.kind,
      question: r.question,
      expected: r.answer,
      L: r.L,
      full: r.full.text,
      fullCorrect: r.full.correct,
      branches: Object.fromEntries(input.main.map((p) => [policyName(p.id, snapId), r.branches[p.id]!.map((b) => [b.correct ? 1 : 0, b.agree ? 1 : 0, b.kl === null ? null : r6(b.kl)])])),
    })),
    markdown: markdownTable(rows) + (answerable.results ? `\n\nkinds ${input.answerable.join(', ')} (n = ${kept.length}):\n\n${markdownTable(answerable.results)}` : ''),
  };
}

/** The result JSON's shape. */
export type RepoQaReport = ReturnType<typeof buildReport>;

/** Writes the JSON and its plots (named after the JSON file, beside it); returns the files written. */
export async function writeReport(records: readonly QuestionRecord[], input: ReportInput): Promise<string[]> {
  const report = buildReport(records, input);
  fs.mkdirSync(path.dirname(input.out), { recursive: true });
  fs.writeFileSync(input.out, JSON.stringify(report, (_k, v: unknown) => (typeof v === 'number' ? r6(v) : v), 1) + '\n');
  // the plots are named after the JSON (repoqa-coder-prior.json -> repoqa-coder-prior.png), as
  // plot.ts names them: a run with another --out must not overwrite the model's main plots
  const plotKey = path.basename(input.out, '.json').replace(/^repoqa-/, '');
  const written = [input.out, ...(await writeRepoQaPlots(report, path.dirname(input.out), plotKey))];
  console.log(report.markdown);
  for (const k of report.byKind) console.log(`${k.kind}: n=${k.n} full ${pct(k.full.rate)} [${pct(k.full.low)}, ${pct(k.full.high)}] chance ${pct(k.chance)}`);
  for (const t of report.targets) console.log(`[${t.met ? 'met' : 'MISSED'}] ${t.target}: ${t.detail}`);
  return written;
}
