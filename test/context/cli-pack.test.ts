/**
 * `reposnap pack`: the manifest and totals as text and JSON, approximate and model token
 * counts, usage errors. Runs in-process (runPack with captured output), plus one child
 * process through the real entry point.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { runPack, type PackIo } from '../../src/cli/pack';
import { UsageError } from '../../src/cli/usage';
import { PatternError } from '../../src/context/errors';
import { loadModel } from '../../src/engine/model';
import { packRepository } from '../../src/context/pack';
import { checkTinyModel } from '../helpers/models';
import { randomChars } from './fake-secrets';
import { expectedSection, makeRepo } from './fixtures';

const ROOT = path.resolve(__dirname, '..', '..');

async function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const io: PackIo = { stdout: (s) => void (stdout += s), stderr: (s) => void (stderr += s), isTTY: false };
  const code = await runPack(args, io);
  return { code, stdout, stderr };
}

const TREE = {
  '.gitignore': 'ignored.txt\n',
  'ignored.txt': 'x',
  'a.ts': 'export const a = 1;\n', // 20 bytes: section 'a.ts\n```\n' + 20 + '```\n' = 33 bytes → 9 tokens
  'big.md': 'word '.repeat(40) + '\n', // 201 bytes: section 216 bytes → 54 tokens
  'my file.txt': 'spaces\n',
  'yarn.lock': 'x',
  'pic.png': 'x',
};

test('pack --list prints every path with its tokens or reason, then the totals (approximate tokenizer)', async (t) => {
  const root = await makeRepo(t, TREE);
  const { code, stdout, stderr } = await run(['--repo', root, '--list', '--budget', '40', '--packing', 'smallest-first']);
  assert.equal(code, 0);
  assert.equal(stderr, '');
  assert.equal(
    stdout,
    [
      '  tokens  status       path',
      '       8  included     .gitignore',
      '       9  included     a.ts',
      '       7  included     "my file.txt"',
      '       -  over-budget  big.md  (not tokenized: needs about 25+ tokens, 16 of 40 left (larger files are dropped first))',
      "       -  ignored      ignored.txt  (.gitignore:1:ignored.txt)",
      "       -  binary       pic.png  (binary file extension '.png')",
      "       -  excluded     yarn.lock  (default exclude 'yarn.lock')",
      '',
      `repository  ${root}`,
      'tokenizer   approximate: ceil(UTF-8 bytes / 4) per section; pass --model <file.gguf> for exact counts',
      'order       mtime (least recently modified first, ties by path)',
      'budget      40 tokens (largest files left out first)',
      'included    3 files, 39 bytes, 24 tokens',
      'left out    1 binary, 1 excluded, 1 ignored, 1 over-budget',
      '',
    ].join('\n'),
  );
});

test('pack --list writes no terminal control character a hostile repository put in a file name or a symlink target', async (t) => {
  // ESC ] 0 ; … BEL sets the window title; ESC [ 2 J clears the screen; U+009B is a one-character
  // CSI; U+202E shows what follows reversed
  const root = await makeRepo(t, {
    'title\u001b]0;owned\u0007.ts': 'export const a = 1;\n',
    'csi\u009b31m.ts': 'x\n',
    'txt.\u202ets': 'y\n',
    'clear': { symlink: '/tmp/\u001b[2J\u001b[Hgone' },
  });
  const { code, stdout } = await run(['--repo', root, '--list', '--order', 'path']);
  assert.equal(code, 0);
  assert.ok(!/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/u.test(stdout), JSON.stringify(stdout));
  // the tokens column is the packer's business here: compare status, path and detail
  assert.deepEqual(stdout.split('\n').slice(1, 5).map((l) => l.slice(10)).sort(), [
    'included  "csi\\u009b31m.ts"',
    'included  "title\\u001b]0;owned\\u0007.ts"',
    'included  "txt.\\u202ets"',
    'symlink   clear  (dangling (-> /tmp/\\u001b[2J\\u001b[Hgone); not followed)',
  ]);
});

test('pack --json prints one object; --model counts tokens with the model', async (t) => {
  const root = await makeRepo(t, TREE);
  const approx = JSON.parse((await run(['--repo', root, '--json', '--no-default-excludes', '--order', 'path'])).stdout);
  assert.deepEqual(approx.tokenizer, { kind: 'approximate', rule: 'ceil(utf8Bytes / 4) per section' });
  assert.equal(approx.tokenBudget, null);
  assert.equal(approx.order, 'path');
  assert.deepEqual(
    approx.entries.map((e: { path: string; status: string }) => [e.path, e.status]),
    [
      ['.gitignore', 'included'],
      ['a.ts', 'included'],
      ['big.md', 'included'],
      ['my file.txt', 'included'],
      ['yarn.lock', 'included'],
      ['ignored.txt', 'ignored'],
      ['pic.png', 'binary'],
    ],
  );
  assert.deepEqual(approx.totals, { files: 5, bytes: 12 + 20 + 201 + 7 + 1, tokens: 8 + 9 + 54 + 7 + 5, leftOut: { ignored: 1, binary: 1 } });

  const modelPath = checkTinyModel();
  const exact = JSON.parse((await run(['--repo', root, '--json', '--model', modelPath])).stdout);
  assert.deepEqual(exact.tokenizer, { kind: 'model', model: modelPath });
  const model = await loadModel(modelPath);
  try {
    const aTs = exact.entries.find((e: { path: string }) => e.path === 'a.ts');
    assert.equal(aTs.tokens, model.tokenize(expectedSection('a.ts', TREE['a.ts'])).length);
  } finally {
    model.dispose();
  }
});

test('pack: usage errors', async (t) => {
  const root = await makeRepo(t, { 'a.txt': 'x' });
  await assert.rejects(run(['--repo', path.join(root, 'missing')]), (e: Error) => e instanceof UsageError && /does not exist/.test(e.message));
  await assert.rejects(run(['--repo', root, '--order', 'size']), /--order must be git, mtime or path/);
  await assert.rejects(run(['--repo', root, '--budget=-1']), /--budget must be an integer/);
  await assert.rejects(run(['--repo', root, '--model', path.join(root, 'none.gguf')]), /model file .* does not exist/);
  await assert.rejects(run(['--frobnicate']), UsageError);
  assert.match((await run(['--help'])).stdout, /^usage: reposnap pack/);
});

/** A TypeScript repository whose definitions reference each other (the ranked packing's PageRank has edges), and a README. */
const RANKED_TREE = {
  'src/store.ts': 'export function saveEntry(key: string): string {\n  return hashKey(key) + "/entry";\n}\n'.repeat(3) + 'export const STORE_LIMIT = 8;\n',
  'src/hash.ts': 'export function hashKey(key: string): string {\n  return key.split("").reverse().join("");\n}\n',
  'src/cli.ts': 'import { saveEntry } from "./store";\nimport { hashKey } from "./hash";\nexport function main(args: string[]): void {\n  for (const a of args) console.log(saveEntry(a), hashKey(a));\n}\n',
  'src/util.ts': 'export function clamp(x: number, lo: number, hi: number): number {\n  return Math.min(hi, Math.max(lo, x));\n}\n'.repeat(4),
  'README.md': '# tiny\n\nA store with hashed keys.\n'.repeat(6),
};

test('pack --packing ranked lists what ask would pack with the ranked packing: the same choice as packRepository makes', async (t) => {
  const root = await makeRepo(t, RANKED_TREE);
  const budget = 160;
  const { code, stdout } = await run(['--repo', root, '--packing', 'ranked', '--budget', String(budget), '--json']);
  assert.equal(code, 0);
  const json = JSON.parse(stdout);
  assert.equal(json.packing, 'ranked');
  // the reference: the packer itself, with pack's approximate tokenizer
  const direct = await packRepository(root, { tokenBudget: budget, packing: 'ranked', countTokens: (text) => Math.ceil(Buffer.byteLength(text, 'utf8') / 4) });
  assert.deepEqual(
    json.entries.filter((e: { status: string }) => e.status === 'included').map((e: { path: string }) => e.path),
    direct.files.map((f) => f.path),
  );
  assert.ok(direct.sections.some((sec) => sec.kind === 'tree'), 'the ranked packing has a file tree');
  assert.ok(direct.files.length < Object.keys(RANKED_TREE).length, 'the budget leaves files out of the full text');
  assert.equal(json.totals.tokens, direct.totalTokens);
  assert.ok(json.totals.tokens <= budget);
  const text = (await run(['--repo', root, '--packing', 'ranked', '--budget', String(budget)])).stdout;
  const sectionTokens = (kind: string) => direct.sections.filter((sec) => sec.kind === kind).reduce((n, sec) => n + sec.tokens, 0);
  const parts = [['tree', 'file tree'], ['file', 'files in full'], ['map', 'repository map']].filter(([kind]) => direct.sections.some((sec) => sec.kind === kind));
  assert.match(text, new RegExp(`\npacking     ranked: ${parts.map(([kind, label]) => `${label} ${sectionTokens(kind!)} tokens`).join(', ')}\n`));
  assert.match(text, new RegExp(`\nbudget      ${budget} tokens \\(files chosen by rank\\)\n`));
  // smallest-first is still chosen by name; the default (auto) packs this budget ranked, as the
  // explicit ranked did, and says that auto chose it; the same flag's errors as ask's
  const smallest = JSON.parse((await run(['--repo', root, '--budget', String(budget), '--json', '--packing', 'smallest-first'])).stdout);
  assert.deepEqual([smallest.packing, smallest.packingAuto], ['smallest-first', false]);
  const byDefault = JSON.parse((await run(['--repo', root, '--budget', String(budget), '--json'])).stdout);
  assert.deepEqual([byDefault.packing, byDefault.packingAuto, json.packingAuto], ['ranked', true, false]);
  assert.deepEqual(byDefault.entries, json.entries);
  await assert.rejects(run(['--repo', root, '--packing', 'biggest']), (e: Error) => e instanceof UsageError && e.message === "--packing must be auto, smallest-first or ranked (got 'biggest')");
  await assert.rejects(run(['--repo', root, '--packing', 'ranked']), (e: Error) => e instanceof UsageError && /--packing ranked needs --budget <n>/.test(e.message));
  assert.match((await run(['--help'])).stdout, /--packing auto\|smallest-first\|ranked\n +how files are chosen when the repository does not fit \(default auto\);/);
});

test('pack --packing auto (the default) says what it chose: smallest-first while every file fits the budget in full, ranked from one token less', async (t) => {
  const root = await makeRepo(t, TREE);
  // TREE's text sections, by hand (ceil(UTF-8 bytes / 4)): .gitignore 31 bytes → 8, a.ts 33 → 9,
  // "my file.txt" 30 → 7 (quoted path in the header), big.md 216 → 54: 78 tokens in all
  const fits = await run(['--repo', root, '--budget', '78', '--packing', 'auto']);
  const smallest = await run(['--repo', root, '--budget', '78', '--packing', 'smallest-first']);
  assert.equal(fits.code, 0);
  const totals = (text: string) => text.split('\n').filter((l) => !l.startsWith('packing '));
  assert.deepEqual(totals(fits.stdout), totals(smallest.stdout), 'auto lists exactly what smallest-first lists');
  assert.match(fits.stdout, /\npacking     auto chose smallest-first \(every file fits in full\)\nbudget      78 tokens \(largest files left out first\)\nincluded    4 files, 240 bytes, 78 tokens\n/);
  assert.doesNotMatch(smallest.stdout, /\npacking /);
  const tight = await run(['--repo', root, '--budget', '77']);
  const rankedText = (await run(['--repo', root, '--budget', '77', '--packing', 'ranked'])).stdout;
  // the ranked packing's sections, as explicit ranked lists them, after what auto chose
  const sectionsLine = /\npacking     ranked: (.+)\n/.exec(rankedText)![1]!;
  assert.equal(tight.stdout, rankedText.replace('\npacking     ranked: ', '\npacking     auto chose ranked (not every file fits in full): '));
  assert.match(tight.stdout, new RegExp(`\npacking     auto chose ranked \\(not every file fits in full\\): ${sectionsLine}\nbudget      77 tokens \\(files chosen by rank\\)\n`));
  const tightJson = JSON.parse((await run(['--repo', root, '--budget', '77', '--json'])).stdout);
  const ranked = JSON.parse((await run(['--repo', root, '--budget', '77', '--json', '--packing', 'ranked'])).stdout);
  assert.deepEqual([tightJson.packing, tightJson.packingAuto], ['ranked', true]);
  assert.deepEqual([tightJson.entries, tightJson.totals], [ranked.entries, ranked.totals]);
  // no budget: every file fits
  const unbounded = JSON.parse((await run(['--repo', root, '--json'])).stdout);
  assert.deepEqual([unbounded.packing, unbounded.packingAuto, unbounded.totals.tokens], ['smallest-first', true, 78]);
});

test('reposnap pack through the command-line entry point', async (t) => {
  const root = await makeRepo(t, { 'src/x.ts': 'export {};\n', 'node_modules/y/index.js': 'x' });
  const r = spawnSync(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src', 'cli', 'main.ts'), 'pack', '--repo', root, '--include', 'src/', '--json'], {
    encoding: 'utf8',
    cwd: ROOT,
    timeout: 60_000,
  });
  assert.equal(r.status, 0, r.stderr);
  const json = JSON.parse(r.stdout);
  assert.deepEqual(
    json.entries.map((e: { path: string; status: string }) => [e.path, e.status]),
    [
      ['src/x.ts', 'included'],
      ['node_modules/', 'excluded'],
    ],
  );
});

test('pack --list names each secret left out: credential files by rule, secret content by rule and line', async (t) => {
  const token = 'gh' + 'p_' + randomChars(41, 36);
  const root = await makeRepo(t, {
    'a.ts': 'export const a = 1;\n',
    '.env': 'TOKEN=x\n',
    'deploy/prod.pem': 'x\n',
    'notes.txt': `old token ${token}\n`,
  });
  const { code, stdout } = await run(['--repo', root, '--list']);
  assert.equal(code, 0);
  assert.equal(
    stdout.split('\n').slice(0, 5).join('\n'),
    [
      '  tokens  status    path',
      '       9  included  a.ts',
      "       -  excluded  .env  (secret exclude '.env')",
      "       -  excluded  deploy/prod.pem  (secret exclude '*.pem')",
      '       -  secret    notes.txt  (github secret at line 1, column 11 (secretlint rules))',
    ].join('\n'),
  );
  assert.ok(!stdout.includes(token));
  assert.match(stdout, /^left out {4}2 excluded, 1 secret$/m);
});

test('pack refuses an include or exclude pattern that can never match, with one line', async (t) => {
  const root = await makeRepo(t, { 'a.ts': 'export {};\n' });
  await assert.rejects(run(['--repo', root, '--include', '[']), (e: unknown) => {
    assert.ok(e instanceof PatternError);
    assert.equal(e.message, `invalid include pattern "[": '[' at column 1 opens a bracket expression that is never closed by ']' (write '\\[' for a literal '[')`);
    return true;
  });
  const r = spawnSync(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src', 'cli', 'main.ts'), 'pack', '--repo', root, '--exclude', 'src/[ab'], {
    encoding: 'utf8',
    cwd: ROOT,
    timeout: 60_000,
  });
  assert.notEqual(r.status, 0);
  assert.equal(r.stdout, '');
  assert.equal(r.stderr, `reposnap: error: invalid exclude pattern "src/[ab": '[' at column 5 opens a bracket expression that is never closed by ']' (write '\\[' for a literal '[')\n`);
});
