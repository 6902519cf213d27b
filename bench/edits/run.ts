/**
 * bench/edits: edit, then ask (issue 30). Scripted edits to a real repository (semver 7's
 * `ranges/` in this checkout's node_modules, its 8 smallest files, plus a small planted block at the top of the
 * files at the start, middle and end of the prompt), each followed by questions whose right answer
 * depends on the edit and questions about code it did not touch, for each strategy of what the
 * next question reads (src/pipeline/after-edit.ts):
 *
 *   exact           the repository packed again, mtime order (today's), prefilled from the first changed token
 *   exact-git       the same with the 'git' order (the repository is a git work tree with one commit)
 *   erratum         the cached prompt and the new text of each changed file after it
 *   erratum-diff    the cached prompt and a unified diff of each changed file after it
 *
 *   node --import tsx bench/edits/run.ts [--model smollm2|coder|file.gguf] [--max-tokens 16] [--budget 512]
 *        [--strategies exact,erratum,…] [--edits literal,rename,…] [--positions start,middle,end]
 *        [--out bench/results/edits.json]
 *
 * Edits: change a literal, rename a function and its use, add a function, delete a file (each at
 * the start, middle and end file), add a file (a new file goes last in either order: position
 * `end`). Before each edit the repository is put back as it was (contents and mtimes), and the
 * question runs on a copy of the cache that holds the unedited prefix only; the first question after the edit pays what the strategy
 * prefills (its TTFT and prefilled tokens are reported), the others are answered on its cache.
 * Questions come in two splits, each with its own wording: `dev` (read while choosing the
 * product's rules) and `held-out` (not looked at until the choice was made). An answer is right
 * when it contains the expected string, stale when it contains the value before the edit instead.
 * Results: bench/results/edits.json with `summary` (per strategy, edit and position over the
 * changed questions of both splits, and the totals as edit `all`), and `detail` split by changed /
 * unchanged and dev / held-out, and every answer.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { CacheStore } from '../../src/cache/store';
import { SNAP_DEFAULTS } from '../../src/config/snap-options';
import type { AfterEdit } from '../../src/context/erratum';
import type { PackOrder } from '../../src/context/pack-order';
import type { PackResult } from '../../src/context/pack';
import { loadModel } from '../../src/engine/model';
import { askRepository, type AskStats } from '../../src/pipeline/ask';
import { resolveBenchModel } from '../models';

/** A strategy: the order the repository is packed in and what the question after the edit reads. */
const STRATEGIES: Record<string, { order: PackOrder; afterEdit: AfterEdit }> = {
  exact: { order: 'mtime', afterEdit: 'exact' },
  'exact-git': { order: 'git', afterEdit: 'exact' },
  erratum: { order: 'mtime', afterEdit: 'erratum' },
  'erratum-diff': { order: 'mtime', afterEdit: 'erratum-diff' },
};

type Position = 'start' | 'middle' | 'end';
type EditKind = 'literal' | 'rename' | 'add-function' | 'delete-file' | 'add-file';
type Split = 'dev' | 'held-out';

/** One question: its wording, the right answer's string and, when there is one, the stale one. */
interface Question {
  split: Split;
  changed: boolean;
  text: string;
  expect: string;
  stale: string;
}

/** semver's ranges/ files left out (the largest three), so that the prompt stays small. */
const LEFT_OUT = ['subset.js', 'outside.js', 'min-version.js'];

const TAGS: Record<Position, string> = { start: 'Alpha', middle: 'Beta', end: 'Gamma' };

/** The block planted at the top of the file at each position. */
const planted = (tag: string): string =>
  `// settings of the ${tag.toLowerCase()} records\n` +
  `const RETRY_LIMIT_${tag.toUpperCase()} = 3\n` +
  `function fetchRecord${tag} (id) { return { id, tries: RETRY_LIMIT_${tag.toUpperCase()} } }\n` +
  `function run${tag} () { return fetchRecord${tag}(1) }\n\n`;

/** The questions about untouched code of an edit at `p`: the literal of another position (dev), and another literal or a file of semver itself (held-out). */
function unchangedQuestions(p: Position): Question[] {
  const others = (['start', 'middle', 'end'] as Position[]).filter((q) => q !== p);
  const [a, b] = others.map((q) => TAGS[q].toUpperCase()) as [string, string];
  return [
    { split: 'dev', changed: false, text: `What is the value of RETRY_LIMIT_${a}? Answer with the number only.`, expect: '3', stale: '' },
    { split: 'held-out', changed: false, text: p === 'middle' ? `RETRY_LIMIT_${b} is set to which number?` : 'In which file is toComparators defined?', expect: p === 'middle' ? '3' : 'to-comparators.js', stale: '' },
  ];
}

/** An edit of the file `rel` (at position `p`): what it does to the tree and its questions. */
function scriptedEdit(kind: EditKind, p: Position, rel: string): { apply: (root: string) => string[]; questions: Question[] } {
  const tag = TAGS[p];
  const up = tag.toUpperCase();
  const edit = (root: string, f: (s: string) => string): string[] => {
    const abs = path.join(root, rel);
    fs.writeFileSync(abs, f(fs.readFileSync(abs, 'utf8')));
    return [rel];
  };
  switch (kind) {
    case 'literal':
      return {
        apply: (root) => edit(root, (s) => s.replace(`const RETRY_LIMIT_${up} = 3`, `const RETRY_LIMIT_${up} = 8`)),
        questions: [
          { split: 'dev', changed: true, text: `What is the value of RETRY_LIMIT_${up}? Answer with the number only.`, expect: '8', stale: '3' },
          { split: 'held-out', changed: true, text: `RETRY_LIMIT_${up} is set to which number?`, expect: '8', stale: '3' },
        ],
      };
    case 'rename':
      return {
        apply: (root) => edit(root, (s) => s.replaceAll(`fetchRecord${tag}`, `loadEntry${tag}`)),
        questions: [
          { split: 'dev', changed: true, text: `Which function does run${tag} call? Answer with the function name only.`, expect: `loadEntry${tag}`, stale: `fetchRecord${tag}` },
          { split: 'held-out', changed: true, text: `run${tag} returns the result of calling which function?`, expect: `loadEntry${tag}`, stale: `fetchRecord${tag}` },
        ],
      };
    case 'add-function':
      return {
        apply: (root) => edit(root, (s) => s.replace(`function run${tag} ()`, `function scale${tag} (x) { return x * 11 }\nfunction run${tag} ()`)),
        questions: [
          { split: 'dev', changed: true, text: `What number does scale${tag} multiply its argument by? Answer with the number only.`, expect: '11', stale: '' },
          { split: 'held-out', changed: true, text: `scale${tag}(x) returns x times what?`, expect: '11', stale: '' },
        ],
      };
    case 'delete-file':
      return {
        apply: (root) => {
          fs.rmSync(path.join(root, rel));
          return [rel];
        },
        questions: [
          { split: 'dev', changed: true, text: `Is there a file named ${rel} in the repository? Answer yes or no.`, expect: 'no', stale: 'yes' },
          { split: 'held-out', changed: true, text: `Does the repository still contain the file ${rel}? Answer yes or no.`, expect: 'no', stale: 'yes' },
        ],
      };
    case 'add-file':
      return {
        apply: (root) => {
          fs.writeFileSync(path.join(root, 'feature-flags.js'), "'use strict'\n\nconst FEATURE_COLOR = 'teal'\n\nmodule.exports = { FEATURE_COLOR }\n");
          return ['feature-flags.js'];
        },
        questions: [
          { split: 'dev', changed: true, text: 'What is the value of FEATURE_COLOR? Answer with the value only.', expect: 'teal', stale: '' },
          { split: 'held-out', changed: true, text: 'FEATURE_COLOR is set to which color?', expect: 'teal', stale: '' },
        ],
      };
  }
}

/** Right: the answer holds the expected string (a whole word, any case; yes/no: the first word); stale: it holds the old one instead. */
function score(answer: string, q: Question): { right: boolean; stale: boolean } {
  const a = answer.toLowerCase();
  if (q.expect === 'no' || q.expect === 'yes') {
    const first = /\b(yes|no)\b/.exec(a)?.[1];
    return { right: first === q.expect, stale: first !== undefined && first === q.stale };
  }
  const has = (s: string) => s !== '' && new RegExp(`(^|[^a-z0-9_])${s.toLowerCase().replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}($|[^a-z0-9_])`).test(a);
  const right = has(q.expect);
  return { right, stale: !right && has(q.stale) };
}

async function main() {
  const { values } = parseArgs({ options: { model: { type: 'string' }, 'max-tokens': { type: 'string' }, budget: { type: 'string' }, edits: { type: 'string' }, positions: { type: 'string' }, strategies: { type: 'string' }, out: { type: 'string' } } });
  const bench = resolveBenchModel(values.model ?? 'smollm2');
  const maxTokens = Number(values['max-tokens'] ?? 16);
  const budget = Number(values.budget ?? 512);
  const strategies = (values.strategies ?? Object.keys(STRATEGIES).join(',')).split(',');
  for (const s of strategies) if (!STRATEGIES[s]) throw new Error(`--strategies: unknown ${s} (${Object.keys(STRATEGIES).join(', ')})`);
  const out = path.resolve(values.out ?? path.join(__dirname, '..', 'results', 'edits.json'));
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-edits-'));
  const root = path.join(tmp, 'repo');
  const source = path.join(__dirname, '..', '..', 'node_modules', 'semver', 'ranges');
  const version = (JSON.parse(fs.readFileSync(path.join(source, '..', 'package.json'), 'utf8')) as { version: string }).version;
  fs.cpSync(source, root, { recursive: true });
  // the 8 smallest files (about 1.2K tokens; this machine prefills SmolLM2 at 35-85 tok/s under load)
  for (const f of LEFT_OUT) fs.rmSync(path.join(root, f));
  const files = fs.readdirSync(root).filter((f) => f.endsWith('.js')).sort();
  const at: Record<Position, string> = { start: files[0]!, middle: files[Math.floor(files.length / 2)]!, end: files[files.length - 1]! };
  for (const p of Object.keys(at) as Position[]) {
    const abs = path.join(root, at[p]);
    const text = fs.readFileSync(abs, 'utf8');
    fs.writeFileSync(abs, text.replace("'use strict'\n", `'use strict'\n\n${planted(TAGS[p])}`));
  }
  // mtime order = path order = the git order of one commit
  files.forEach((f, i) => fs.utimesSync(path.join(root, f), 1_000_000 + i * 10, 1_000_000 + i * 10));
  const gitEnv = { ...process.env, GIT_AUTHOR_NAME: 'b', GIT_AUTHOR_EMAIL: 'b@example.com', GIT_COMMITTER_NAME: 'b', GIT_COMMITTER_EMAIL: 'b@example.com', GIT_AUTHOR_DATE: '@1000000 +0000', GIT_COMMITTER_DATE: '@1000000 +0000' };
  execFileSync('git', ['init', '-q', '-b', 'main'], { cwd: root, env: gitEnv });
  execFileSync('git', ['add', '-A'], { cwd: root, env: gitEnv });
  execFileSync('git', ['commit', '-q', '-m', 'base'], { cwd: root, env: gitEnv });
  files.forEach((f, i) => fs.utimesSync(path.join(root, f), 1_000_000 + i * 10, 1_000_000 + i * 10));
  const baseTree = new Map(files.map((f) => [f, fs.readFileSync(path.join(root, f))]));
  const reset = () => {
    for (const f of fs.readdirSync(root)) if (f.endsWith('.js') && !baseTree.has(f)) fs.rmSync(path.join(root, f));
    files.forEach((f, i) => {
      const abs = path.join(root, f);
      fs.writeFileSync(abs, baseTree.get(f)!);
      fs.utimesSync(abs, 1_000_000 + i * 10, 1_000_000 + i * 10);
    });
  };

  const model = await loadModel(bench.file);
  // every restore reads the disk, as a new process would
  const openStore = (name: string) => CacheStore.open(path.join(tmp, 'cache', name), { limits: { maxRamBytes: 0 } });
  let store = openStore('cold');
  const contextSize = 8192;
  const ask = async (question: string, order: PackOrder, afterEdit: AfterEdit, editBase?: PackResult): Promise<{ stats: AskStats; answer: string; pack: PackResult }> => {
    let answer = '';
    let pack: PackResult | undefined;
    const stats = await askRepository(
      { repo: root, question, model, store, contextSize, maxTokens, answerRoom: 64, snap: { ...SNAP_DEFAULTS, budget }, session: { flashAttention: 'auto' }, pack: { order }, afterEdit, ...(editBase ? { editBase } : {}) },
      (e) => {
        if (e.kind === 'token') answer += e.text;
        if (e.kind === 'packed') pack = e.pack;
      },
    );
    await store.flush();
    return { stats, answer, pack: pack! };
  };

  const kinds = (values.edits ?? 'literal,rename,add-function,delete-file,add-file').split(',') as EditKind[];
  const positions = (values.positions ?? 'start,middle,end').split(',') as Position[];
  const answers: Record<string, unknown>[] = [];
  const firsts: Record<string, unknown>[] = [];
  // the unedited prefix, cached for both orders (the same prompt here), and a cold question's TTFT for scale
  const cold = await ask('In which file is toComparators defined?', 'mtime', 'exact');
  console.error(`[edits] cold: L=${cold.stats.L} TTFT ${cold.stats.ttftMs.toFixed(0)} ms, files ${cold.pack.files.map((f) => f.path).join(' ')}`);
  const basePack: Record<string, PackResult> = { mtime: cold.pack };
  if (strategies.includes('exact-git')) basePack.git = (await ask('In which file is toComparators defined?', 'git', 'exact')).pack;
  // each edit and strategy starts from a copy of this cache (the unedited prefix only): what one
  // saved never serves another (an earlier edit of the same file already moved it last)
  let copies = 0;
  const freshStore = (): CacheStore => {
    const name = `copy-${++copies}`;
    fs.cpSync(path.join(tmp, 'cache', 'cold'), path.join(tmp, 'cache', name), { recursive: true });
    return openStore(name);
  };
  for (const kind of kinds) {
    for (const p of kind === 'add-file' ? (['end'] as Position[]).filter((q) => positions.includes(q)) : positions) {
      for (const name of strategies) {
        const s = STRATEGIES[name]!;
        store = freshStore();
        // the unedited prompt, whose prefix the cold question cached
        reset();
        const e = scriptedEdit(kind, p, at[p]);
        const touched = e.apply(root);
        for (const f of touched) if (fs.existsSync(path.join(root, f))) fs.utimesSync(path.join(root, f), 2_000_000, 2_000_000);
        const questions = [...e.questions, ...unchangedQuestions(p)];
        let first = true;
        for (const q of questions) {
          const r = await ask(q.text, s.order, s.afterEdit, basePack[s.order === 'git' ? 'git' : 'mtime']);
          const sc = score(r.answer, q);
          const row = { strategy: name, model: bench.label, edit: kind, position: p, file: at[p], split: q.split, changed: q.changed, question: q.text, expect: q.expect, answer: r.answer.trim(), right: sc.right, stale: sc.stale, first, ttftMs: Math.round(r.stats.ttftMs), prefilledTokens: r.stats.prefilledTokens, L: r.stats.L, cache: r.stats.cache, used: r.stats.edits?.used ?? 'exact', erratumTokens: r.stats.edits?.erratumTokens ?? 0 };
          answers.push(row);
          if (first) firsts.push(row);
          first = false;
        }
        fs.rmSync(path.join(tmp, 'cache', `copy-${copies}`), { recursive: true, force: true });
        const f = firsts[firsts.length - 1]!;
        console.error(`[edits] ${name} ${kind}@${p}: TTFT ${String(f.ttftMs)} ms, prefilled ${String(f.prefilledTokens)} (${String(f.used)}), right ${answers.filter((a) => a.strategy === name && a.edit === kind && a.position === p && a.right).length}/${questions.length}`);
      }
    }
  }
  reset();

  type Row = Record<string, unknown> & { right: boolean; stale: boolean; changed: boolean; split: Split; strategy: string; edit: string; position: string; first: boolean; ttftMs: number; prefilledTokens: number };
  const rows = answers as Row[];
  const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);
  const aggregate = (sel: Row[], group: Row[]) => ({
    n: sel.length,
    accuracy: Number(mean(sel.map((r) => (r.right ? 1 : 0))).toFixed(4)),
    stale: sel.filter((r) => r.stale).length,
    ttftMs: Math.round(mean(group.filter((r) => r.first).map((r) => r.ttftMs))),
    prefilledTokens: Math.round(mean(group.filter((r) => r.first).map((r) => r.prefilledTokens))),
  });
  const summary: Record<string, unknown>[] = [];
  const detail: Record<string, unknown>[] = [];
  for (const name of strategies) {
    const mine = rows.filter((r) => r.strategy === name);
    for (const kind of kinds) {
      for (const p of kind === 'add-file' ? ['end'].filter((q) => positions.includes(q as Position)) : positions) {
        const group = mine.filter((r) => r.edit === kind && r.position === p);
        summary.push({ strategy: name, model: bench.label, edit: kind, position: p, ...aggregate(group.filter((r) => r.changed), group) });
      }
    }
    summary.push({ strategy: name, model: bench.label, edit: 'all', position: 'all', ...aggregate(mine.filter((r) => r.changed), mine) });
    for (const changed of [true, false]) {
      for (const split of ['dev', 'held-out'] as Split[]) {
        detail.push({ strategy: name, model: bench.label, questions: changed ? 'changed' : 'unchanged', split, ...aggregate(mine.filter((r) => r.changed === changed && r.split === split), mine) });
      }
    }
  }
  const lines = [
    `model ${bench.label}, semver ${version} ranges/ (${files.length} files) + planted blocks, cold L = ${cold.stats.L}, cold TTFT ${cold.stats.ttftMs.toFixed(0)} ms, B = ${budget}, ${new Date().toISOString()}`,
    '| strategy | questions | split | n | accuracy | stale | next-question TTFT ms | prefilled tokens |',
    '|---|---|---|---|---|---|---|---|',
    ...detail.map((d) => `| ${String(d.strategy)} | ${String(d.questions)} | ${String(d.split)} | ${String(d.n)} | ${(100 * (d.accuracy as number)).toFixed(1)} % | ${String(d.stale)} | ${String(d.ttftMs)} | ${String(d.prefilledTokens)} |`),
    '',
    '| strategy | edit | position | n | accuracy (changed) | stale | TTFT ms | prefilled |',
    '|---|---|---|---|---|---|---|---|',
    ...summary.map((s) => `| ${String(s.strategy)} | ${String(s.edit)} | ${String(s.position)} | ${String(s.n)} | ${(100 * (s.accuracy as number)).toFixed(1)} % | ${String(s.stale)} | ${String(s.ttftMs)} | ${String(s.prefilledTokens)} |`),
  ];
  console.log(lines.join('\n'));
  let all: Record<string, unknown> = {};
  if (fs.existsSync(out)) all = JSON.parse(fs.readFileSync(out, 'utf8')) as Record<string, unknown>;
  const prior = (all.runs as Record<string, unknown>[] | undefined) ?? [];
  const run = { model: bench.label, repository: `semver@${version} ranges/ + planted blocks`, files: files.length, coldL: cold.stats.L, coldTtftMs: Math.round(cold.stats.ttftMs), budget, maxTokens, date: new Date().toISOString(), detail, answers };
  // a run replaces the earlier results of its model and strategies only
  const replaced = (r: Record<string, unknown>) => r.model === bench.label && strategies.includes(r.strategy as string);
  const runs = [...prior.map((r) => (r.model === bench.label ? { ...r, detail: (r.detail as Record<string, unknown>[]).filter((d) => !replaced(d)), answers: (r.answers as Record<string, unknown>[]).filter((a) => !replaced(a)) } : r)).filter((r) => (r.answers as unknown[]).length > 0), { ...run, strategies }];
  const summaries = [...((all.summary as Record<string, unknown>[] | undefined) ?? []).filter((s) => !replaced(s)), ...summary];
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, JSON.stringify({ summary: summaries, runs }, null, 1) + '\n');
  console.error(`wrote ${path.relative(process.cwd(), out)}`);
  model.dispose();
  fs.rmSync(tmp, { recursive: true, force: true });
}

void main();
