/**
 * bench/edits/replay: the prompt orders against a real git history (issue 30, strategy (a)
 * "exact suffix"). Replays the last N first-parent commits of a repository as edits and, for each
 * order, counts the tokens an exact prefix cache prefills again after each one: the prompt's
 * tokens from the first changed token on. No decoding; only the packer and the model's tokenizer.
 *
 *   node --import tsx bench/edits/replay.ts [--repo /work/main] [--commits 50] [--include src/]
 *        [--model smollm2] [--out bench/results/edits-replay.json]
 *
 * Each commit is two steps in a clone of the repository: the edit (work tree and index at the
 * commit, `HEAD` still at its parent: the files are saved, not yet committed; edited files get the
 * commit's time as mtime) and the commit (`HEAD` moves to it; the git order may move files again).
 * A question is asked after each step; a step's cost is the prefilled tokens. Orders:
 *   mtime (worked-in): each file's mtime is its last change's commit time at the start;
 *   mtime (fresh clone): every file has the same mtime at the start (a clone or checkout);
 *   git last-change: pack-order.ts's git order ranked by the last change's commit time;
 *   git count H=10 / H=50 / H=∞: ranked by the commit count decayed at half-lives of 10, 50 commits, and plain;
 *   path.
 * The files in scope are packed whole (no budget), so only the order changes the cost.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadModel } from '../../src/engine/model';
import { packRepository, type PackedFile } from '../../src/context/pack';
import { compareMtime, orderFiles } from '../../src/context/pack-order';
import { compareCodeUnits } from '../../src/context/types';
import { resolveBenchModel } from '../models';

/** One order the replay measures. */
interface Variant {
  name: string;
  /** Sorts the files of one state (their `mtimeMs` is the simulated worked-in mtime). */
  sort: (root: string, files: PackedFile[], fresh: Map<string, number>) => Promise<PackedFile[]>;
}

const git = (cwd: string, ...args: string[]): string => execFileSync('git', ['-c', 'core.fsmonitor=false', ...args], { cwd, encoding: 'utf8', maxBuffer: 1 << 28 });

async function main() {
  const { values } = parseArgs({ options: { repo: { type: 'string' }, commits: { type: 'string' }, include: { type: 'string', multiple: true }, model: { type: 'string' }, out: { type: 'string' } } });
  const source = path.resolve(values.repo ?? '/work/main');
  const n = Number(values.commits ?? 50);
  const include = values.include ?? [];
  const bench = resolveBenchModel(values.model ?? 'smollm2');
  const out = path.resolve(values.out ?? path.join(__dirname, '..', 'results', 'edits-replay.json'));
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-replay-'));
  const root = path.join(tmp, 'repo');
  execFileSync('git', ['clone', '-q', '--no-checkout', source, root]);
  const commits = git(root, 'rev-list', '--first-parent', `-n${n + 1}`, 'HEAD').trim().split('\n').reverse();
  const model = await loadModel(bench.file);
  const memo = new Map<string, Int32Array>();
  const tokensOf = (text: string): Int32Array => {
    let t = memo.get(text);
    if (!t) memo.set(text, (t = model.tokenize(text)));
    return t;
  };

  // the worked-in mtimes: each file's last change's commit time at the start, then each edit's
  const mtimes = new Map<string, number>();
  git(root, 'reset', '-q', '--hard', commits[0]!);
  const lastChange = git(root, 'log', '--format=%x01%ct', '--name-only', '--no-renames', 'HEAD');
  for (const chunk of lastChange.split('\x01').reverse()) {
    const [time, ...paths] = chunk.trim().split('\n');
    for (const p of paths) if (p !== '') mtimes.set(p, Number(time) * 1000);
  }
  const fresh = new Map<string, number>(); // fresh clone: every file the same mtime at the start, then each edit's
  const applyMtimes = () => {
    for (const [p, ms] of mtimes) {
      const abs = path.join(root, p);
      if (fs.existsSync(abs)) fs.utimesSync(abs, ms / 1000, ms / 1000);
    }
  };
  applyMtimes();

  const byFresh = (files: PackedFile[], map: Map<string, number>) => [...files].sort((a, b) => (map.get(a.path) ?? 0) - (map.get(b.path) ?? 0) || compareCodeUnits(a.path, b.path));
  const variants: Variant[] = [
    { name: 'mtime (worked-in)', sort: async (_r, files) => [...files].sort(compareMtime) },
    { name: 'mtime (fresh clone)', sort: async (_r, files, map) => byFresh(files, map) },
    { name: 'git last-change', sort: async (r, files) => (await orderFiles(r, files, 'git', { rank: 'last-change' })).files },
    ...[10, 50, Infinity].map((h) => ({ name: `git count H=${h === Infinity ? '∞' : h}`, sort: async (r: string, files: PackedFile[]) => (await orderFiles(r, files, 'git', { rank: 'decayed-count', halfLife: h })).files })),
    { name: 'path', sort: async (_r, files) => [...files].sort((a, b) => compareCodeUnits(a.path, b.path)) },
  ];
  const packState = async () => (await packRepository(root, { tokenBudget: Infinity, countTokens: (t) => tokensOf(t).length, include, order: 'path' })).files;
  const stream = (files: PackedFile[]) => files.map((f) => tokensOf(f.text));
  /** Tokens from the first changed token on (of the new stream). */
  const prefilled = (before: Int32Array[], after: Int32Array[]): number => {
    let total = 0;
    for (const s of after) total += s.length;
    let same = 0;
    for (let i = 0; i < Math.min(before.length, after.length); i++) {
      const a = before[i]!;
      const b = after[i]!;
      let j = 0;
      while (j < a.length && j < b.length && a[j] === b[j]) j++;
      same += j;
      if (j < a.length || j < b.length) break;
    }
    return total - same;
  };

  let files = await packState();
  const prev = new Map<string, Int32Array[]>();
  for (const v of variants) prev.set(v.name, stream(await v.sort(root, files, fresh)));
  const rows: { commit: string; changed: number; promptTokens: number; edit: Record<string, number>; commit_: Record<string, number> }[] = [];
  for (let i = 1; i < commits.length; i++) {
    const c = commits[i]!;
    const changed = git(root, 'diff', '--name-only', '--no-renames', commits[i - 1]!, c).trim().split('\n').filter((p) => p !== '');
    const time = Number(git(root, 'show', '-s', '--format=%ct', c).trim()) * 1000;
    // the edit: work tree and index at c, HEAD at its parent; the edited files' mtime is c's time
    git(root, 'reset', '-q', '--hard', c);
    git(root, 'reset', '-q', '--soft', commits[i - 1]!);
    const max = Math.max(0, ...mtimes.values());
    changed.forEach((p, k) => {
      const ms = Math.max(time, max + 1000) + k; // later than every earlier edit
      mtimes.set(p, ms);
      fresh.set(p, ms);
    });
    applyMtimes();
    files = await packState();
    const row = { commit: c.slice(0, 9), changed: changed.length, promptTokens: 0, edit: {} as Record<string, number>, commit_: {} as Record<string, number> };
    for (const v of variants) {
      const s = stream(await v.sort(root, files, fresh));
      row.promptTokens = s.reduce((t, x) => t + x.length, 0);
      row.edit[v.name] = prefilled(prev.get(v.name)!, s);
      prev.set(v.name, s);
    }
    // the commit: HEAD moves to c (only the git order can change)
    git(root, 'reset', '-q', '--soft', c);
    for (const v of variants) {
      const s = stream(await v.sort(root, files, fresh));
      row.commit_[v.name] = prefilled(prev.get(v.name)!, s);
      prev.set(v.name, s);
    }
    rows.push(row);
    console.error(`[replay] ${i}/${commits.length - 1} ${row.commit} files=${row.changed} L=${row.promptTokens} ` + variants.map((v) => `${v.name}=${row.edit[v.name]}+${row.commit_[v.name]}`).join(' '));
  }
  const median = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return s.length === 0 ? 0 : s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
  };
  const touching = rows.filter((r) => variants.some((v) => r.edit[v.name]! + r.commit_[v.name]! > 0));
  const summary = variants.map((v) => {
    const per = rows.map((r) => r.edit[v.name]! + r.commit_[v.name]!);
    const share = rows.map((r, k) => (r.promptTokens > 0 ? per[k]! / r.promptTokens : 0));
    return {
      order: v.name,
      commits: rows.length,
      meanPrefilled: Math.round(per.reduce((a, b) => a + b, 0) / rows.length),
      medianPrefilled: median(per),
      meanEditStep: Math.round(rows.reduce((a, r) => a + r.edit[v.name]!, 0) / rows.length),
      meanCommitStep: Math.round(rows.reduce((a, r) => a + r.commit_[v.name]!, 0) / rows.length),
      meanShareOfPrompt: Number((share.reduce((a, b) => a + b, 0) / rows.length).toFixed(4)),
      totalPrefilled: per.reduce((a, b) => a + b, 0),
    };
  });
  const lines = [
    `repository ${source} (${include.length ? include.join(' ') : 'whole'}), last ${rows.length} first-parent commits (${touching.length} cost tokens in some order), tokenizer ${bench.label}, prompt ≈ ${rows[rows.length - 1]?.promptTokens} tokens`,
    '| order | mean prefilled / commit | median | edit step | commit step | share of prompt |',
    '|---|---|---|---|---|---|',
    ...summary.map((s) => `| ${s.order} | ${s.meanPrefilled} | ${s.medianPrefilled} | ${s.meanEditStep} | ${s.meanCommitStep} | ${(100 * s.meanShareOfPrompt).toFixed(1)} % |`),
  ];
  console.log(lines.join('\n'));
  let all: Record<string, unknown> = {};
  if (fs.existsSync(out)) all = JSON.parse(fs.readFileSync(out, 'utf8')) as Record<string, unknown>;
  all[include.length ? include.join(',') : '.'] = { repository: source, commits: commits.map((c) => c.slice(0, 9)), model: bench.label, date: new Date().toISOString(), summary, rows };
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, JSON.stringify(all, null, 1) + '\n');
  console.error(`wrote ${path.relative(process.cwd(), out)}`);
  model.dispose();
  fs.rmSync(tmp, { recursive: true, force: true });
}

void main();
