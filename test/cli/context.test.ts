/**
 * `reposnap ask --json` and `--show-context` (issue 14, section 4), as a user runs them: a child
 * process on a small fixture repository with the tiny model. The JSON lists every file the
 * packer looked at with its status, tokens and kept share; the table sorts the packed files by
 * kept share and then says which files were left out and why.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { formatContextTable, TABLE_LEFT_OUT_LINES } from '../../src/cli/context-table';
import { percent, type ContextReport } from '../../src/pipeline/context-report';
import { checkTinyModel } from '../helpers/models';

const ROOT = path.resolve(__dirname, '..', '..');
const BIN = path.join(ROOT, 'bin', 'reposnap.js');
let repo: string;

before(() => {
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-cli-context-'));
  fs.writeFileSync(path.join(repo, '.gitignore'), 'node_modules/\n');
  fs.mkdirSync(path.join(repo, 'node_modules'));
  fs.writeFileSync(path.join(repo, 'node_modules', 'dep.js'), 'module.exports = 1;\n');
  fs.writeFileSync(path.join(repo, 'a.ts'), 'export const a = 1;\n');
  fs.writeFileSync(path.join(repo, 'b.ts'), 'export function b(x: number): number {\n  return x + 1;\n}\n');
  fs.writeFileSync(path.join(repo, 'big.ts'), `export const big = [\n${'  "a line of a big file that cannot fit",\n'.repeat(400)}];\n`);
  fs.writeFileSync(path.join(repo, 'logo.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52]));
});
after(() => fs.rmSync(repo, { recursive: true, force: true }));

function ask(...args: string[]) {
  const r = spawnSync(
    process.execPath,
    [BIN, 'ask', '--no-cache', '--repo', repo, '--model', checkTinyModel(), '--context-size', '1024', '--max-tokens', '4', '--threads', '2', '--json', ...args, 'What does b return?'],
    { encoding: 'utf8', timeout: 120_000 },
  );
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stderr.trim().split('\n');
  const stats = JSON.parse(lines.pop()!) as { L: number; B: number; context: ContextReport };
  return { stats, context: stats.context, lines };
}

test('ask --json: context.files lists every file looked at with status, tokens and kept share; the summary adds up', () => {
  const { stats, context } = ask('--budget', '64', '--packing', 'smallest-first');
  const byPath = new Map(context.files.map((f) => [f.path, f]));
  assert.deepEqual([...byPath.keys()].sort(), ['.gitignore', 'a.ts', 'b.ts', 'big.ts', 'logo.png']);
  for (const p of ['.gitignore', 'a.ts', 'b.ts']) {
    const f = byPath.get(p)!;
    assert.equal(f.status, 'full', p);
    assert.ok(Number.isInteger(f.tokens) && f.tokens! > 0, `${p}: ${f.tokens} tokens`);
    assert.ok(f.keptShare !== null && f.keptShare >= 0 && f.keptShare <= 1, `${p}: share ${f.keptShare}`);
  }
  assert.deepEqual(
    ['big.ts', 'logo.png'].map((p) => [byPath.get(p)!.status, byPath.get(p)!.reason, byPath.get(p)!.keptShare, byPath.get(p)!.tokens]),
    [['left-out', 'over-budget', null, 0], ['left-out', 'binary', null, 0]],
  );
  assert.ok(stats.B < stats.L, `compressed: B ${stats.B} < L ${stats.L}`);
  assert.deepEqual(context.summary, {
    packedFiles: 3,
    totalFiles: 5,
    ignored: 1, // node_modules/, one entry, never entered
    fileTokens: ['.gitignore', 'a.ts', 'b.ts'].reduce((n, p) => n + byPath.get(p)!.tokens!, 0),
    packing: 'smallest-first',
    mappedFiles: 0,
    retrievedFiles: 0,
    promptTokens: stats.L,
    attention: 'snapkv',
    keptPerHead: 64,
    keptRatio: 64 / stats.L,
  });
});

test('ask --show-context: packed files sorted by kept share with their tokens, then the files left out and why', () => {
  const { context, lines } = ask('--budget', '64', '--packing', 'smallest-first', '--show-context');
  const start = lines.findIndex((l) => l.startsWith('context: '));
  assert.ok(start >= 0, lines.join('\n'));
  const s = context.summary;
  assert.equal(lines[start], `context: Packed 3 of 5 files (${s.fileTokens} tokens) · SnapKV kept 64 per head (${percent(64 / s.promptTokens)})`);
  assert.match(lines[start + 1]!, /^ {2}kept +tokens {2}file$/);
  const rows = lines.slice(start + 2, start + 5).map((l) => {
    const m = /^ {2}([█·]{10}) +([\d.]+ %) +([\d,]+) {2}(\S+)$/.exec(l);
    assert.ok(m, `a file row: '${l}'`);
    return { share: m[2], tokens: Number(m[3]!.replace(/,/g, '')), path: m[4] };
  });
  const expected = context.files
    .filter((f) => f.status === 'full')
    .sort((a, b) => b.keptShare! - a.keptShare!)
    .map((f) => ({ share: percent(f.keptShare!), tokens: f.tokens, path: f.path }));
  assert.deepEqual(rows, expected);
  assert.deepEqual(lines.slice(start + 5, start + 8), [
    'left out: 2 files',
    // a reason the user may act on before the budget's (formatContextTable)
    "  logo.png: binary — binary file extension '.png'",
    `  big.ts: did not fit the context — ${context.files.find((f) => f.path === 'big.ts')!.detail}`,
  ]);
  assert.equal(lines[start + 8], 'ignored: 1 entry by .gitignore and exclude patterns, never read (reposnap pack --list shows them)');
});

test('ask --no-snap: every packed file is kept whole (share 1), the summary says full attention', () => {
  const { stats, context, lines } = ask('--no-snap', '--packing', 'smallest-first', '--show-context');
  assert.deepEqual(context.files.map((f) => f.keptShare).sort(), [1, 1, 1, null, null]);
  assert.equal(context.summary.attention, 'full');
  assert.equal(context.summary.keptPerHead, stats.L);
  assert.ok(lines.some((l) => l.endsWith(`· full attention (all ${stats.L.toLocaleString('en-US')} kept)`)), lines.join('\n'));
});

test('the table of a hand-built ranked report: files by kept share, then the file tree and the map, bars in tenths', () => {
  const report: ContextReport = {
    summary: { packedFiles: 2, totalFiles: 3, ignored: 0, fileTokens: 1_208, promptTokens: 2_000, attention: 'snapkv', keptPerHead: 500, keptRatio: 0.25 },
    files: [
      { path: 'src/a.ts', status: 'full', tokens: 8, keptShare: 0.15 },
      { path: 'src/b.ts', status: 'full', tokens: 1_200, keptShare: 0.33 },
      { path: 'src/c.ts', status: 'left-out', tokens: 0, keptShare: null, reason: 'over-budget', detail: 'in the repository map only (3 definitions; files in full are chosen by rank)' },
    ],
    sections: [
      { kind: 'tree', tokens: 40, keptShare: 1 },
      { kind: 'map', tokens: 300, keptShare: 0.004 },
    ],
  };
  assert.equal(
    formatContextTable(report),
    [
      'context: Packed 2 of 3 files (1,208 tokens) · SnapKV kept 500 per head (25 %)',
      '  kept               tokens  file',
      '  ███·······   33 %   1,200  src/b.ts',
      '  ██········   15 %       8  src/a.ts',
      '  ██████████  100 %      40  (file tree)',
      '  █·········  0.4 %     300  (repository map)',
      'left out: 1 file',
      '  src/c.ts: did not fit the context — in the repository map only (3 definitions; files in full are chosen by rank)',
    ].join('\n'),
  );
});

test('the table quotes a path with whitespace or a control character and escapes control characters in a detail', () => {
  const report: ContextReport = {
    summary: { packedFiles: 2, totalFiles: 3, ignored: 0, fileTokens: 20, promptTokens: 40, attention: 'full', keptPerHead: 40, keptRatio: 1 },
    files: [
      { path: 'new\nline.ts', status: 'full', tokens: 10, keptShare: 1 },
      { path: 'title\u001b]0;owned\u0007 \u202e.ts', status: 'full', tokens: 10, keptShare: 1 },
      { path: 'clear', status: 'left-out', tokens: 0, keptShare: null, reason: 'symlink', detail: 'dangling (-> /tmp/\u001b[2J\u009b31m); not followed' },
    ],
    sections: [],
  };
  const lines = formatContextTable(report).split('\n');
  assert.deepEqual(lines.slice(2), [
    '  ██████████  100 %      10  "new\\nline.ts"',
    '  ██████████  100 %      10  "title\\u001b]0;owned\\u0007 \\u202e.ts"',
    'left out: 1 file',
    '  clear: symbolic link (never followed) — dangling (-> /tmp/\\u001b[2J\\u009b31m); not followed',
  ]);
});

test('the table counts left-out files past the report\'s listing limit, by reason', () => {
  const report: ContextReport = {
    summary: {
      packedFiles: 1, totalFiles: 1_503, ignored: 0, fileTokens: 10, promptTokens: 100, attention: 'snapkv', keptPerHead: 50, keptRatio: 0.5,
      leftOutUnlisted: 1_500, leftOutReasons: { 'over-budget': 1_400, binary: 102 },
    },
    files: [
      { path: 'a.ts', status: 'full', tokens: 10, keptShare: 0.5 },
      { path: 'b.ts', status: 'left-out', tokens: 0, keptShare: null, reason: 'over-budget', detail: 'needs 900 tokens, 2 of 10 left' },
      { path: 'c.png', status: 'left-out', tokens: 0, keptShare: null, reason: 'binary' },
    ],
    sections: [],
  };
  const lines = formatContextTable(report).split('\n');
  // 2 listed + 1,500 unlisted = 1,502 left out; the reasons count listed and unlisted ones
  assert.equal(lines.find((l) => l.startsWith('left out:')), 'left out: 1,502 files');
  assert.equal(lines.at(-1), "  … 1,500 more not listed (all left out by reason: over-budget 1,400, binary 102; --json or 'reposnap pack --list' lists them)");
  // the binary file (a reason the user may act on) is listed before the one the budget left out
  assert.deepEqual(lines.slice(-3, -1), ['  c.png: binary', '  b.ts: did not fit the context — needs 900 tokens, 2 of 10 left']);
});

test(`the table lists at most ${TABLE_LEFT_OUT_LINES} left-out files, other reasons than the budget first, and counts the rest by reason`, () => {
  // 30 files the budget left out (z00.ts … z29.ts) and 3 secrets (a0.env … a2.env), all listed in the report
  const budget = Array.from({ length: 30 }, (_, i) => ({ path: `z${String(i).padStart(2, '0')}.ts`, status: 'left-out' as const, tokens: 0, keptShare: null, reason: 'over-budget' as const, detail: 'needs 900 tokens, 2 of 10 left' }));
  const secrets = Array.from({ length: 3 }, (_, i) => ({ path: `a${i}.env`, status: 'left-out' as const, tokens: 0, keptShare: null, reason: 'secret' as const, detail: 'aws secret at line 1, column 5 (secretlint rules)' }));
  const report: ContextReport = {
    summary: { packedFiles: 1, totalFiles: 34, ignored: 0, fileTokens: 10, promptTokens: 100, attention: 'snapkv', keptPerHead: 50, keptRatio: 0.5 },
    files: [{ path: 'a.ts', status: 'full', tokens: 10, keptShare: 0.5 }, ...budget, ...secrets],
    sections: [],
  };
  const lines = formatContextTable(report).split('\n');
  const at = lines.indexOf('left out: 33 files');
  assert.ok(at > 0, lines.join('\n'));
  const listed = lines.slice(at + 1, -1).map((l) => l.trim().split(':')[0]);
  // 20 lines: the 3 secrets, then the first 17 of the budget's in report order; 13 counted
  assert.deepEqual(listed, ['a0.env', 'a1.env', 'a2.env', ...budget.slice(0, 17).map((f) => f.path)]);
  assert.equal(lines.at(-1), "  … 13 more not listed (all left out by reason: over-budget 30, secret 3; --json or 'reposnap pack --list' lists them)");
});
