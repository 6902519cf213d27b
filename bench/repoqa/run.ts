/**
 * bench/repoqa: questions about real repositories, answered by a real model through the
 * product's prompt, with full attention and with each eviction policy at each budget (issue 13,
 * part 3). See bench/repoqa/branches.ts for what one question costs and repository.ts for what
 * runs through which product function.
 *
 *   node --import tsx bench/repoqa/run.ts --model smollm2|coder [options]
 *
 *   --packages LIST    package names (default: every package of packages.ts for the model)
 *   --kinds LIST       question kinds (default: the kinds kept for the model, KEPT_KINDS)
 *   --per-package N    questions per package, kinds taken in turn (default 20)
 *   --budgets LIST     budgets as fractions of L (default 0.05,0.1,0.25,0.5)
 *   --grid N           run the SnapKV grid (window 8/16/32 × kernel 1/5/7 × max/avg) on N
 *                      questions spread evenly over the selection (default 0)
 *   --answer-tokens N  longest answer (default 24; an answer also ends once its candidate is
 *                      settled, scoring.ts)
 *   --jsonl FILE       per-question results, appended as they finish; a rerun skips the
 *                      questions already there (default bench/.repoqa/runs/<model>.jsonl)
 *   --out FILE         aggregated results (default bench/results/repoqa-<model>.json), plots
 *                      next to it; --no-report skips both (measure only)
 *   --limit N          stop after N new questions
 *   --report-only      write the report from the JSONL, measure nothing
 *   --full-only        full attention only, no policy or budget (the pilot that measures which
 *                      kinds the model answers)
 *   --scorer key-norm  compare RepoSnap's SnapKV with the key-norm scorer (src/engine/policies/
 *                      key-norm.ts, keeping the same last 32 tokens) at equal budgets: the main
 *                      policies are then these two alone (no baselines)
 *   --scorer key-norm-topup  the same with the key-norm base topped up by SnapKV
 *                      (src/engine/policies/key-norm-topup.ts: half of each (layer, KV head)'s
 *                      prefix budget by key norm, the rest by SnapKV's pooled scores, the window
 *                      kept; SnapKV's default window, kernel and pooling)
 *   --prior LIST       compare RepoSnap's SnapKV with SnapKV under the code-aware prior
 *                      (src/engine/policies/code-prior.ts) at these bonus multiples, e.g. 1,4:
 *                      the main policies are then these alone (no baselines), at equal budgets
 *
 * Models: `npm run models` (SmolLM2-135M-Instruct Q4_1; Qwen2.5-Coder-1.5B-Instruct Q4_K_M with
 * `-- --model coder`). Repositories: `npm pack` into bench/.repoqa (packages.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadModel, type EngineModel } from '../../src/engine/model';
import { checkRealModel } from '../../test/helpers/models';
import { mixSeed, mulberry32 } from '../fidelity/rng';
import type { EvictionPolicy } from '../fidelity/policy';
import { DEFAULT_SNAPKV_ID as DEFAULT_SNAP_ID, KeyNormPolicy, KeyNormTopUpPolicy, RandomPolicy, snapKvGrid, SnapKvPolicy, StreamingLlmPolicy } from '../fidelity/policies';
import { measureQuestion, type BranchOutcome, type StopReason } from './branches';
import { findPackage, packageId, setupPackage, type RepoPackage } from './packages';
import { generateQuestions, QUESTION_KINDS, type Question, type QuestionKind } from './questions';
import { benchSession, prefixState, questionTokens, readPrefixMeta, repositoryPrompt } from './repository';
import { agrees, answerComplete, isCorrect, scoringContext } from './scoring';
import { readJsonlRecords, startJsonl } from './jsonl';
import { writeReport } from './report';
import { machineInfo } from '../machine';
import { SNAP_DEFAULTS } from '../../src/config/snap-options';
import { CodePriorScorer, ScoredPolicy, SnapKvScorer, UniformAllocator } from '../../src/engine/policies';
import { processTagsCache } from '../../src/context/map/cache';
import { codePriorFlags, questionIdentifiers, sectionDefinitionLines, type PromptRun } from '../../src/pipeline/code-prior';

/**
 * The benchmark's models: short key → scripts/models.json id, the repositories it runs, the
 * question kinds it is asked, and the kinds it answers well above chance at full attention
 * (`answerable`, measured by the `--full-only` pilot; the report gives accuracy on those apart).
 * SmolLM2-135M is above chance only on `doc` and `first-call` (pilot: 25 % vs 9 %, 15 % vs 7 %);
 * its other kinds are kept for agreement and KL (what compression costs), not for accuracy.
 * Qwen2.5-Coder-1.5B answers `first-call` with the function asked about (17 % vs 7 % chance):
 * left out.
 */
export const MODELS: Record<string, { id: string; packages: readonly string[]; kinds: readonly QuestionKind[]; answerable: readonly QuestionKind[] }> = {
  smollm2: {
    id: 'smollm2-135m-instruct',
    packages: ['http-errors', 'minimist', 'semver', 'body-parser', 'negotiator', 'debug', 'cross-spawn', 'mime-types', 'braces', 'depd', 'send', 'morgan', 'proxy-addr', 'compression', 'on-finished', 'finalhandler'],
    kinds: QUESTION_KINDS,
    answerable: ['doc', 'first-call'],
  },
  coder: {
    id: 'qwen2.5-coder-1.5b-instruct',
    packages: ['negotiator', 'semver', 'body-parser', 'cross-spawn', 'mime-types', 'debug'],
    kinds: ['file', 'doc', 'return', 'param', 'constant'],
    answerable: ['file', 'doc', 'return', 'param', 'constant'],
  },
};

/** The main policies: RepoSnap's default SnapKV and the two baselines. */
export function mainPolicies(): EvictionPolicy[] {
  return [new SnapKvPolicy({ window: SNAP_DEFAULTS.window, kernel: SNAP_DEFAULTS.kernel, pooling: SNAP_DEFAULTS.pooling }), new StreamingLlmPolicy({ sinks: 4 }), new RandomPolicy({ window: 32, seed: 1 })];
}

/** The scorers `--scorer` compares with RepoSnap's SnapKV. */
export const SCORERS: readonly string[] = ['key-norm', 'key-norm-topup'];

/**
 * The policy `--scorer` puts beside RepoSnap's SnapKV, at SnapKV's default window (32), kernel and
 * pooling: `key-norm` keeps the last w tokens and the B − w prefix keys of lowest norm;
 * `key-norm-topup` takes half of the B − w by key norm and the rest by SnapKV's pooled scores.
 * @throws Error for another name.
 */
export function scorerPolicy(name: string): EvictionPolicy {
  if (name === 'key-norm') return new KeyNormPolicy({ tail: SNAP_DEFAULTS.window });
  if (name === 'key-norm-topup') return new KeyNormTopUpPolicy({ window: SNAP_DEFAULTS.window, kernel: SNAP_DEFAULTS.kernel, pooling: SNAP_DEFAULTS.pooling });
  throw new Error(`--scorer: one of ${SCORERS.join(', ')}, got ${name}`);
}

/**
 * RepoSnap's SnapKV under the code-aware prior at bonus β, for one prompt: `flags` per position
 * (src/pipeline/code-prior.ts); the uniform allocation, as the product's default.
 */
export function codePriorPolicy(bonus: number, flags: Uint8Array = new Uint8Array(0)): EvictionPolicy {
  const snapkv = new SnapKvScorer({ window: SNAP_DEFAULTS.window, kernel: SNAP_DEFAULTS.kernel, pooling: SNAP_DEFAULTS.pooling });
  return new ScoredPolicy(new CodePriorScorer(snapkv, { flags, bonus }), new UniformAllocator());
}

/**
 * A packed repository's file sections as prompt runs after the template's head (the prefix of
 * repository.ts: head │ files), each with its definition lines (tree-sitter tags).
 */
export async function fileRuns(model: EngineModel, headTokens: number, files: readonly { path: string; text: string }[]): Promise<PromptRun[]> {
  const runs: PromptRun[] = [];
  let start = headTokens;
  for (const f of files) {
    const tokens = model.tokenize(f.text);
    runs.push({ start, tokens, text: f.text, definitionLines: await sectionDefinitionLines({ kind: 'file', path: f.path, text: f.text }, processTagsCache()) });
    start += tokens.length;
  }
  return runs;
}

/** One branch as recorded in the JSONL. */
export interface BranchRecord {
  B: number;
  text: string;
  tokens: number[];
  stop: StopReason;
  correct: boolean;
  /** Normalised answer equals full attention's. */
  agree: boolean;
  /** The answer's tokens equal full attention's. */
  same: boolean;
  /** Mean KL(full ‖ compressed) over the teacher-forced steps [nats]; null without steps. */
  kl: number | null;
  top1: number | null;
  departedAt: number;
  ms: number;
}

/** One question as recorded in the JSONL. */
export interface QuestionRecord extends Question {
  L: number;
  prefixTokens: number;
  suffixTokens: number;
  prefilledTokens: number;
  restoreMs: number;
  prefillMs: number;
  snapshotMs: number;
  scoresMs: number;
  ms: number;
  full: { text: string; tokens: number[]; stop: StopReason; ms: number; correct: boolean };
  keepAll?: BranchRecord;
  /** By policy id, then by budget (the run's fractions). */
  branches: Record<string, BranchRecord[]>;
  /** Whether the SnapKV grid ran on this question. */
  grid: boolean;
}

/** The settings that make JSONL records comparable (a rerun with others is refused). */
export interface RunConfig {
  model: string;
  fractions: number[];
  answerTokens: number;
}

const log = (s: string) => process.stderr.write(s + '\n');

/** Indices of n items spread evenly over total (all when n ≥ total). */
export function spread(total: number, n: number): number[] {
  if (n <= 0) return [];
  if (n >= total) return Array.from({ length: total }, (_, i) => i);
  if (n === 1) return [0];
  return [...new Set(Array.from({ length: n }, (_, i) => Math.round((i * (total - 1)) / (n - 1))))];
}

/**
 * Chooses up to `perPackage` questions of one package: each kind's questions shuffled with a
 * seeded generator (mulberry32, seeded by the package and the kind), then kinds taken in turn.
 */
export function selectQuestions(all: readonly Question[], kinds: readonly QuestionKind[], perPackage: number, seed = 13): Question[] {
  const lists = kinds.map((k, ki) => {
    const list = all.filter((q) => q.kind === k);
    const rng = mulberry32(mixSeed(seed, ki, ...Buffer.from(all[0]?.repo ?? '')));
    for (let i = list.length - 1; i > 0; i--) {
      const j = Math.floor(rng() * (i + 1));
      [list[i], list[j]] = [list[j]!, list[i]!];
    }
    return list;
  });
  const out: Question[] = [];
  for (let round = 0; out.length < perPackage && lists.some((l) => l.length > round); round++) {
    for (const l of lists) if (l[round] && out.length < perPackage) out.push(l[round]!);
  }
  return out;
}

/** Turns a branch outcome into its record, scored against the question and full attention. */
export function branchRecord(b: BranchOutcome, q: Question, fullText: string, fullTokens: readonly number[], files: readonly string[]): BranchRecord {
  const ctx = scoringContext(q, files);
  return {
    B: b.B,
    text: b.text,
    tokens: b.tokens,
    stop: b.stop,
    correct: isCorrect(b.text, ctx),
    agree: agrees(b.text, fullText, ctx),
    same: b.tokens.length === fullTokens.length && b.tokens.every((t, i) => t === fullTokens[i]),
    kl: b.fidelity ? b.fidelity.kl : null,
    top1: b.fidelity ? b.fidelity.top1 : null,
    departedAt: b.departedAt,
    ms: b.ms,
  };
}

/** A record scored again from its texts (correctness and agreement of full attention and every branch). */
export function rescore(r: QuestionRecord, files: readonly string[]): QuestionRecord {
  const ctx = scoringContext(r, files);
  const again = (b: BranchRecord): BranchRecord => ({ ...b, correct: isCorrect(b.text, ctx), agree: agrees(b.text, r.full.text, ctx) });
  return {
    ...r,
    full: { ...r.full, correct: isCorrect(r.full.text, ctx) },
    keepAll: r.keepAll ? again(r.keepAll) : undefined,
    branches: Object.fromEntries(Object.entries(r.branches).map(([id, list]) => [id, list.map(again)])),
  };
}

/** Reads a JSONL of records for this config; an empty list when the file is absent. @throws on a config mismatch. */
export function readRecords(file: string, config: RunConfig): QuestionRecord[] {
  return readJsonlRecords<QuestionRecord>(file, config);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      model: { type: 'string' },
      packages: { type: 'string' },
      kinds: { type: 'string' },
      'per-package': { type: 'string' },
      budgets: { type: 'string' },
      grid: { type: 'string' },
      'answer-tokens': { type: 'string' },
      jsonl: { type: 'string' },
      out: { type: 'string' },
      'no-report': { type: 'boolean' },
      limit: { type: 'string' },
      'full-only': { type: 'boolean' },
      'report-only': { type: 'boolean' },
      prior: { type: 'string' },
      scorer: { type: 'string' },
    },
  });
  const key = values.model ?? 'smollm2';
  const spec = MODELS[key];
  if (!spec) throw new Error(`--model: one of ${Object.keys(MODELS).join(', ')}`);
  const root = path.resolve(__dirname, '..', '..');
  const fullOnly = values['full-only'] ?? false;
  const fractions = fullOnly ? [] : (values.budgets ?? '0.05,0.1,0.25,0.5').split(',').map(Number);
  if (fractions.some((f) => !(f > 0 && f < 1))) throw new Error('--budgets: fractions in (0, 1)');
  const answerTokens = Number(values['answer-tokens'] ?? 24);
  const perPackage = Number(values['per-package'] ?? 20);
  const gridN = Number(values.grid ?? 0);
  const limit = values['report-only'] ? 0 : values.limit ? Number(values.limit) : Infinity;
  const kinds = (values.kinds ? values.kinds.split(',') : spec.kinds) as QuestionKind[];
  for (const k of kinds) if (!QUESTION_KINDS.includes(k)) throw new Error(`--kinds: ${k} is not one of ${QUESTION_KINDS.join(', ')}`);
  const packages: RepoPackage[] = (values.packages ? values.packages.split(',') : spec.packages).map(findPackage);
  const jsonl = path.resolve(values.jsonl ?? path.join(root, 'bench', '.repoqa', 'runs', `${key}.jsonl`));
  const out = path.resolve(values.out ?? path.join(root, 'bench', 'results', `repoqa-${key}.json`));
  const config: RunConfig = { model: spec.id, fractions, answerTokens };

  const modelFile = checkRealModel(spec.id);
  const model: EngineModel = await loadModel(modelFile);
  const records = readRecords(jsonl, config);
  const done = new Set(records.map((r) => r.id));
  fs.mkdirSync(path.dirname(jsonl), { recursive: true });
  startJsonl(jsonl, config);
  log(`${spec.id}: ${records.length} questions already in ${path.relative(root, jsonl)}`);

  const bonuses = values.prior ? values.prior.split(',').map(Number) : [];
  if (bonuses.some((b) => !(b >= 0 && Number.isFinite(b)))) throw new Error('--prior: bonus multiples ≥ 0');
  if (values.scorer !== undefined && !SCORERS.includes(values.scorer)) throw new Error(`--scorer: one of ${SCORERS.join(', ')}`);
  if (values.scorer && bonuses.length > 0) throw new Error('--scorer and --prior: one comparison at a time');
  const main = fullOnly
    ? []
    : bonuses.length > 0
      ? [mainPolicies()[0]!, ...bonuses.map((b) => codePriorPolicy(b))]
      : values.scorer
        ? [mainPolicies()[0]!, scorerPolicy(values.scorer)]
        : mainPolicies();
  const grid = fullOnly ? [] : snapKvGrid().filter((p) => p.id !== DEFAULT_SNAP_ID);
  const repos: { pkg: RepoPackage; questions: Question[] }[] = [];
  const prepared = new Map<string, Awaited<ReturnType<typeof repositoryPrompt>>>();
  const candidates: Record<string, { files: number; answers: Partial<Record<QuestionKind | 'functions', number>> }> = {};
  for (const pkg of packages) {
    const dir = setupPackage(pkg);
    const rp = await repositoryPrompt(model, dir, pkg.include, answerTokens);
    prepared.set(pkg.name, rp);
    const all = await generateQuestions(dir, rp.files, packageId(pkg));
    repos.push({ pkg, questions: selectQuestions(all, kinds, perPackage) });
    const answers: Partial<Record<QuestionKind | 'functions', number>> = {};
    for (const k of QUESTION_KINDS) answers[k] = new Set(all.filter((q) => q.kind === k).map((q) => q.answer.toLowerCase())).size;
    answers.functions = new Set(all.filter((q) => q.kind !== 'constant').map((q) => q.subject)).size;
    candidates[packageId(pkg)] = { files: rp.files.length, answers };
    log(`${packageId(pkg)}: ${rp.files.length} files, prefix ${rp.prefix.length} tokens, ${all.length} questions generated, ${repos[repos.length - 1]!.questions.length} selected`);
  }
  const selected = repos.flatMap((r) => r.questions);
  const gridIds = new Set(spread(selected.length, gridN).map((i) => selected[i]!.id));

  let fresh = 0;
  /** Each repository's prefix: its one prefill (recorded with its state, possibly by an earlier run) and this run's load of it. */
  const prefixTimes: { repo: string; tokens: number; prefillMs: number; prefilledAt?: string; loadMs?: number }[] = [];
  for (const { pkg } of repos) {
    const meta = readPrefixMeta(prepared.get(pkg.name)!.prefix, key, `${pkg.name}-${pkg.version}`);
    if (meta) prefixTimes.push({ repo: packageId(pkg), tokens: meta.tokens, prefillMs: meta.prefillMs, prefilledAt: meta.at });
  }
  const session = benchSession(model, Math.max(...[...prepared.values()].map((r) => r.contextSize)));
  try {
    for (const { pkg, questions } of repos) {
      const todo = questions.filter((q) => !done.has(q.id));
      if (todo.length === 0 || fresh >= limit) continue;
      const rp = prepared.get(pkg.name)!;
      const ps = await prefixState(session, rp.prefix, key, `${pkg.name}-${pkg.version}`);
      const known = prefixTimes.find((p) => p.repo === packageId(pkg));
      const entry = { repo: packageId(pkg), tokens: ps.tokens, prefillMs: ps.prefillMs, loadMs: ps.prefilled ? undefined : ps.loadMs };
      if (known) Object.assign(known, entry);
      else prefixTimes.push(entry);
      const runs = bonuses.length > 0 ? await fileRuns(model, rp.layout.head.length, rp.pack.files) : [];
      log(`${packageId(pkg)}: prefix ${ps.tokens} tokens ${ps.prefilled ? `prefilled in ${(ps.prefillMs / 1000).toFixed(1)} s` : `loaded in ${ps.loadMs.toFixed(0)} ms`}`);
      for (const q of todo) {
        if (fresh >= limit) break;
        const inGrid = gridIds.has(q.id);
        const prompt = new Int32Array([...rp.prefix, ...questionTokens(model, rp.layout, q.question)]);
        let policies = inGrid ? [...main, ...grid] : main;
        if (bonuses.length > 0) {
          const prior = codePriorFlags(prompt.length, runs, questionIdentifiers(q.question), (t) => model.tokenBytes(t));
          const ids = new Set(bonuses.map((b) => codePriorPolicy(b).id));
          policies = [...policies.filter((p) => !ids.has(p.id)), ...bonuses.map((b) => codePriorPolicy(b, prior.flags))];
          log(`${q.id}: prior flags ${prior.definitionTokens} definition, ${prior.identifierTokens} identifier tokens${prior.unmappedRuns ? `, ${prior.unmappedRuns} runs unmapped` : ''}`);
        }
        if (prompt.length + answerTokens > rp.contextSize) throw new Error(`${q.id}: ${prompt.length} prompt tokens + ${answerTokens} do not fit ${rp.contextSize}`);
        const ctx = scoringContext(q, rp.files);
        const m = await measureQuestion(model, session, ps.snapshot, prompt, policies, { fractions, answerTokens, keepAll: fresh === 0, complete: (text) => answerComplete(text, ctx) });
        const fullCorrect = isCorrect(m.full.text, ctx);
        const rec: QuestionRecord = {
          ...q,
          L: m.L,
          prefixTokens: m.prefixTokens,
          suffixTokens: m.suffixTokens,
          prefilledTokens: m.prefilledTokens,
          restoreMs: m.restoreMs,
          prefillMs: m.prefillMs,
          snapshotMs: m.snapshotMs,
          scoresMs: m.scoresMs,
          ms: m.ms,
          full: { text: m.full.text, tokens: m.full.tokens, stop: m.full.stop, ms: m.full.ms, correct: fullCorrect },
          keepAll: m.keepAll ? branchRecord(m.keepAll, q, m.full.text, m.full.tokens, rp.files) : undefined,
          branches: Object.fromEntries(Object.entries(m.branches).map(([id, list]) => [id, list.map((b) => branchRecord(b, q, m.full.text, m.full.tokens, rp.files))])),
          grid: inGrid,
        };
        fs.appendFileSync(jsonl, JSON.stringify(rec) + '\n');
        records.push(rec);
        fresh++;
        const snap = rec.branches[DEFAULT_SNAP_ID] ?? [];
        log(
          `[${records.length}/${selected.length}] ${q.id} (${q.kind}) L=${m.L} ${(m.ms / 1000).toFixed(1)} s: expected ${JSON.stringify(q.answer)}, full ${JSON.stringify(m.full.text)} ${fullCorrect ? '✓' : '✗'}; SnapKV ${snap.map((b) => (b.correct ? '✓' : '✗')).join('')} agree ${snap.map((b) => (b.agree ? '=' : '≠')).join('')}`,
        );
      }
    }
  } finally {
    session.dispose();
  }
  const selectedIds = new Set(selected.map((q) => q.id));
  // scored again from the answers' texts with the current scorer (the JSONL's flags are a cache)
  const filesOf = new Map(repos.map(({ pkg }) => [packageId(pkg), prepared.get(pkg.name)!.files]));
  const inRun = records.filter((r) => selectedIds.has(r.id)).map((r) => rescore(r, filesOf.get(r.repo)!));
  if (!values['no-report']) {
    for (const f of await writeReport(inRun, { modelId: spec.id, answerable: spec.answerable, modelFile: path.basename(modelFile), config, main, grid, prefixTimes, packages, candidates, out, root, machine: machineInfo() })) log(`wrote ${path.relative(process.cwd(), f)}`);
  }
  model.dispose();
}

if (require.main === module) {
  void main().catch((e: unknown) => {
    console.error(e instanceof Error ? e.message : e);
    process.exitCode = 1;
  });
}
