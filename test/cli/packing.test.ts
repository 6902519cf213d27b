/**
 * `reposnap ask --packing` and `--retrieval-share` (issue 15) as a user runs them: a child process
 * on a fixture repository larger than a 2,048-token context, with the tiny model. The ranked
 * packing puts a file tree and a repository map in the prompt (`--json`: `context.sections`),
 * names the files only in the map (`map`) and those whose chunks were retrieved (`retrieved`),
 * and the stats line counts them; a bad share is refused with one clear line.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DEFAULT_SETTINGS } from '../../src/config/settings';
import { after, before, test } from 'node:test';
import type { ContextReport } from '../../src/pipeline/context-report';
import { checkTinyModel } from '../helpers/models';

const ROOT = path.resolve(__dirname, '..', '..');
const BIN = path.join(ROOT, 'bin', 'reposnap.js');
let repo: string;

/** A TypeScript file of `n` small exported functions named `<prefix>0 …`, each calling `helper`. */
function functions(prefix: string, n: number): string {
  let s = "import { helper } from './util';\n\n";
  for (let i = 0; i < n; i++) s += `export function ${prefix}${i}(x: number): number {\n  const y = helper(x) * ${i + 2};\n  return y - ${i};\n}\n\n`;
  return s;
}

before(() => {
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-cli-packing-'));
  fs.mkdirSync(path.join(repo, 'src'));
  fs.writeFileSync(path.join(repo, 'src', 'util.ts'), 'export function helper(x: number): number {\n  return x + 1;\n}\n');
  fs.writeFileSync(path.join(repo, 'src', 'alpha.ts'), functions('alpha', 30));
  fs.writeFileSync(path.join(repo, 'src', 'beta.ts'), functions('beta', 30));
  fs.writeFileSync(path.join(repo, 'src', 'gamma.ts'), functions('gamma', 30));
});
after(() => fs.rmSync(repo, { recursive: true, force: true }));

/** `reposnap ask` on the fixture; `--answer-room 2` packs for the 2-token answer, as the fixture's sizes were chosen for. */
function run(...args: string[]) {
  return spawnSync(
    process.execPath,
    [BIN, 'ask', '--no-cache', '--repo', repo, '--model', checkTinyModel(), '--context-size', '2048', '--max-tokens', '2', '--answer-room', '2', '--threads', '2', ...args, 'What does gamma7 return?'],
    { encoding: 'utf8', timeout: 120_000 },
  );
}

function askJson(...args: string[]) {
  const r = run('--json', ...args);
  assert.equal(r.status, 0, r.stderr);
  const stats = JSON.parse(r.stderr.trim().split('\n').pop()!) as { L: number; context: ContextReport };
  return stats.context;
}

test('--packing ranked: the file tree and the repository map are sections of the prompt; map-only files say so', () => {
  const context = askJson('--packing', 'ranked', '--retrieval-share', '0');
  const kinds = context.sections.map((s) => s.kind);
  assert.ok(kinds.includes('tree') && kinds.includes('map'), `sections: ${kinds.join(', ')}`);
  for (const s of context.sections) assert.ok(Number.isInteger(s.tokens) && s.tokens > 0, `${s.kind}: ${s.tokens} tokens`);
  assert.equal(context.summary.packing, 'ranked');
  const mapped = context.files.filter((f) => f.status === 'map');
  assert.ok(mapped.length >= 1, JSON.stringify(context.files));
  // a map-only file's tokens are its block in the map, its kept share is over that block's span
  const mapSection = context.sections.find((s) => s.kind === 'map')!;
  for (const f of mapped) {
    assert.ok(Number.isInteger(f.tokens) && f.tokens! > 0 && f.keptShare !== null && f.keptShare >= 0 && f.keptShare <= 1, JSON.stringify(f));
  }
  const mappedTokens = mapped.reduce((sum, f) => sum + f.tokens!, 0);
  assert.ok(mappedTokens <= mapSection.tokens, `map blocks ${mappedTokens} tokens within the map's ${mapSection.tokens}`);
  assert.equal(context.summary.mappedFiles, mapped.length);
  assert.equal(context.summary.retrievedFiles, 0, 'no retrieval with --retrieval-share 0');
  // the four files are all accounted for: in full, in the map, or left out
  assert.deepEqual(context.files.map((f) => f.path).sort(), ['src/alpha.ts', 'src/beta.ts', 'src/gamma.ts', 'src/util.ts']);
});

test('--packing ranked without --retrieval-share retrieves with the extension\'s default share (reposnap.retrievalShare, 0.15)', () => {
  const byDefault = askJson('--packing', 'ranked');
  const explicit = askJson('--packing', 'ranked', '--retrieval-share', String(DEFAULT_SETTINGS.retrievalShare));
  assert.equal(DEFAULT_SETTINGS.retrievalShare, 0.15);
  assert.deepEqual(byDefault.sections, explicit.sections);
  assert.deepEqual(byDefault.files, explicit.files);
  assert.ok(byDefault.sections.some((s) => s.kind === 'retrieval'), `sections: ${byDefault.sections.map((s) => s.kind).join(', ')}`);
});

test('--packing smallest-first has no tree or map, and every file is full or left out', () => {
  const context = askJson('--packing', 'smallest-first');
  assert.deepEqual(context.sections, []);
  assert.equal(context.summary.packing, 'smallest-first');
  assert.equal(context.summary.packingAuto, undefined);
  assert.deepEqual([...new Set(context.files.map((f) => f.status))].sort(), ['full', 'left-out']);
});

test('without --packing (auto), a repository larger than the context is asked as --packing ranked asks it, and the stats line, --json and --show-context say auto chose ranked', () => {
  const byDefault = askJson();
  const ranked = askJson('--packing', 'ranked', '--retrieval-share', '0.15');
  assert.deepEqual([byDefault.summary.packing, byDefault.summary.packingAuto, ranked.summary.packingAuto], ['ranked', true, undefined]);
  assert.deepEqual(byDefault.sections, ranked.sections);
  assert.deepEqual(byDefault.files, ranked.files);
  assert.ok(byDefault.sections.some((s) => s.kind === 'retrieval'), `sections: ${byDefault.sections.map((s) => s.kind).join(', ')}`);
  const r = run('--show-context');
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stderr.trim().split('\n');
  assert.ok(lines.includes('packing: auto chose ranked (not every file fits in full)'), r.stderr);
  const m = / packing=auto:ranked mapped=(\d+) retrieved=(\d+) /.exec(lines.pop()!);
  assert.ok(m, r.stderr);
  assert.deepEqual([Number(m[1]), Number(m[2])], [byDefault.summary.mappedFiles, byDefault.summary.retrievedFiles]);
  // --packing auto is the default by name too; on the part of the fixture that fits, auto packs smallest-first
  assert.deepEqual(askJson('--packing', 'auto').sections, byDefault.sections);
  const fits = run('--include', 'src/util.ts');
  assert.equal(fits.status, 0, fits.stderr);
  assert.match(fits.stderr.trim().split('\n').pop()!, / files=1 skipped=0 packing=auto:smallest-first pack_ms=/);
});

test('--retrieval-share: the chunks retrieved for the question name their files; the stats line counts map and retrieved files', () => {
  const r = run('--packing', 'ranked', '--retrieval-share', '0.3');
  assert.equal(r.status, 0, r.stderr);
  const line = r.stderr.trim().split('\n').pop()!;
  const m = / packing=ranked mapped=(\d+) retrieved=(\d+) /.exec(line);
  assert.ok(m, line);
  assert.ok(Number(m[2]) >= 1, `retrieved files: ${line}`);
  const context = askJson('--packing', 'ranked', '--retrieval-share', '0.3');
  const retrieved = context.files.filter((f) => f.status === 'retrieved');
  assert.deepEqual([retrieved.length, context.files.filter((f) => f.status === 'map').length], [Number(m[2]), Number(m[1])]);
  assert.ok(retrieved.some((f) => f.path === 'src/gamma.ts'), `gamma7 is asked about: ${JSON.stringify(retrieved)}`);
  // a retrieved file's tokens are its chunks' in the retrieval section, its kept share over their spans
  for (const f of retrieved) {
    assert.ok(Number.isInteger(f.tokens) && f.tokens! > 0 && f.keptShare !== null && f.keptShare >= 0 && f.keptShare <= 1, JSON.stringify(f));
  }
  const section = context.sections.find((s) => s.kind === 'retrieval');
  assert.ok(section && section.tokens > 0 && section.keptShare !== null, JSON.stringify(context.sections));
  const retrievedTokens = retrieved.reduce((sum, f) => sum + f.tokens!, 0);
  assert.ok(retrievedTokens <= section.tokens, `retrieved chunks ${retrievedTokens} tokens within the section's ${section.tokens}`);
});

test('a bad --retrieval-share or --packing is one usage line and exit 2', () => {
  for (const [args, message] of [
    [['--packing', 'ranked', '--retrieval-share', '1'], "--retrieval-share must be a number with 0 <= F < 1, the share of the context for retrieved chunks (got '1'); e.g. --retrieval-share 0.15"],
    [['--packing', 'ranked', '--retrieval-share', 'lots'], "--retrieval-share must be a number with 0 <= F < 1, the share of the context for retrieved chunks (got 'lots'); e.g. --retrieval-share 0.15"],
    [['--packing', 'ranked', '--retrieval-share=-0.1'], "--retrieval-share must be a number with 0 <= F < 1, the share of the context for retrieved chunks (got '-0.1'); e.g. --retrieval-share 0.15"],
    [['--packing', 'smallest-first', '--retrieval-share', '0.2'], '--retrieval-share needs --packing ranked or auto (retrieval quotes files the ranked packing left out of the full text)'],
    [['--packing', 'biggest'], "--packing must be auto, smallest-first or ranked (got 'biggest')"],
  ] as [string[], string][]) {
    const r = run(...args);
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.equal(r.stderr.trim(), `reposnap: error: ${message}\nrun 'reposnap --help' for usage`, args.join(' '));
  }
  const j = run('--json', '--packing', 'ranked', '--retrieval-share', '1.5');
  assert.equal(j.status, 2);
  assert.equal(JSON.parse(j.stderr.trim()).error.code, 'usage');
});
