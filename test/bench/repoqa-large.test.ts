/**
 * bench/repoqa/large (issue 15): the pure parts of the report (subset classification, the
 * `summary` rows and the target on a hand-built case, the round-robin order) and, on the tiny
 * model, that the benchmark's prompt for each packing is exactly what askRepository prefills.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { loadModel, type EngineModel } from '../../src/engine/model';
import { askRepository, DEFAULT_SNAP } from '../../src/pipeline/ask';
import { concatTokens } from '../../src/prompt/prompt';
import { ALL_PACKINGS, askOptions, LARGE_PACKINGS, packedPrompt, questionPart, questionSkipReason, questionTokenCount } from '../../bench/repoqa/large/prompt';
import { buildLargeReport, ceilingRows, checkTarget, completeRecords, countSkipped, isSkipped, mergeReportFields, subsetOf, summarize, summarizeExtra, type SkippedRecord } from '../../bench/repoqa/large/report';
import { interleave, readLargeRecords, reportQuestions, selectHeldOut } from '../../bench/repoqa/large/run';
import type { Question } from '../../bench/repoqa/questions';
import { isCorrect, scoringContext } from '../../bench/repoqa/scoring';
import { retrieveChunks } from '../../src/context/retrieve/retrieve';
import { checkTinyModel } from '../helpers/models';

test('a question is inside when smallest-first packs its file in full, else outside', () => {
  const packed = new Set(['index.js', 'lib/small.js']);
  assert.equal(subsetOf({ file: 'lib/small.js' }, packed), 'inside');
  assert.equal(subsetOf({ file: 'index.js' }, packed), 'inside');
  assert.equal(subsetOf({ file: 'lib/big.js' }, packed), 'outside');
  // paths are compared exactly (no basename matching)
  assert.equal(subsetOf({ file: 'small.js' }, packed), 'outside');
});

test('summary rows on a hand-built run: complete questions only, first record of a duplicate', () => {
  type R = { id: string; packing: (typeof LARGE_PACKINGS)[number]; subset: 'outside' | 'inside'; correct: boolean };
  const rec = (id: string, subset: R['subset'], sf: boolean, rm: boolean, rmr: boolean): R[] => [
    { id, subset, packing: 'smallest-first', correct: sf },
    { id, subset, packing: 'ranked+map', correct: rm },
    { id, subset, packing: 'ranked+map+retrieval', correct: rmr },
  ];
  const records: R[] = [
    ...rec('q1', 'outside', false, true, true),
    ...rec('q2', 'outside', false, false, true),
    ...rec('q3', 'inside', true, true, true),
    ...rec('q4', 'inside', true, false, false),
    // a question cut by a killed run: answered with one packing only, left out of every row
    { id: 'q5', subset: 'outside', packing: 'smallest-first', correct: true },
    // a second record of q1 smallest-first: the first one counts
    { id: 'q1', subset: 'outside', packing: 'smallest-first', correct: true },
  ];
  assert.equal(completeRecords(records).length, 13);
  const summary = summarize(records);
  // by hand: outside q1, q2 — sf 0/2, rm 1/2, rmr 2/2; inside q3, q4 — sf 2/2, rm 1/2, rmr 1/2
  assert.deepEqual(summary, [
    { packing: 'smallest-first', subset: 'outside', n: 2, accuracy: 0 },
    { packing: 'smallest-first', subset: 'inside', n: 2, accuracy: 1 },
    { packing: 'ranked+map', subset: 'outside', n: 2, accuracy: 0.5 },
    { packing: 'ranked+map', subset: 'inside', n: 2, accuracy: 0.5 },
    { packing: 'ranked+map+retrieval', subset: 'outside', n: 2, accuracy: 1 },
    { packing: 'ranked+map+retrieval', subset: 'inside', n: 2, accuracy: 0.5 },
  ]);
  assert.deepEqual(checkTarget(summary), [
    { subset: 'outside', gain: 1, required: 0.25, met: true },
    { subset: 'inside', gain: -0.5, required: 0, met: false },
  ]);
  // a subset with no complete question has no row, and the target says so
  const outsideOnly = summarize(records.filter((r) => r.subset === 'outside'));
  assert.deepEqual(outsideOnly.map((r) => `${r.packing}:${r.subset}`), ['smallest-first:outside', 'ranked+map:outside', 'ranked+map+retrieval:outside']);
  assert.deepEqual(checkTarget(outsideOnly)[1], { subset: 'inside', gain: null, required: 0, met: false });
});

test('a fourth packing is compared on the questions answered with all four, apart from summary', () => {
  type R = { id: string; packing: (typeof ALL_PACKINGS)[number]; subset: 'outside' | 'inside'; correct: boolean };
  const three = (id: string, subset: R['subset'], sf: boolean, rm: boolean, rmr: boolean): R[] => [
    { id, subset, packing: 'smallest-first', correct: sf },
    { id, subset, packing: 'ranked+map', correct: rm },
    { id, subset, packing: 'ranked+map+retrieval', correct: rmr },
  ];
  const small = (id: string, subset: R['subset'], correct: boolean): R => ({ id, subset, packing: 'ranked+small+map+retrieval', correct });
  const records: R[] = [
    ...three('q1', 'inside', true, false, false),
    small('q1', 'inside', true),
    ...three('q2', 'inside', true, true, false),
    small('q2', 'inside', false),
    // answered with the three only: in summary, not in the paired rows
    ...three('q3', 'inside', false, false, true),
    ...three('q4', 'outside', false, true, true),
    small('q4', 'outside', true),
    // answered with the fourth only: in neither
    small('q5', 'outside', false),
  ];
  // by hand: inside q1, q2 — sf 2/2, rm 1/2, rmr 0/2, small 1/2; outside q4 — 0, 1, 1, 1
  assert.deepEqual(summarizeExtra(records, 'ranked+small+map+retrieval'), [
    { packing: 'smallest-first', subset: 'outside', n: 1, accuracy: 0 },
    { packing: 'ranked+map', subset: 'outside', n: 1, accuracy: 1 },
    { packing: 'ranked+map+retrieval', subset: 'outside', n: 1, accuracy: 1 },
    { packing: 'ranked+small+map+retrieval', subset: 'outside', n: 1, accuracy: 1 },
    { packing: 'smallest-first', subset: 'inside', n: 2, accuracy: 1 },
    { packing: 'ranked+map', subset: 'inside', n: 2, accuracy: 0.5 },
    { packing: 'ranked+map+retrieval', subset: 'inside', n: 2, accuracy: 0 },
    { packing: 'ranked+small+map+retrieval', subset: 'inside', n: 2, accuracy: 0.5 },
  ]);
  // summary stays the three packings over q1–q4 (inside sf 2/3, rmr 1/3)
  const summary = summarize(records);
  assert.deepEqual(summary.map((r) => r.packing), ['smallest-first', 'smallest-first', 'ranked+map', 'ranked+map', 'ranked+map+retrieval', 'ranked+map+retrieval']);
  assert.deepEqual(summary.find((r) => r.packing === 'ranked+map+retrieval' && r.subset === 'inside'), { packing: 'ranked+map+retrieval', subset: 'inside', n: 3, accuracy: 1 / 3 });
});

test('summary rows over two packings (the held-out run): questions answered with both, in the packings\' order', () => {
  type R = { id: string; packing: (typeof ALL_PACKINGS)[number]; subset: 'outside' | 'inside'; correct: boolean };
  const records: R[] = [
    { id: 'h1', subset: 'outside', packing: 'smallest-first', correct: false },
    { id: 'h1', subset: 'outside', packing: 'ranked+map+retrieval', correct: true },
    { id: 'h2', subset: 'outside', packing: 'smallest-first', correct: true },
    { id: 'h2', subset: 'outside', packing: 'ranked+map+retrieval', correct: true },
    { id: 'h3', subset: 'outside', packing: 'smallest-first', correct: false },
    { id: 'h3', subset: 'outside', packing: 'ranked+map+retrieval', correct: false },
    { id: 'h4', subset: 'inside', packing: 'ranked+map+retrieval', correct: false },
    { id: 'h4', subset: 'inside', packing: 'smallest-first', correct: true },
    // answered with one of the two only (a cut run): in no row
    { id: 'h5', subset: 'inside', packing: 'smallest-first', correct: false },
  ];
  // by hand: outside h1–h3 — sf 1/3, rmr 2/3; inside h4 — sf 1/1, rmr 0/1
  const rows = summarize(records, ['smallest-first', 'ranked+map+retrieval']);
  assert.deepEqual(rows, [
    { packing: 'smallest-first', subset: 'outside', n: 3, accuracy: 1 / 3 },
    { packing: 'smallest-first', subset: 'inside', n: 1, accuracy: 1 },
    { packing: 'ranked+map+retrieval', subset: 'outside', n: 3, accuracy: 2 / 3 },
    { packing: 'ranked+map+retrieval', subset: 'inside', n: 1, accuracy: 0 },
  ]);
  assert.deepEqual(checkTarget(rows).map((t) => t.gain), [2 / 3 - 1 / 3, -1]);
  // with the default (the three) none of these questions is complete
  assert.deepEqual(summarize(records), []);
});

test('the ceiling beside each packing on the same questions of one repository', () => {
  type P = { id: string; repo: string; packing: (typeof ALL_PACKINGS)[number]; subset: 'outside' | 'inside'; correct: boolean };
  const ceiling = [
    { id: 'a#1', repo: 'a', subset: 'outside' as const, correct: true },
    { id: 'a#2', repo: 'a', subset: 'outside' as const, correct: false },
    { id: 'a#3', repo: 'a', subset: 'inside' as const, correct: true },
  ];
  const packed: P[] = [
    { id: 'a#1', repo: 'a', subset: 'outside', packing: 'smallest-first', correct: false },
    { id: 'a#1', repo: 'a', subset: 'outside', packing: 'ranked+map+retrieval', correct: true },
    { id: 'a#2', repo: 'a', subset: 'outside', packing: 'smallest-first', correct: false },
    { id: 'a#2', repo: 'a', subset: 'outside', packing: 'ranked+map+retrieval', correct: true },
    // a second record of a#2 smallest-first: the first one counts
    { id: 'a#2', repo: 'a', subset: 'outside', packing: 'smallest-first', correct: true },
    { id: 'a#3', repo: 'a', subset: 'inside', packing: 'smallest-first', correct: true },
    { id: 'a#3', repo: 'a', subset: 'inside', packing: 'ranked+map+retrieval', correct: false },
    // questions the ceiling did not answer (another repository, another question): in no row
    { id: 'b#1', repo: 'b', subset: 'outside', packing: 'smallest-first', correct: true },
    { id: 'a#9', repo: 'a', subset: 'outside', packing: 'smallest-first', correct: true },
  ];
  // by hand: outside a#1, a#2 — ceiling 1/2, sf 0/2, rmr 2/2; inside a#3 — ceiling 1/1, sf 1/1, rmr 0/1; no ranked+map records: no row
  assert.deepEqual(ceilingRows(ceiling, packed), [
    { repo: 'a', packing: 'whole-repository', subset: 'outside', n: 2, accuracy: 0.5 },
    { repo: 'a', packing: 'smallest-first', subset: 'outside', n: 2, accuracy: 0 },
    { repo: 'a', packing: 'ranked+map+retrieval', subset: 'outside', n: 2, accuracy: 1 },
    { repo: 'a', packing: 'whole-repository', subset: 'inside', n: 1, accuracy: 1 },
    { repo: 'a', packing: 'smallest-first', subset: 'inside', n: 1, accuracy: 1 },
    { repo: 'a', packing: 'ranked+map+retrieval', subset: 'inside', n: 1, accuracy: 0 },
  ]);
});

test('--questions-from takes an earlier report\'s questions once each, by repository and subset, run or held-out', () => {
  const rec = (repo: string, subject: string, subset: 'outside' | 'inside', packing: (typeof ALL_PACKINGS)[number], detail?: string) => ({
    id: `${repo}#doc:${subject}`,
    repo,
    kind: 'doc' as const,
    subject,
    question: `What does ${subject} do?`,
    answer: subject,
    file: `lib/${subject}.js`,
    line: 3,
    ...(detail !== undefined ? { detail } : {}),
    subset,
    packing,
    inFull: false,
    inMap: false,
    fileRetrieved: false,
    subjectRetrieved: false,
    retrieved: [],
    text: 'x',
    stop: 'eog',
    correct: false,
    L: 1,
    prefixTokens: 1,
    retrievalTokens: 0,
    questionTokens: 1,
    restoreMs: 0,
    prefillMs: 0,
    answerMs: 0,
  });
  const report = {
    // the run's records: b answered with two packings, a question of another repository between
    records: [rec('r@1', 'b', 'outside', 'smallest-first', 'says b'), rec('s@2', 'z', 'outside', 'smallest-first'), rec('r@1', 'b', 'outside', 'ranked+map+retrieval', 'says b'), rec('r@1', 'a', 'inside', 'smallest-first')],
    heldOut: { records: [rec('r@1', 'c', 'inside', 'ranked+map+retrieval'), rec('r@1', 'd', 'outside', 'ranked+map+retrieval')] },
  };
  const run = reportQuestions(report, false, 'r@1');
  assert.deepEqual(run.outside.map((q) => q.id), ['r@1#doc:b']);
  assert.deepEqual(run.inside.map((q) => q.id), ['r@1#doc:a']);
  // the question's own fields only (no answer text, packing or subset), detail kept where there is one
  assert.deepEqual(run.outside[0], { id: 'r@1#doc:b', repo: 'r@1', kind: 'doc', subject: 'b', question: 'What does b do?', answer: 'b', file: 'lib/b.js', line: 3, detail: 'says b' });
  assert.equal('detail' in run.inside[0]!, false);
  const held = reportQuestions(report, true, 'r@1');
  assert.deepEqual([held.outside.map((q) => q.subject), held.inside.map((q) => q.subject)], [['d'], ['c']]);
  assert.deepEqual(reportQuestions(report, true, 's@2'), { outside: [], inside: [] });
  assert.throws(() => reportQuestions({ records: [] }, true, 'r@1'), /no heldOut\.records/);
});

test('held-out questions never include a tuned one, and setting a report field keeps every other field as written', () => {
  const q = (kind: Question['kind'], subject: string): Question => ({ id: `r@1#${kind}:${subject}`, repo: 'r@1', kind, subject, question: `? ${subject}`, answer: subject, file: 'lib/x.js', line: 1 });
  const candidates = [q('file', 'a'), q('file', 'b'), q('file', 'c'), q('param', 'd'), q('param', 'e'), q('param', 'f')];
  const tuned = new Set([candidates[0]!.id, candidates[3]!.id]);
  const all = selectHeldOut(candidates, tuned, ['file', 'param'], 10, 29);
  // every untuned candidate, none of the tuned: b, c, e, f
  assert.deepEqual(all.map((x) => x.subject).sort(), ['b', 'c', 'e', 'f']);
  // n = 2: kinds in turn, one of each
  assert.deepEqual(selectHeldOut(candidates, tuned, ['file', 'param'], 2, 29).map((x) => x.kind), ['file', 'param']);
  assert.equal(selectHeldOut(candidates, new Set(candidates.map((c) => c.id)), ['file', 'param'], 4, 29).length, 0);

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'repoqa-large-merge-'));
  try {
    const file = path.join(dir, 'report.json');
    const report = { model: 'm', summary: [{ packing: 'smallest-first', subset: 'outside', n: 23, accuracy: 5 / 23 }], ceiling: 'not run', command: 'x', records: [{ id: 'q' }] };
    const text = JSON.stringify(report, null, 2) + '\n';
    fs.writeFileSync(file, text);
    mergeReportFields(file, { ceiling: { rows: [1] }, heldOut: { seed: 29 } });
    const merged = fs.readFileSync(file, 'utf8');
    // the fields before `ceiling` are the same bytes; ceiling replaced in place, heldOut new before records
    assert.equal(merged.slice(0, text.indexOf('"ceiling"')), text.slice(0, text.indexOf('"ceiling"')));
    assert.deepEqual(Object.keys(JSON.parse(merged) as object), ['model', 'summary', 'ceiling', 'command', 'heldOut', 'records']);
    assert.deepEqual((JSON.parse(merged) as { ceiling: unknown }).ceiling, { rows: [1] });
    assert.deepEqual((JSON.parse(merged) as { summary: unknown }).summary, report.summary);
    assert.throws(() => mergeReportFields(path.join(dir, 'absent.json'), { ceiling: 1 }), /no report/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('round-robin order and the JSONL reader', () => {
  assert.deepEqual(interleave(['o1', 'o2', 'o3'], ['i1']), ['o1', 'i1', 'o2', 'o3']);
  assert.deepEqual(interleave([], ['i1', 'i2']), ['i1', 'i2']);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'repoqa-large-jsonl-'));
  try {
    const file = path.join(dir, 'run.jsonl');
    const config = { model: 'm', contextSize: 4096, answerTokens: 24 };
    fs.writeFileSync(file, `${JSON.stringify({ config })}\n${JSON.stringify({ id: 'a', packing: 'ranked+map' })}\n{"id":"b","pack`);
    assert.deepEqual(readLargeRecords(file, config).map((r) => r.id), ['a']);
    assert.throws(() => readLargeRecords(file, { ...config, contextSize: 8192 }), /was written with/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a question longer than its room is skipped with the reason, and the report counts skipped questions per repository', () => {
  // axios's 12th question of the first run: a 292-token thread turn against a 256-token room (2,048 / 8)
  assert.equal(questionSkipReason(292, 256), 'the question takes 292 tokens, more than its room (256)');
  // exactly the room fits; below it too
  assert.equal(questionSkipReason(256, 256), null);
  assert.equal(questionSkipReason(40, 256), null);
  const base = { question: 'q', kind: 'file' as const, subject: 's', answer: 'a', file: 'f.js', line: 1, questionTokens: 292, questionRoom: 256 };
  const skipped: SkippedRecord[] = [
    { ...base, id: 'axios#1', repo: 'axios', subset: 'outside', packing: 'smallest-first', skipped: 'r1' },
    // the same question with another packing counts once
    { ...base, id: 'axios#1', repo: 'axios', subset: 'outside', packing: 'ranked+map', skipped: 'r1' },
    { ...base, id: 'axios#2', repo: 'axios', subset: 'inside', packing: 'smallest-first', skipped: 'r2' },
    { ...base, id: 'fastify#1', repo: 'fastify', subset: 'outside', packing: 'smallest-first', skipped: 'r3' },
  ];
  assert.ok(skipped.every(isSkipped));
  assert.equal(isSkipped({ ...base, id: 'x', repo: 'pino', subset: 'inside', packing: 'ranked+map' } as never), false);
  assert.deepEqual(countSkipped(skipped, ['pino', 'axios']), [
    { repo: 'pino', outside: 0, inside: 0, total: 0, questions: [] },
    {
      repo: 'axios',
      outside: 1,
      inside: 1,
      total: 2,
      questions: [
        { id: 'axios#1', subset: 'outside', reason: 'r1' },
        { id: 'axios#2', subset: 'inside', reason: 'r2' },
      ],
    },
    { repo: 'fastify', outside: 1, inside: 0, total: 1, questions: [{ id: 'fastify#1', subset: 'outside', reason: 'r3' }] },
  ]);
  // the report carries them; with no skipped input every repository has a zero row
  const info = (repo: string) => ({ repo, files: 0, sourceTokens: 0, timesContext: 0, smallestFirstFiles: [], generated: { outside: 0, inside: 0 }, selected: { outside: 0, inside: 0 }, packings: {} });
  const input = { modelId: 'm', modelFile: 'm.gguf', contextSize: 2048, answerTokens: 24, kinds: [], repos: [info('axios')], notes: {} };
  assert.deepEqual(buildLargeReport([], { ...input, skipped }).skipped.map((r) => [r.repo, r.total]), [['axios', 2], ['fastify', 1]]);
  assert.deepEqual(buildLargeReport([], input).skipped, [{ repo: 'axios', outside: 0, inside: 0, total: 0, questions: [] }]);
});

let model: EngineModel;
let tmp: string;
let repo: string;

before(async () => {
  model = await loadModel(checkTinyModel());
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'repoqa-large-'));
  repo = path.join(tmp, 'repo');
  fs.mkdirSync(path.join(repo, 'src'), { recursive: true });
  fs.writeFileSync(path.join(repo, 'src', 'core.js'), `function coreTotal(xs) {\n  return xs.reduce((a, b) => a + b, 0);\n}\nmodule.exports = { coreTotal };\n${'// core notes\n'.repeat(60)}`);
  for (let i = 0; i < 40; i++) {
    fs.writeFileSync(path.join(repo, 'src', `use${i}.js`), `const { coreTotal } = require('./core');\nfunction use${i}() {\n  return coreTotal([${i}, ${i + 1}]);\n}\nmodule.exports = { use${i} };\n`);
  }
  fs.writeFileSync(path.join(repo, 'README.md'), 'not included\n');
});
after(() => {
  model.dispose();
  fs.rmSync(tmp, { recursive: true, force: true });
});

test('the prompt of each packing is what askRepository prefills', async () => {
  const contextSize = 2048;
  const answerTokens = 4;
  const include = ['/src/'];
  const question = 'What does use39 return? Answer with the value only.';
  const seen = new Set<string>();
  for (const packing of ALL_PACKINGS) {
    const pp = await packedPrompt(model, repo, include, packing, contextSize, answerTokens);
    const part = await questionPart(model, pp, question);
    assert.equal(questionTokenCount(model, pp, question), part.questionTokens);
    const prompt = concatTokens([pp.prefix, part.tokens]);
    const { packing: mode, retrievalShare, rankedShares } = askOptions(packing);
    let productTokens: number[] = [];
    await askRepository(
      { repo, model, question, snap: DEFAULT_SNAP, contextSize, maxTokens: answerTokens, answerRoom: answerTokens, session: { threads: 2 }, pack: { include, order: 'path', packing: mode, ...(rankedShares !== undefined ? { rankedShares } : {}) }, retrievalShare, afterSnap: (s) => (productTokens = [...s.tokens]) },
      () => {},
    );
    assert.deepEqual(productTokens, [...prompt], `${packing}: askRepository prefills the benchmark's prompt`);
    seen.add(prompt.join(','));
    // the sections add up to the prefix
    assert.equal(pp.sections.head + pp.sections.tree + pp.sections.files + pp.sections.map, pp.prefix.length);
    if (packing === 'smallest-first') {
      assert.equal(pp.sections.tree + pp.sections.map, 0);
      assert.equal(part.retrievalTokens, 0);
    } else {
      assert.ok(pp.sections.tree > 0 && pp.sections.map > 0, `${packing}: tree and map`);
      assert.ok(!pp.full.includes('src/use39.js'), 'use39.js is not in full');
    }
    if (packing === 'ranked+map+retrieval' || packing === 'ranked+small+map+retrieval') {
      assert.equal(pp.retrievalRoom, Math.floor(contextSize * 0.15));
      assert.ok(part.retrievalTokens > 0 && part.retrievalTokens <= pp.retrievalRoom);
      assert.equal(part.retrieved[0], 'src/use39.js#use39', 'BM25 finds the function asked about first');
    } else {
      assert.equal(pp.retrievalRoom, 0);
      assert.deepEqual(part.retrieved, []);
    }
  }
  assert.equal(seen.size, 4, 'the four packings give four different prompts');
});

test('the default packing (auto) of a repository that does not fit prefills ranked+map+retrieval\'s prompt, a class quoted by its header and a definition larger than the room in pieces', async () => {
  const contextSize = 2048;
  const answerTokens = 4;
  const include = ['/src/'];
  const big = path.join(tmp, 'big');
  fs.cpSync(repo, big, { recursive: true });
  // a function far larger than the 307-token retrieval room, and a class with methods
  const body = Array.from({ length: 120 }, (_, i) => `  const step${i} = first * ${i} + second;`).join('\n');
  fs.writeFileSync(path.join(big, 'src', 'big.js'), `function bigTotal(first, second) {\n${body}\n  return first + second;\n}\nmodule.exports = { bigTotal };\n`);
  fs.writeFileSync(path.join(big, 'src', 'shape.js'), `class Shape {\n  constructor(width, height) {\n    this.width = width;\n    this.height = height;\n  }\n\n  area() {\n    return this.width * this.height;\n  }\n}\nmodule.exports = { Shape };\n`);
  const asked = [
    { question: 'What is the name of the first parameter of the function `bigTotal`? Answer with the parameter name only.', first: 'src/big.js#bigTotal' },
    { question: 'Which file defines the class `Shape`? Answer with the file path only.', first: 'src/shape.js#Shape' },
  ];
  const pp = await packedPrompt(model, big, include, 'ranked+map+retrieval', contextSize, answerTokens);
  assert.ok(!pp.full.includes('src/big.js') && !pp.full.includes('src/shape.js'), 'neither file is in full');
  for (const { question, first } of asked) {
    const part = await questionPart(model, pp, question);
    let productTokens: number[] = [];
    // the CLI's and the extension's default: packing auto, retrieval share 0.15
    await askRepository(
      { repo: big, model, question, snap: DEFAULT_SNAP, contextSize, maxTokens: answerTokens, answerRoom: answerTokens, session: { threads: 2 }, pack: { include, order: 'path', packing: 'auto' }, retrievalShare: 0.15, afterSnap: (s) => (productTokens = [...s.tokens]) },
      () => {},
    );
    assert.deepEqual(productTokens, [...concatTokens([pp.prefix, part.tokens])], `${first}: auto prefills the benchmark's ranked+map+retrieval prompt`);
    assert.equal(part.retrieved[0], first);
    const quoted = (await retrieveChunks(pp.pack.retrievable, question, { budget: pp.retrievalRoom, countTokens: (t) => model.tokenize(t).length, secrets: pp.pack.secrets })).chunks[0]!;
    if (first === 'src/big.js#bigTotal') {
      // a piece of the function's lines 1-123 (signature, 120 steps, return, brace), the first one: it starts with the signature
      assert.deepEqual([quoted.startLine, quoted.partOf], [1, { startLine: 1, endLine: 123 }]);
      assert.ok(quoted.endLine < 123 && quoted.text.startsWith('function bigTotal(first, second) {'));
    } else {
      // the class's header chunk, from its declaration (not one of its methods)
      assert.equal(quoted.startLine, 1);
      assert.ok(quoted.text.startsWith('class Shape {'));
    }
  }
});

test('the scorer reads a retrieval-style line range and an underscore parameter', () => {
  const files = ['lib/time.js', 'lib/meta.js'];
  const file = scoringContext({ kind: 'file', answer: 'lib/time.js', subject: 'epochTime' }, files);
  // the retrieval section cites chunks as path:start-end; the model copies that form
  assert.ok(isCorrect('lib/time.js:5-5', file));
  assert.ok(isCorrect('`lib/time.js:14-20`', file));
  assert.ok(!isCorrect('lib/meta.js:5-5', file));
  const param = scoringContext({ kind: 'param', answer: '_', subject: 'noOpPrepareStackTrace' }, files);
  assert.ok(isCorrect('_', param));
  assert.ok(isCorrect('`_`', param));
  assert.ok(!isCorrect('stackTraceError', param));
  assert.ok(!isCorrect('', param));
});
