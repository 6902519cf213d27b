/**
 * bench/repoqa/large: questions about repositories larger than the context (issue 15), answered
 * by a real model through the product's prompt with each packing: smallest-first (the files that
 * fit, smallest first), ranked+map (file tree, files in full by PageRank, repository map) and
 * ranked+map+retrieval (the same prefix, plus the question's BM25 chunks after it, 15 % of the
 * context). Same questions for every packing; full attention, greedy.
 *
 *   node --import tsx bench/repoqa/large/run.ts [options]
 *
 *   --packages LIST       package names (default: every package of large/packages.ts but express)
 *   --outside N           questions per package about files smallest-first leaves out (default 10)
 *   --inside N            questions per package about files smallest-first packs in full (default 6)
 *   --context-size N      the context [tokens] (default 4096)
 *   --answer-tokens N     longest answer (default 24; an answer also ends once its candidate is settled)
 *   --jsonl FILE          one line per question and packing, appended as they finish; a rerun skips
 *                         what is there (default bench/.repoqa/runs/large-coder.jsonl)
 *   --out FILE            the report (default bench/results/repoqa-large-coder.json)
 *   --limit N             stop after N new questions (each with every packing)
 *   --report-only         write the report from the JSONL, answer nothing
 *   --sequential          every question of a package before the next package (default: round-robin)
 *   --packings LIST       the packings to answer with (default the issue's three; `ranked+small+map+retrieval`
 *                         is the fourth, reported in `extra` on the questions it answered). Every packing
 *                         is packed (the report's tokens per section) whichever are answered.
 *   --ceiling-context N   the ceiling instead of the packings: the same questions (the selection of
 *                         --outside/--inside at --context-size) answered with full attention over a
 *                         context of N tokens holding the whole repository packed in full (refused
 *                         when a file does not fit), its prefix prefilled once per repository; the
 *                         report's `ceiling` field is set (--out must exist), every other field kept
 *                         (JSONL default bench/.repoqa/runs/large-coder-ceiling.jsonl)
 *   --held-out-seed S     held-out questions instead of the run's: --outside/--inside new questions
 *                         per package, drawn with seed S from the candidates minus every question of
 *                         the report's `records` (the ones the packings' rules were tuned on),
 *                         answered with --packings (default smallest-first,ranked+map+retrieval);
 *                         the report's `heldOut` field is set, every other field kept (JSONL default
 *                         bench/.repoqa/runs/large-coder-held-out.jsonl)
 *   --questions-from FILE the questions of an earlier report instead of drawing them (its
 *                         `heldOut.records` with --held-out-seed, else its `records`), with the
 *                         subsets it gave them: the same questions after a change to the packer
 *                         that moves the draw (a file left out changes the candidates); a question
 *                         no longer generated, or now in the other subset, is logged and asked as there
 *
 * Questions go round-robin over the packages (question i of each package, then i + 1), and within
 * a package alternate outside/inside, so a cut run stays balanced; `--sequential` (for a slow
 * machine) prefills a package's prefixes only when its questions start, so a cut run has whole
 * packages instead of every package's prefixes and few questions. Each packing's prefix is
 * prefilled once per package and its state kept under bench/.repoqa/state/coder-large (a resumed
 * run loads it). Questions are generated from every source file the include patterns keep
 * (questions.ts), with the kinds the coder model answers (run.ts, `MODELS.coder`).
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadAverages } from '../../machine';
import { packRepository } from '../../../src/context/pack';
import { loadModel } from '../../../src/engine/model';
import type { SessionSnapshot } from '../../../src/engine/session';
import { concatTokens } from '../../../src/prompt/prompt';
import { checkRealModel } from '../../../test/helpers/models';
import { measureQuestion } from '../branches';
import { packageId, setupPackage, type RepoPackage } from '../packages';
import { generateQuestions, type Question, type QuestionKind } from '../questions';
import { benchSession, prefixState, readPrefixMeta } from '../repository';
import { readJsonlRecords, startJsonl } from '../jsonl';
import { MODELS, selectQuestions } from '../run';
import { answerComplete, isCorrect, scoringContext } from '../scoring';
import { findLargePackage, LARGE_PACKAGES } from './packages';
import { ALL_PACKINGS, EXTRA_PACKINGS, LARGE_PACKINGS, packedPrompt, SMALL_FILES_SHARE, questionPart, questionSkipReason, questionTokenCount, type LargePacking, type PackedPrompt } from './prompt';
import {
  CEILING_PACKING,
  ceilingRows,
  checkTarget,
  isSkipped,
  mergeReportFields,
  subsetOf,
  summarize,
  SUBSETS,
  writeLargeReport,
  type CeilingRecord,
  type LargeRecord,
  type RepoInfo,
  type RunRecord,
  type SkippedRecord,
  type Subset,
} from './report';

/** The settings that make JSONL records comparable (a rerun with others is refused). */
export interface LargeRunConfig {
  model: string;
  /** The session's context [tokens] (the ceiling's: --ceiling-context). */
  contextSize: number;
  answerTokens: number;
  /** Ceiling runs: the packed run's context size, whose question selection the ceiling answers [tokens]. */
  ceilingOf?: number;
  /** Held-out runs: the selection's seed. */
  heldOutSeed?: number;
}

/** Reads the records (answered and skipped) of a JSONL written with `config`; [] when absent. @throws on a config mismatch. */
export function readLargeRecords(file: string, config: LargeRunConfig): RunRecord[] {
  return readJsonlRecords<RunRecord>(file, config);
}

/** a₁ b₁ a₂ b₂ …, then what is left of the longer list. */
export function interleave<T>(a: readonly T[], b: readonly T[]): T[] {
  const out: T[] = [];
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (i < a.length) out.push(a[i]!);
    if (i < b.length) out.push(b[i]!);
  }
  return out;
}

const log = (s: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${s}\n`);

/** What one package brings to the run. */
interface Prepared {
  pkg: RepoPackage;
  /** The package's extracted folder. */
  dir: string;
  info: RepoInfo;
  files: string[];
  prompts: Record<LargePacking, PackedPrompt>;
  questions: (Question & { subset: Subset })[];
  states: Partial<Record<LargePacking, SessionSnapshot>>;
}

/** The packings a held-out run answers with unless --packings says otherwise. */
export const HELD_OUT_PACKINGS: readonly LargePacking[] = ['smallest-first', 'ranked+map+retrieval'];

/**
 * Held-out questions: `n` of `candidates` (one package's, one subset's) that are not in `tuned`,
 * drawn by `selectQuestions` with `seed` (the run's selection is seed 13 over every candidate).
 * @param tuned ids of the questions the rules were tuned on (never drawn)
 */
export function selectHeldOut(candidates: readonly Question[], tuned: ReadonlySet<string>, kinds: readonly QuestionKind[], n: number, seed: number): Question[] {
  return selectQuestions(
    candidates.filter((q) => !tuned.has(q.id)),
    kinds,
    n,
    seed,
  );
}

/**
 * The questions of an earlier report, to answer the same ones again (`--questions-from`): the
 * questions of its `heldOut.records` (held-out runs) or of its `records` (packing runs) of one
 * repository, each once, in the report's order, split by the subset the report gave it. A
 * question skipped in every packing of that report has no record and is not among them.
 * @param report the parsed report (bench/results/repoqa-large-*.json)
 * @param held true for its held-out questions, false for the run's
 * @param repo repository id (`name@version`)
 * @throws Error when the report has no such records
 */
export function reportQuestions(report: { records?: readonly LargeRecord[]; heldOut?: { records?: readonly LargeRecord[] } }, held: boolean, repo: string): Record<Subset, Question[]> {
  const records = held ? report.heldOut?.records : report.records;
  if (!records) throw new Error(`the report has no ${held ? 'heldOut.records' : 'records'} to take the questions from: pass a report of a finished run`);
  const out: Record<Subset, Question[]> = { outside: [], inside: [] };
  const seen = new Set<string>();
  for (const r of records) {
    if (r.repo !== repo || seen.has(r.id)) continue;
    seen.add(r.id);
    const q: Question = { id: r.id, repo: r.repo, kind: r.kind, subject: r.subject, question: r.question, answer: r.answer, file: r.file, line: r.line, ...(r.detail !== undefined ? { detail: r.detail } : {}) };
    out[r.subset].push(q);
  }
  return out;
}


const mean = (xs: readonly number[]) => (xs.length === 0 ? null : xs.reduce((a, b) => a + b, 0) / xs.length);

/** One repository of the ceiling run: its whole-repository prefix and what its prefill cost. */
export interface CeilingRepo {
  repo: string;
  /** Source files, and those packed in full (all of them). */
  files: number;
  fullFiles: number;
  /** Tokens of the prefix ([head │ files in full]) and of its parts. */
  prefixTokens: number;
  sections: PackedPrompt['sections'];
  /** The prefix's one prefill [ms] (possibly by an earlier run, when its state was made), its speed [tokens/s], when. */
  prefillMs: number;
  prefillTokensPerSecond: number;
  prefilledAt?: string;
  /** Loading the prefix's state file instead [ms], when this run did. */
  loadMs?: number;
  /** Load averages (1, 5, 15 min) when this run's prefill (or load) of the prefix began and ended. */
  loadAtStart: number[];
  loadAtEnd: number[];
}

/**
 * The ceiling (issue 15): each package's selected questions answered with full attention over a
 * context of `contextSize` tokens holding the whole repository packed in full by the product's
 * packer (smallest-first with a budget every file fits: no tree, map or retrieval). The prefix is
 * question-independent: prefilled once per package (progress logged), its state kept and restored
 * for each question like the packings'. Appends records to `jsonl`; sets the report's `ceiling`.
 * @throws Error when a file does not fit in full, or when the selection differs from the
 *   packed run's questions of that package (the report's `records`)
 */
async function runCeiling(a: {
  model: Awaited<ReturnType<typeof loadModel>>;
  spec: { id: string };
  modelFile: string;
  prepared: Prepared[];
  records: CeilingRecord[];
  done: Set<string>;
  jsonl: string;
  out: string;
  limit: number;
  answerTokens: number;
  contextSize: number;
  packed: LargeRecord[];
  command: string;
}): Promise<void> {
  const { model, prepared, answerTokens, contextSize } = a;
  const repos: CeilingRepo[] = [];
  let fresh = 0;
  for (const r of prepared) {
    const asked = new Set(a.packed.filter((x) => x.repo === r.info.repo).map((x) => x.id));
    const selected = new Set(r.questions.map((q) => q.id));
    if (asked.size > 0 && (asked.size !== selected.size || [...asked].some((id) => !selected.has(id)))) {
      throw new Error(`${r.info.repo}: the selection (${selected.size} questions) is not the packed run's (${asked.size}): pass the run's --outside/--inside/--context-size`);
    }
    const cp = await packedPrompt(model, r.dir, r.pkg.include, 'smallest-first', contextSize, answerTokens);
    if (cp.full.length !== r.files.length) {
      throw new Error(`${r.info.repo}: ${r.files.length - cp.full.length} of ${r.files.length} files do not fit a ${contextSize}-token context in full (${r.info.sourceTokens} source tokens): raise --ceiling-context`);
    }
    const todo = r.questions.filter((q) => !a.done.has(`${q.id}|${CEILING_PACKING}`));
    const session = benchSession(model, contextSize);
    try {
      const loadAtStart = loadAverages();
      log(`${r.info.repo} ceiling: prefix ${cp.prefix.length} tokens (${cp.full.length} files in full) in a ${contextSize}-token context, load ${loadAtStart.join(' ')}`);
      let next = 0;
      const ps = await prefixState(session, cp.prefix, 'coder-ceiling', `${r.pkg.name}-${r.pkg.version}-whole`, undefined, (p) => {
        if (p.done < next && p.done < p.total) return;
        next = p.done + 2048;
        const eta = (p.total - p.done) / p.tokensPerSecond;
        log(`${r.info.repo} ceiling prefill ${p.done}/${p.total} tokens, ${p.tokensPerSecond.toFixed(2)} tokens/s so far, ~${(eta / 60).toFixed(0)} min left at that rate, load ${loadAverages().join(' ')}`);
      });
      const meta = readPrefixMeta(cp.prefix, 'coder-ceiling', `${r.pkg.name}-${r.pkg.version}-whole`);
      const info: CeilingRepo = {
        repo: r.info.repo,
        files: r.files.length,
        fullFiles: cp.full.length,
        prefixTokens: cp.prefix.length,
        sections: cp.sections,
        prefillMs: ps.prefillMs,
        prefillTokensPerSecond: cp.prefix.length / (ps.prefillMs / 1000),
        prefilledAt: meta?.at,
        ...(ps.prefilled ? {} : { loadMs: ps.loadMs }),
        loadAtStart,
        loadAtEnd: loadAverages(),
      };
      repos.push(info);
      log(`${r.info.repo} ceiling: prefix ${ps.prefilled ? `prefilled in ${(ps.prefillMs / 1000).toFixed(1)} s (${info.prefillTokensPerSecond.toFixed(2)} tokens/s)` : `loaded in ${ps.loadMs.toFixed(0)} ms`}`);
      for (const q of todo) {
        if (fresh >= a.limit) break;
        const qTokens = questionTokenCount(model, cp, q.question);
        const skip = questionSkipReason(qTokens, cp.questionRoom);
        if (skip !== null) throw new Error(`${q.id}: ${skip}`);
        const part = await questionPart(model, cp, q.question);
        const prompt = concatTokens([cp.prefix, part.tokens]);
        if (prompt.length + answerTokens > contextSize) throw new Error(`${q.id} ceiling: ${prompt.length} prompt tokens + ${answerTokens} do not fit ${contextSize}`);
        const ctx = scoringContext(q, r.files);
        const m = await measureQuestion(model, session, ps.snapshot, prompt, [], { fractions: [], answerTokens, complete: (text) => answerComplete(text, ctx) });
        const rec: CeilingRecord = {
          ...q,
          packing: CEILING_PACKING,
          text: m.full.text,
          stop: m.full.stop,
          correct: isCorrect(m.full.text, ctx),
          L: m.L,
          prefixTokens: cp.prefix.length,
          questionTokens: part.questionTokens,
          restoreMs: m.restoreMs,
          prefillMs: m.prefillMs,
          answerMs: m.full.ms,
          load: loadAverages(),
        };
        fs.appendFileSync(a.jsonl, JSON.stringify(rec) + '\n');
        a.records.push(rec);
        a.done.add(`${q.id}|${CEILING_PACKING}`);
        fresh++;
        log(`[${fresh}] ${q.id} (${q.kind}, ${q.subset}) expected ${JSON.stringify(q.answer)}: ceiling ${rec.correct ? '✓' : '✗'} ${JSON.stringify(rec.text.slice(0, 60))} (question ${(rec.prefillMs / 1000).toFixed(1)} s, answer ${(rec.answerMs / 1000).toFixed(1)} s)`);
      }
    } finally {
      session.dispose();
    }
  }
  // scored again from the texts with the current scorer, like the packed run's report
  const filesOf = new Map(prepared.map((r) => [r.info.repo, r.files]));
  const selected = new Set(prepared.flatMap((r) => r.questions.map((q) => q.id)));
  const ceiling = a.records.filter((r) => selected.has(r.id)).map((r) => ({ ...r, correct: isCorrect(r.text, scoringContext(r, filesOf.get(r.repo)!)) }));
  const packed = a.packed.filter((r) => filesOf.has(r.repo)).map((r) => ({ ...r, correct: isCorrect(r.text, scoringContext(r, filesOf.get(r.repo)!)) }));
  const prefillOf = new Map(repos.map((x) => [x.repo, x.prefillMs]));
  const file = mergeReportFields(a.out, {
    ceiling: {
      what:
        'full attention (no SnapKV) over a context holding the whole repository packed in full (the product\'s packer, smallest-first with a budget every file fits: every file in full, no tree, map or retrieval), greedy, ' +
        'on the packed run\'s questions of each repository (same ids, same scorer); its prefix prefilled once and restored for each question. ' +
        '`rows`: the ceiling beside each packing\'s records of the same questions (from `records`)',
      command: a.command,
      model: a.spec.id,
      modelFile: path.basename(a.modelFile),
      contextSize,
      trainContext: model.info.nCtxTrain,
      answerTokens,
      repos,
      notRun: `the other repositories do not fit the model's ${model.info.nCtxTrain}-token training context`,
      rows: ceilingRows(ceiling, packed),
      ttft: {
        n: ceiling.length,
        warmMs: mean(ceiling.map((r) => r.restoreMs + r.prefillMs)),
        coldMs: mean(ceiling.map((r) => (prefillOf.get(r.repo) ?? NaN) + r.prefillMs)),
        answerMs: mean(ceiling.map((r) => r.answerMs)),
      },
      records: ceiling,
    },
  });
  log(`wrote ceiling into ${path.relative(process.cwd(), file)}`);
}

/**
 * The report's `heldOut` field: the held-out questions' rows `{packing, subset, n, accuracy}` (over
 * the questions answered with every packing of the run), the gap ranked+map+retrieval −
 * smallest-first per subset beside the tuned questions' gap (the report's `records`, same
 * packings), the selection rule, the question ids, each prefix's prefill, and every record.
 */
function heldOutReport(a: {
  seed: number;
  nOutside: number;
  nInside: number;
  packings: readonly LargePacking[];
  prepared: Prepared[];
  records: LargeRecord[];
  skipped: SkippedRecord[];
  tuned: LargeRecord[];
  command: string;
}) {
  const rows = summarize(a.records, a.packings);
  const tunedRows = summarize(a.tuned, a.packings);
  const gap = (rs: typeof rows) => checkTarget(rs).map((t) => ({ subset: t.subset, gain: t.gain }));
  const heldGap = gap(rows);
  const tunedGap = gap(tunedRows);
  return {
    what:
      'questions the retrieval rules were not tuned on (session 8 tuned ranked+map+retrieval on the report\'s `records`): ' +
      `per package ${a.nOutside} outside + ${a.nInside} inside drawn by selectQuestions (bench/repoqa/run.ts: per kind shuffled by mulberry32, kinds in turn) with seed ${a.seed} ` +
      '(the run\'s: 13) from the generated candidates minus every question id of `records`; same context, answer length, prompts and scorer as the run',
    seed: a.seed,
    selection: `selectQuestions(candidates of the subset without the ids of records, kinds, n, ${a.seed}); n = ${a.nOutside} outside, ${a.nInside} inside (fewer where fewer candidates are left)`,
    command: a.command,
    packings: a.packings,
    questionIds: Object.fromEntries(a.prepared.map((r) => [r.info.repo, Object.fromEntries(SUBSETS.map((s) => [s, r.questions.filter((q) => q.subset === s).map((q) => q.id)]))])),
    // candidates per subset (the model's kinds) before the tuned ids are taken out, and how many of them were tuned
    candidates: Object.fromEntries(
      a.prepared.map((r) => [
        r.info.repo,
        Object.fromEntries(SUBSETS.map((s) => [s, { generated: r.info.generated[s], tuned: new Set(a.tuned.filter((x) => x.repo === r.info.repo && x.subset === s).map((x) => x.id)).size }])),
      ]),
    ),
    rows,
    gap: SUBSETS.map((subset) => ({
      subset,
      heldOut: heldGap.find((g) => g.subset === subset)?.gain ?? null,
      tuned: tunedGap.find((g) => g.subset === subset)?.gain ?? null,
    })),
    tunedRows,
    byRepo: a.prepared.map((r) => ({ repo: r.info.repo, rows: summarize(a.records.filter((x) => x.repo === r.info.repo), a.packings) })),
    prefixes: a.prepared.map((r) => ({ repo: r.info.repo, packings: Object.fromEntries(a.packings.map((p) => [p, { prefixTokens: r.info.packings[p]?.prefixTokens, prefillMs: r.info.packings[p]?.prefillMs, prefilledAt: r.info.packings[p]?.prefilledAt }])) })),
    skipped: a.skipped.map((r) => ({ id: r.id, packing: r.packing, reason: r.skipped })),
    records: a.records,
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      packages: { type: 'string' },
      outside: { type: 'string' },
      inside: { type: 'string' },
      'context-size': { type: 'string' },
      'answer-tokens': { type: 'string' },
      jsonl: { type: 'string' },
      out: { type: 'string' },
      limit: { type: 'string' },
      'report-only': { type: 'boolean' },
      sequential: { type: 'boolean' },
      packings: { type: 'string' },
      'ceiling-context': { type: 'string' },
      'held-out-seed': { type: 'string' },
      'questions-from': { type: 'string' },
    },
  });
  const key = 'coder';
  const spec = MODELS[key]!;
  const kinds: readonly QuestionKind[] = spec.kinds;
  const root = path.resolve(__dirname, '..', '..', '..');
  const contextSize = Number(values['context-size'] ?? 4096);
  const answerTokens = Number(values['answer-tokens'] ?? 24);
  const nOutside = Number(values.outside ?? 10);
  const nInside = Number(values.inside ?? 6);
  const limit = values['report-only'] ? 0 : values.limit ? Number(values.limit) : Infinity;
  const packages = (values.packages ? values.packages.split(',') : LARGE_PACKAGES.filter((p) => p.name !== 'express').map((p) => p.name)).map(findLargePackage);
  const ceilingContext = values['ceiling-context'] !== undefined ? Number(values['ceiling-context']) : undefined;
  const heldOutSeed = values['held-out-seed'] !== undefined ? Number(values['held-out-seed']) : undefined;
  if (ceilingContext !== undefined && heldOutSeed !== undefined) throw new Error('--ceiling-context and --held-out-seed are separate runs');
  const mode = ceilingContext !== undefined ? 'ceiling' : heldOutSeed !== undefined ? 'held-out' : 'packings';
  const jsonlName = mode === 'ceiling' ? `large-${key}-ceiling.jsonl` : mode === 'held-out' ? `large-${key}-held-out.jsonl` : `large-${key}.jsonl`;
  const jsonl = path.resolve(values.jsonl ?? path.join(root, 'bench', '.repoqa', 'runs', jsonlName));
  const out = path.resolve(values.out ?? path.join(root, 'bench', 'results', `repoqa-large-${key}.json`));
  const config: LargeRunConfig =
    mode === 'ceiling'
      ? { model: spec.id, contextSize: ceilingContext!, answerTokens, ceilingOf: contextSize }
      : mode === 'held-out'
        ? { model: spec.id, contextSize, answerTokens, heldOutSeed: heldOutSeed! }
        : { model: spec.id, contextSize, answerTokens };
  // the report the ceiling and the held-out run add to (the packed run's questions and records)
  const existing = fs.existsSync(out) ? (JSON.parse(fs.readFileSync(out, 'utf8')) as { records?: LargeRecord[]; ceiling?: unknown; heldOut?: unknown }) : undefined;
  const questionsFrom = values['questions-from'] !== undefined ? (JSON.parse(fs.readFileSync(values['questions-from'], 'utf8')) as Parameters<typeof reportQuestions>[0]) : undefined;
  if (questionsFrom && mode === 'ceiling') throw new Error('--questions-from is for packing and held-out runs (the ceiling answers the selection of --outside/--inside)');
  if (mode !== 'packings' && !existing?.records) throw new Error(`${out}: no report with records to add the ${mode} to (run the packings first)`);
  const tuned = new Set((existing?.records ?? []).map((r) => r.id));
  const defaultPackings = mode === 'held-out' ? HELD_OUT_PACKINGS : LARGE_PACKINGS;
  const answerWith = (values.packings ? values.packings.split(',') : defaultPackings).map((p) => {
    const known = ALL_PACKINGS.find((q) => q === p);
    if (!known) throw new Error(`unknown packing ${p}: one of ${ALL_PACKINGS.join(', ')}`);
    return known;
  });

  const modelFile = checkRealModel(spec.id);
  const model = await loadModel(modelFile);
  const records = readLargeRecords(jsonl, config);
  const done = new Set(records.map((r) => `${r.id}|${r.packing}`));
  fs.mkdirSync(path.dirname(jsonl), { recursive: true });
  startJsonl(jsonl, config);
  log(`${spec.id}: ${records.length} records already in ${path.relative(root, jsonl)}`);

  const stateKey = `${key}-large`;
  const repoKey = (pkg: RepoPackage, p: LargePacking) => `${pkg.name}-${pkg.version}-${p.replace(/\+/g, '_')}`;
  const prepared: Prepared[] = [];
  for (const pkg of packages) {
    const dir = setupPackage(pkg);
    const id = packageId(pkg);
    const all = await packRepository(dir, { include: pkg.include, order: 'path', tokenBudget: Infinity, countTokens: (t) => model.tokenize(t).length });
    const files = all.files.map((f) => f.path);
    const prompts = {} as Record<LargePacking, PackedPrompt>;
    for (const p of ALL_PACKINGS) prompts[p] = await packedPrompt(model, dir, pkg.include, p, contextSize, answerTokens);
    const inSf = new Set(prompts['smallest-first'].full);
    const generated = (await generateQuestions(dir, files, id)).filter((q) => kinds.includes(q.kind));
    const outside = generated.filter((q) => subsetOf(q, inSf) === 'outside');
    const inside = generated.filter((q) => subsetOf(q, inSf) === 'inside');
    const pick = (list: readonly Question[], n: number) => (mode === 'held-out' ? selectHeldOut(list, tuned, kinds, n, heldOutSeed!) : selectQuestions(list, kinds, n));
    const earlier = questionsFrom ? reportQuestions(questionsFrom, mode === 'held-out', id) : undefined;
    if (earlier) {
      const now = new Map(generated.map((q) => [q.id, subsetOf(q, inSf)]));
      for (const q of [...earlier.outside.map((x) => ({ ...x, subset: 'outside' })), ...earlier.inside.map((x) => ({ ...x, subset: 'inside' }))]) {
        const s = now.get(q.id);
        if (s !== q.subset) log(`${q.id}: ${s === undefined ? 'not generated now' : `now ${s}`}, ${q.subset} in ${values['questions-from']}: asked as there`);
      }
    }
    const selOut = (earlier ? earlier.outside : pick(outside, nOutside)).map((q): Question & { subset: Subset } => ({ ...q, subset: 'outside' }));
    const selIn = (earlier ? earlier.inside : pick(inside, nInside)).map((q): Question & { subset: Subset } => ({ ...q, subset: 'inside' }));
    const info: RepoInfo = {
      repo: id,
      files: files.length,
      sourceTokens: all.totalTokens,
      timesContext: all.totalTokens / contextSize,
      smallestFirstFiles: prompts['smallest-first'].full,
      generated: { outside: outside.length, inside: inside.length },
      selected: { outside: selOut.length, inside: selIn.length },
      packings: {},
    };
    for (const p of ALL_PACKINGS) {
      const pp = prompts[p];
      const meta = readPrefixMeta(pp.prefix, stateKey, repoKey(pkg, p));
      info.packings[p] = {
        sections: pp.sections,
        prefixTokens: pp.prefix.length,
        fullFiles: pp.full.length,
        mappedFiles: pp.mapped.length,
        retrievalRoom: pp.retrievalRoom,
        prefillMs: meta?.prefillMs ?? NaN,
        prefilledAt: meta?.at,
      };
    }
    prepared.push({ pkg, dir, info, files, prompts, questions: interleave(selOut, selIn), states: {} });
    log(
      `${id}: ${files.length} files, ${all.totalTokens} tokens (${info.timesContext.toFixed(1)}× ${contextSize}); ` +
        ALL_PACKINGS.map((p) => `${p} ${prompts[p].prefix.length} (tree ${prompts[p].sections.tree}, files ${prompts[p].sections.files} in ${prompts[p].full.length}, map ${prompts[p].sections.map} of ${prompts[p].mapped.length})`).join('; ') +
        `; questions outside ${outside.length} → ${selOut.length}, inside ${inside.length} → ${selIn.length}`,
    );
  }

  if (mode === 'ceiling') {
    const command = `node --import tsx bench/repoqa/large/run.ts --packages ${packages.map((p) => p.name).join(',')} --outside ${nOutside} --inside ${nInside} --context-size ${contextSize} --ceiling-context ${ceilingContext}`;
    await runCeiling({ model, spec, modelFile, prepared, records: records as unknown as CeilingRecord[], done, jsonl, out, limit, answerTokens, contextSize: ceilingContext!, packed: existing!.records!, command });
    model.dispose();
    return;
  }
  const session = benchSession(model, contextSize);
  let fresh = 0;
  try {
    const rounds = Math.max(0, ...prepared.map((r) => r.questions.length));
    const order = values.sequential ? prepared.flatMap((r) => r.questions.map((q) => ({ r, q }))) : Array.from({ length: rounds }, (_, i) => prepared.flatMap((r) => (r.questions[i] ? [{ r, q: r.questions[i]! }] : []))).flat();
    {
      for (const { r, q } of order) {
        if (fresh >= limit) break;
        const todo = answerWith.filter((p) => !done.has(`${q.id}|${p}`));
        if (todo.length === 0) continue;
        const marks: string[] = [];
        for (const p of todo) {
          const pp = r.prompts[p];
          const qTokens = questionTokenCount(model, pp, q.question);
          const skip = questionSkipReason(qTokens, pp.questionRoom);
          if (skip !== null) {
            const rec: SkippedRecord = { ...q, packing: p, skipped: skip, questionTokens: qTokens, questionRoom: pp.questionRoom };
            fs.appendFileSync(jsonl, JSON.stringify(rec) + '\n');
            records.push(rec);
            done.add(`${q.id}|${p}`);
            marks.push(`${p} skipped (${skip})`);
            continue;
          }
          if (!r.states[p]) {
            const ps = await prefixState(session, pp.prefix, stateKey, repoKey(r.pkg, p));
            r.states[p] = ps.snapshot;
            Object.assign(r.info.packings[p]!, { prefillMs: ps.prefillMs, loadMs: ps.prefilled ? undefined : ps.loadMs });
            if (ps.prefilled) r.info.packings[p]!.prefilledAt = new Date().toISOString();
            log(`${r.info.repo} ${p}: prefix ${ps.tokens} tokens ${ps.prefilled ? `prefilled in ${(ps.prefillMs / 1000).toFixed(1)} s` : `loaded in ${ps.loadMs.toFixed(0)} ms`}`);
          }
          const part = await questionPart(model, pp, q.question);
          const prompt = concatTokens([pp.prefix, part.tokens]);
          if (prompt.length + answerTokens > contextSize) throw new Error(`${q.id} ${p}: ${prompt.length} prompt tokens + ${answerTokens} do not fit ${contextSize}`);
          const ctx = scoringContext(q, r.files);
          const m = await measureQuestion(model, session, r.states[p]!, prompt, [], { fractions: [], answerTokens, complete: (text) => answerComplete(text, ctx) });
          const retrievedFiles = part.retrieved.map((c) => c.slice(0, c.lastIndexOf('#')));
          const rec: LargeRecord = {
            ...q,
            packing: p,
            inFull: pp.full.includes(q.file),
            inMap: pp.mapped.includes(q.file),
            fileRetrieved: retrievedFiles.includes(q.file),
            subjectRetrieved: part.retrieved.includes(`${q.file}#${q.subject}`),
            retrieved: part.retrieved,
            text: m.full.text,
            stop: m.full.stop,
            correct: isCorrect(m.full.text, ctx),
            L: m.L,
            prefixTokens: pp.prefix.length,
            retrievalTokens: part.retrievalTokens,
            questionTokens: part.questionTokens,
            restoreMs: m.restoreMs,
            prefillMs: m.prefillMs,
            answerMs: m.full.ms,
          };
          fs.appendFileSync(jsonl, JSON.stringify(rec) + '\n');
          records.push(rec);
          done.add(`${q.id}|${p}`);
          marks.push(`${p} ${rec.correct ? '✓' : '✗'} ${JSON.stringify(rec.text.slice(0, 60))}`);
        }
        fresh++;
        log(`[${fresh}] ${q.id} (${q.kind}, ${q.subset}) expected ${JSON.stringify(q.answer)}: ${marks.join(' | ')}`);
      }
    }
  } finally {
    session.dispose();
  }
  // scored again from the answers' texts with the current scorer (the JSONL's flags are a cache)
  const filesOf = new Map(prepared.map((r) => [r.info.repo, r.files]));
  const selected = new Set(prepared.flatMap((r) => r.questions.map((q) => q.id)));
  const answered = records.filter((r): r is LargeRecord => !isSkipped(r));
  const inRun = answered.filter((r) => selected.has(r.id)).map((r) => ({ ...r, correct: isCorrect(r.text, scoringContext(r, filesOf.get(r.repo)!)) }));
  if (mode === 'held-out') {
    const tunedRecords = existing!.records!.map((r) => ({ ...r, correct: filesOf.has(r.repo) ? isCorrect(r.text, scoringContext(r, filesOf.get(r.repo)!)) : r.correct }));
    const heldOut = heldOutReport({
      seed: heldOutSeed!,
      nOutside,
      nInside,
      packings: answerWith,
      prepared,
      records: inRun,
      skipped: records.filter(isSkipped).filter((r) => selected.has(r.id)),
      tuned: tunedRecords,
      command: `node --import tsx bench/repoqa/large/run.ts --packages ${packages.map((p) => p.name).join(',')} --outside ${nOutside} --inside ${nInside} --context-size ${contextSize} --held-out-seed ${heldOutSeed}${values.packings ? ` --packings ${answerWith.join(',')}` : ''}${values.sequential ? ' --sequential' : ''}${values['questions-from'] ? ` --questions-from ${values['questions-from']}` : ''}`,
    });
    log(`wrote heldOut into ${path.relative(process.cwd(), mergeReportFields(out, { heldOut }))}`);
    model.dispose();
    return;
  }
  const file = writeLargeReport(
    inRun,
    {
      skipped: records.filter(isSkipped).filter((r) => selected.has(r.id)),
      extraNotes: {
        'ranked+small+map+retrieval': {
          what: `ranked+map+retrieval with rankedShares.smallest ${SMALL_FILES_SHARE}: files in full by rank within ${(0.6 - SMALL_FILES_SHARE).toFixed(1)} of the files' budget (with the tree), then the smallest files up to 0.6 (src/context/ranked.ts); measured apart from the issue's three packings, on the questions it answered (rows: those questions only, all four packings)`,
          command: `node --import tsx bench/repoqa/large/run.ts --packages ${packages.map((p) => p.name).join(',')} --outside ${nOutside} --inside ${nInside} --context-size ${contextSize} --packings ${EXTRA_PACKINGS.join(',')}`,
        },
      },
      modelId: spec.id,
      modelFile: path.basename(modelFile),
      contextSize,
      answerTokens,
      kinds,
      repos: prepared.map((r) => r.info),
      notes: {
        order: values.sequential ? 'sequential' : 'round-robin',
        ...(existing?.heldOut !== undefined ? { heldOut: existing.heldOut } : {}),
        ceiling:
          typeof existing?.ceiling === 'object' && existing.ceiling !== null ? existing.ceiling : 'not run: full attention over a context holding a whole repository (pino 16.8K, fastify 61.7K, axios 67.9K tokens; only pino fits the model\'s 32K training context). ' +
          'Cost of pino\'s one prefill of ~16.8K tokens: 58-85 min at the 3.3-4.8 tokens/s of the 1.4-1.8K-token prefixes on the shared cores (fastify\'s three: 1,388 tokens in 290 s, 1,765 in 461 s, 1,456 in 411 s), ' +
          '~9 min at the 30.6 tokens/s of axios\'s on a quiet machine (1,707 tokens in 55.8 s), more in both cases since attention grows with the context; then a 24-token answer per question over 16.8K cells',
        command: `node --import tsx bench/repoqa/large/run.ts --packages ${packages.map((p) => p.name).join(',')} --outside ${nOutside} --inside ${nInside} --context-size ${contextSize}${values['questions-from'] ? ` --questions-from ${values['questions-from']}` : ''}`,
      },
    },
    out,
  );
  log(`wrote ${path.relative(process.cwd(), file)}`);
  model.dispose();
}

if (require.main === module) {
  void main().catch((e: unknown) => {
    console.error(e instanceof Error ? (e.stack ?? e.message) : e);
    process.exitCode = 1;
  });
}
