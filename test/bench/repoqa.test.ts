/**
 * bench/repoqa (issue 13, part 3): the code-QA benchmark's pipeline and scoring on a small subset,
 * with the real SmolLM2-135M-Instruct (fails, not skips, when `npm run models` has not fetched it)
 * and real npm packages (`npm pack`, pinned by integrity; the tarballs are kept in bench/.repoqa).
 *
 * - the scorer on hand-written answers;
 * - the JSONL of a run: a line cut by a killed run is run again, another configuration is refused;
 * - the question generator: every generated answer of three packages checked against the source
 *   text by plain string search (independent of the compiler's syntax tree), and the exact set of
 *   questions of `ms` written out by hand;
 * - the pipeline on SmolLM2 and `ms`: askRepository (the product) prefills exactly the benchmark's
 *   prompt, and its on-device SnapKV keeps (nearly) the positions the benchmark's host SnapKV
 *   selects from the engine's scores; the keep-all branch equals full attention exactly (same
 *   tokens, KL 0, top-1 1); a branch whose answer departs from full attention's (rolled back and
 *   decoded on) equals the product's own greedy decoding of a fresh prefill compacted the same way.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { packRepository } from '../../src/context/pack';
import { loadModel, type EngineModel } from '../../src/engine/model';
import { askRepository, DEFAULT_SNAP } from '../../src/pipeline/ask';
import { budgetFor, sharedFraction } from '../../bench/fidelity/benchmark';
import { RandomPolicy, SnapKvPolicy, StreamingLlmPolicy } from '../../bench/fidelity/policies';
import { measureQuestion } from '../../bench/repoqa/branches';
import { findPackage, setupPackage } from '../../bench/repoqa/packages';
import { generateQuestions, type Question } from '../../bench/repoqa/questions';
import { benchSession, prefixState, questionTokens, repositoryPrompt, SNAP_WINDOW } from '../../bench/repoqa/repository';
import { readRecords, scorerPolicy } from '../../bench/repoqa/run';
import { agrees, answerComplete, extractCandidate, isCorrect, scoringContext } from '../../bench/repoqa/scoring';
import { checkRealModel } from '../helpers/models';

const FILES = ['index.js', 'lib/charset.js', 'lib/language.js', 'src/index.js'];
const ctx = (kind: Question['kind'], answer: string, subject = 'subject') => scoringContext({ kind, answer, subject }, FILES);

test('the scorer on hand-written answers', () => {
  // a sentence that repeats the subject: the first other code span or path is the answer
  assert.ok(isCorrect('The function `preferredCharsets` is defined in the `lib/charset.js` file.', ctx('file', 'lib/charset.js', 'preferredCharsets')));
  // a file name alone stands for its path when unique …
  assert.ok(isCorrect('It is in charset.js.', ctx('file', 'lib/charset.js')));
  // … but not when two files have that name
  assert.ok(!isCorrect('index.js', ctx('file', 'src/index.js')));
  assert.ok(isCorrect('./src/index.js', ctx('file', 'src/index.js')));
  // a path:line citation (the product's prompt asks for them)
  assert.ok(isCorrect('lib/charset.js:12', ctx('file', 'lib/charset.js')));
  assert.ok(isCorrect('See `lib/charset.js:12:3`.', ctx('file', 'lib/charset.js')));
  assert.ok(!isCorrect('The function `x` is defined in the `chars', ctx('file', 'lib/charset.js', 'x')));
  // identifiers: backticks, a call, a dotted name, case
  assert.ok(isCorrect('`parseAccept()`', ctx('first-call', 'parseAccept')));
  assert.ok(isCorrect('exports.ParseAccept', ctx('first-call', 'parseAccept')));
  assert.ok(isCorrect('```js\nparseAccept(accept)\n```', ctx('first-call', 'parseAccept')));
  assert.ok(!isCorrect('`parseAcceptCharset`', ctx('first-call', 'parseAccept')));
  // no code span: the last word of the first sentence
  assert.ok(isCorrect('The first parameter of charset is available. It is a list.', ctx('param', 'available', 'charset')));
  // the subject alone is not an answer
  assert.ok(!isCorrect('`charset`', ctx('param', 'charset', 'charset')));
  // a doc question names no function: its answer may be the function asked about
  assert.ok(isCorrect('The function `getFullCharset` is documented so.', ctx('doc', 'getFullCharset', 'getFullCharset')));
  // values: numbers by value, strings without quotes and case
  assert.ok(isCorrect('The value of `MAX_LENGTH` is `256`.', ctx('constant', '256', 'MAX_LENGTH')));
  assert.ok(isCorrect('2.56e2', ctx('constant', '256')));
  assert.ok(isCorrect("'UTF-8'", ctx('constant', 'utf-8')));
  assert.ok(isCorrect('`null`', ctx('return', 'null')));
  assert.ok(!isCorrect('`undefined`', ctx('return', 'null')));
  assert.ok(!isCorrect('', ctx('return', 'null')));
  // agreement compares candidates, not texts
  assert.ok(agrees('The answer is `foo`.', 'foo', ctx('first-call', 'bar')));
  assert.ok(!agrees('`foo`', '`fooBar`', ctx('first-call', 'bar')));
  // the stop rule: settled once a code span other than the subject closes, or the first sentence ends
  assert.ok(!answerComplete('The function `charset` is', ctx('param', 'x', 'charset')));
  assert.ok(answerComplete('The function `charset` takes `available`', ctx('param', 'x', 'charset')));
  assert.ok(!answerComplete('The function takes available', ctx('param', 'x', 'charset')));
  assert.ok(answerComplete('The function takes available. ', ctx('param', 'x', 'charset')));
  assert.deepEqual(extractCandidate('It is in `lib/char', ctx('file', 'lib/charset.js')), { candidate: 'lib/char', settled: false });
});

test('--scorer: key norm (last 32 kept) and the key-norm base topped up by SnapKV at its defaults (w 32, k 7, max, half the prefix budget)', () => {
  const kn = scorerPolicy('key-norm');
  assert.equal(kn.id, 'knorm-t32');
  assert.deepEqual(kn.params, { scorer: 'key-norm', tail: 32 });
  const tu = scorerPolicy('key-norm-topup');
  assert.equal(tu.id, 'knorm0.5-topup-snapkv-w32-max-k7');
  assert.deepEqual(tu.params, { window: 32, kernel: 7, pooling: 'max', scorer: 'key-norm-topup', baseShare: 0.5 });
  assert.equal(tu.scoreWindow, 32);
  assert.throws(() => scorerPolicy('snapkv'), /--scorer: one of key-norm, key-norm-topup, got snapkv/);
});

test('the JSONL of a run: a cut line is run again, another configuration is refused', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'repoqa-jsonl-'));
  const file = path.join(dir, 'run.jsonl');
  const config = { model: 'm', fractions: [0.25], answerTokens: 32 };
  fs.writeFileSync(file, `${JSON.stringify({ config })}\n${JSON.stringify({ id: 'a' })}\n{"id":"b","L":`);
  assert.deepEqual(
    readRecords(file, config).map((r) => r.id),
    ['a'],
  );
  assert.throws(() => readRecords(file, { ...config, answerTokens: 16 }), /was written with .* delete it or pass another --jsonl/);
  assert.deepEqual(readRecords(path.join(dir, 'absent.jsonl'), config), []);
  fs.rmSync(dir, { recursive: true, force: true });
});

/** The packed files of a package (the product's packer, no token limit). */
async function packedFiles(dir: string, include: readonly string[]): Promise<string[]> {
  const pack = await packRepository(dir, { include, order: 'path', tokenBudget: Infinity, countTokens: (t) => t.length });
  return pack.files.map((f) => f.path);
}

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Checks one generated question against the source text, by string search only. */
function checkAgainstSource(q: Question, dir: string, files: readonly string[]): void {
  const text = fs.readFileSync(path.join(dir, q.file), 'utf8');
  const lines = text.split('\n');
  const at = lines[q.line - 1] ?? '';
  const name = escapeRe(q.subject);
  const defines = (t: string) => new RegExp(`function\\s+${name}\\s*\\(|(^|[\\s.])${name}\\s*=\\s*(function\\b|\\(|async\\b|[A-Za-z_$][\\w$]*\\s*=>)`, 'm').test(t);
  const where = `${q.id} (${q.file}:${q.line})`;
  switch (q.kind) {
    case 'file': {
      assert.equal(q.answer, q.file, where);
      assert.ok(defines(text), `${where}: ${q.file} defines ${q.subject}`);
      for (const f of files) if (f !== q.file) assert.ok(!defines(fs.readFileSync(path.join(dir, f), 'utf8')), `${where}: ${f} also defines ${q.subject}`);
      break;
    }
    case 'param':
      assert.ok(defines(at) || at.includes(q.subject), `${where}: the line names ${q.subject}: ${at}`);
      assert.match(at + lines[q.line]!, new RegExp(`\\(\\s*${escapeRe(q.answer)}\\b|=\\s*${escapeRe(q.answer)}\\s*=>`), `${where}: first parameter ${q.answer}: ${at}`);
      break;
    case 'constant': {
      assert.ok(at.includes(`${q.subject} = ${q.detail}`), `${where}: ${at}`);
      const literal = q.detail!;
      const value = /^['"`]/.test(literal) ? literal.slice(1, -1) : String(Number(literal));
      assert.equal(value, q.answer, where);
      break;
    }
    case 'doc': {
      const before = lines.slice(0, q.line - 1).join('\n');
      const open = before.lastIndexOf('/**');
      const close = before.indexOf('*/', open);
      assert.ok(open >= 0 && close > open, `${where}: a doc comment precedes`);
      const body = before
        .slice(open + 3, close)
        .split('\n')
        .map((l) => l.replace(/^\s*\*\s?/, ''));
      const tag = body.findIndex((l) => l.trimStart().startsWith('@'));
      const description = (tag >= 0 ? body.slice(0, tag) : body).join(' ').replace(/\s+/g, ' ').trim();
      assert.equal(description, q.detail, where);
      assert.equal(q.answer, q.subject, where);
      break;
    }
    case 'first-call': {
      const from = lines.slice(q.line - 1).join('\n');
      const body = from.slice(from.indexOf('{') + 1);
      const calls = [...body.matchAll(/([A-Za-z_$][\w$.]*)\s*\(/g)].map((m) => m[1]!).filter((c) => !['if', 'for', 'while', 'switch', 'function', 'catch', 'return', 'typeof'].includes(c));
      assert.equal(calls[0], q.answer, where);
      break;
    }
    case 'return': {
      const two = at + '\n' + (lines[q.line] ?? '');
      assert.ok(two.includes(`if (${q.detail})`), `${where}: ${two}`);
      const values = [q.answer, `'${q.answer}'`, `"${q.answer}"`];
      assert.ok(values.some((v) => new RegExp(`return\\s+${escapeRe(v)}\\s*(;|$|\\n|\\})`, 'm').test(two)), `${where}: returns ${q.answer}: ${two}`);
      break;
    }
  }
}

test('the question generator: every answer checked against the source text; ms by hand', async () => {
  for (const name of ['negotiator', 'semver', 'ms']) {
    const pkg = findPackage(name);
    const dir = setupPackage(pkg);
    const files = await packedFiles(dir, pkg.include);
    const qs = await generateQuestions(dir, files, `${pkg.name}@${pkg.version}`);
    assert.ok(qs.length > 0, name);
    assert.equal(new Set(qs.map((q) => q.id)).size, qs.length, `${name}: ids are unique`);
    for (const q of qs) checkAgainstSource(q, dir, files);
  }
  // ms@2.1.3 index.js, read by hand: four named functions (the exported one is anonymous), the
  // constants have one-letter names (left out); plural's doc is two words and parse's names it
  // ("Parse the given `str` …"): both left out
  const ms = findPackage('ms');
  const dir = setupPackage(ms);
  const qs = await generateQuestions(dir, await packedFiles(dir, ms.include), 'ms@2.1.3');
  const got = qs.map((q) => `${q.kind} ${q.subject} → ${q.answer}${q.detail ? ` | ${q.detail}` : ''}`).sort();
  assert.deepEqual(got, [
    'doc fmtLong → fmtLong | Long format for `ms`.',
    'doc fmtShort → fmtShort | Short format for `ms`.',
    'first-call parse → String',
    'param fmtLong → ms',
    'param fmtShort → ms',
    'param parse → str',
    'param plural → ms',
  ]);
  assert.equal(qs.find((q) => q.kind === 'param' && q.subject === 'parse')!.question, 'What is the name of the first parameter of the function `parse`? Answer with the parameter name only.');
});

describe('the pipeline on SmolLM2 (ms@2.1.3)', () => {
  let model: EngineModel;
  let tmp: string;
  before(async () => {
    model = await loadModel(checkRealModel());
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'repoqa-test-'));
  });
  after(() => {
    model?.dispose();
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  test('product prompt, SnapKV vs the engine, keep-all = full, departures = plain greedy', async () => {
    const pkg = findPackage('ms');
    const dir = setupPackage(pkg);
    const answerTokens = 24;
    const rp = await repositoryPrompt(model, dir, pkg.include, answerTokens);
    const qs = await generateQuestions(dir, rp.files, 'ms@2.1.3');
    const q = qs.find((x) => x.kind === 'param' && x.subject === 'parse')!;
    const prompt = new Int32Array([...rp.prefix, ...questionTokens(model, rp.layout, q.question)]);
    const L = prompt.length;
    const B = budgetFor(0.25, L);

    // the product: askRepository prefills this very prompt and snaps it on the device
    let productTokens: number[] = [];
    let deviceKept = new Int32Array();
    const stats = await askRepository(
      { repo: dir, question: q.question, model, snap: { ...DEFAULT_SNAP, budget: B }, maxTokens: answerTokens, answerRoom: answerTokens, pack: { include: pkg.include, order: 'path' }, afterSnap: (s) => ((productTokens = [...s.tokens]), (deviceKept = Int32Array.from(s.snapKept()))) },
      () => {},
    );
    assert.deepEqual(productTokens, [...prompt], 'askRepository prefills the benchmark prompt');
    assert.equal(stats.L, L);
    assert.equal(stats.B, B);

    // the benchmark's host SnapKV from the engine's scores keeps (nearly) what the device kept
    const session = benchSession(model, rp.contextSize);
    try {
      const ps = await prefixState(session, rp.prefix, 'test', 'ms', tmp);
      assert.ok(ps.prefilled);
      await session.prefill(prompt.subarray(rp.prefix.length));
      await session.snap({ window: SNAP_WINDOW, budget: L, kernel: 1, pooling: 'max', force: true, keepScores: true });
      const scores = new Map([[SNAP_WINDOW, Float32Array.from(session.snapScores())]]);
      const snapkv = new SnapKvPolicy();
      const hostKept = snapkv.select({ L, budget: B, nLayer: model.info.nLayer, nHeadKv: model.info.nHeadKv, windowScores: scores });
      const shared = sharedFraction(hostKept, deviceKept, B);
      assert.ok(shared >= 0.95, `host and device SnapKV share ${shared} of the kept positions`);

      // the branches
      const ctxQ = scoringContext(q, rp.files);
      const policies = [snapkv, new StreamingLlmPolicy({ sinks: 4 }), new RandomPolicy({ window: 32, seed: 1 })];
      const fractions = [0.05, 0.25];
      const m = await measureQuestion(model, session, ps.snapshot, prompt, policies, { fractions, answerTokens, keepAll: true, complete: (t) => answerComplete(t, ctxQ) });
      assert.equal(m.L, L);
      assert.ok(m.full.tokens.length > 0, 'full attention answers');
      const k = m.keepAll!;
      assert.deepEqual(k.tokens, m.full.tokens, 'keep-all answers as full attention');
      assert.equal(k.departedAt, -1);
      if (k.fidelity) {
        assert.equal(k.fidelity.kl, 0, 'keep-all KL is exactly 0');
        assert.equal(k.fidelity.top1, 1);
      }
      assert.equal(k.stop, m.full.stop);
      for (const p of policies) assert.equal(m.branches[p.id]!.length, fractions.length);

      // a departed branch (rolled back, then decoded on) = the product's greedy decoding of a fresh
      // prefill of the question, compacted to the same kept positions
      const departed = policies
        .filter((x) => x.scoreWindow === 0)
        .flatMap((x) => m.branches[x.id]!.map((b) => ({ p: x, b })))
        .filter((x) => x.b.departedAt >= 0);
      assert.ok(departed.length > 0, 'a baseline branch departs from full attention');
      const { p, b } = departed[0]!;
      session.clear();
      await session.restore(ps.snapshot);
      await session.prefill(prompt.subarray(rp.prefix.length));
      await session.compact(b.B, p.select({ L, budget: b.B, nLayer: model.info.nLayer, nHeadKv: model.info.nHeadKv }));
      let text = '';
      const gen = session.generate({ maxTokens: b.tokens.length + (b.stop === 'eog' ? 1 : 0), sampling: { temperature: 0 } });
      for (let r = await gen.next(); !r.done; r = await gen.next()) text += r.value;
      assert.deepEqual(session.tokens.slice(L, L + b.tokens.length), b.tokens, `${p.id} at B = ${b.B}: same tokens as a plain greedy decode`);
      assert.ok(text.startsWith(b.text), `${JSON.stringify(text)} begins with ${JSON.stringify(b.text)}`);
    } finally {
      session.dispose();
    }
  });
});
