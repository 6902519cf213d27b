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
import { isSkipped, subsetOf, writeLargeReport, type LargeRecord, type RepoInfo, type RunRecord, type SkippedRecord, type Subset } from './report';

/** The settings that make JSONL records comparable (a rerun with others is refused). */
export interface LargeRunConfig {
  model: string;
  contextSize: number;
  answerTokens: number;
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
  info: RepoInfo;
  files: string[];
  prompts: Record<LargePacking, PackedPrompt>;
  questions: (Question & { subset: Subset })[];
  states: Partial<Record<LargePacking, SessionSnapshot>>;
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
  const jsonl = path.resolve(values.jsonl ?? path.join(root, 'bench', '.repoqa', 'runs', `large-${key}.jsonl`));
  const out = path.resolve(values.out ?? path.join(root, 'bench', 'results', `repoqa-large-${key}.json`));
  const config: LargeRunConfig = { model: spec.id, contextSize, answerTokens };
  const answerWith = (values.packings ? values.packings.split(',') : LARGE_PACKINGS).map((p) => {
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
    const selOut = selectQuestions(outside, kinds, nOutside).map((q): Question & { subset: Subset } => ({ ...q, subset: 'outside' }));
    const selIn = selectQuestions(inside, kinds, nInside).map((q): Question & { subset: Subset } => ({ ...q, subset: 'inside' }));
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
    prepared.push({ pkg, info, files, prompts, questions: interleave(selOut, selIn), states: {} });
    log(
      `${id}: ${files.length} files, ${all.totalTokens} tokens (${info.timesContext.toFixed(1)}× ${contextSize}); ` +
        ALL_PACKINGS.map((p) => `${p} ${prompts[p].prefix.length} (tree ${prompts[p].sections.tree}, files ${prompts[p].sections.files} in ${prompts[p].full.length}, map ${prompts[p].sections.map} of ${prompts[p].mapped.length})`).join('; ') +
        `; questions outside ${outside.length} → ${selOut.length}, inside ${inside.length} → ${selIn.length}`,
    );
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
        ceiling:
          'not run: full attention over a context holding a whole repository (pino 16.8K, fastify 61.7K, axios 67.9K tokens; only pino fits the model\'s 32K training context). ' +
          'Cost of pino\'s one prefill of ~16.8K tokens: 58-85 min at the 3.3-4.8 tokens/s of the 1.4-1.8K-token prefixes on the shared cores (fastify\'s three: 1,388 tokens in 290 s, 1,765 in 461 s, 1,456 in 411 s), ' +
          '~9 min at the 30.6 tokens/s of axios\'s on a quiet machine (1,707 tokens in 55.8 s), more in both cases since attention grows with the context; then a 24-token answer per question over 16.8K cells',
        command: `node --import tsx bench/repoqa/large/run.ts --packages ${packages.map((p) => p.name).join(',')} --outside ${nOutside} --inside ${nInside} --context-size ${contextSize}`,
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
