import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmod, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { packRepository, type PackOptions, type PackResult, type SkipReason } from '../../src/context/pack';
import { formatFileSection } from '../../src/context/section';
import { rebasePattern } from '../../src/context/gitignore';

/** A fixture entry: file content, or a symlink whose target is given verbatim. */
type Entry = string | Uint8Array | { symlink: string };

/** Builds a fixture repository in a fresh temp dir; paths use `/`, parents are created. */
async function makeRepo(t: { after: (fn: () => Promise<void>) => void }, tree: Record<string, Entry>): Promise<string> {
  const root = await mkdtemp(path.join(tmpdir(), 'reposnap-context-'));
  t.after(() => rm(root, { recursive: true, force: true }));
  for (const [rel, entry] of Object.entries(tree)) {
    const abs = path.join(root, ...rel.split('/'));
    await mkdir(path.dirname(abs), { recursive: true });
    if (typeof entry === 'object' && 'symlink' in entry) await symlink(entry.symlink, abs);
    else await writeFile(abs, entry);
  }
  return root;
}

/** characters / 4, rounded up: a stand-in tokenizer. */
const quarterChars = (text: string): number => Math.ceil(text.length / 4);

function pack(root: string, options: Partial<PackOptions> = {}): Promise<PackResult> {
  return packRepository(root, { tokenBudget: Infinity, countTokens: quarterChars, ...options });
}

/** The manifest: included paths in order, and skipped [path, reason] pairs in order. */
function manifest(result: PackResult): { files: string[]; skipped: Array<[string, SkipReason]> } {
  return {
    files: result.files.map((f) => f.path),
    skipped: result.skipped.map((s): [string, SkipReason] => [s.path, s.reason]),
  };
}

/** The section format, written out independently of `formatFileSection`. */
function expectedSection(p: string, content: string): string {
  return `${p}\n\`\`\`\n${content}${content === '' || content.endsWith('\n') ? '' : '\n'}\`\`\`\n`;
}

test('nested .gitignore overrides its parent; nested patterns are relative to their directory', async (t) => {
  const root = await makeRepo(t, {
    '.gitignore': '*.log\nbuild/\n',
    'a.log': 'x',
    'build/x.txt': 'x',
    'keep.txt': 'x',
    'sub/.gitignore': '!debug.log\n!build/\n/only-here.txt\n',
    'sub/debug.log': 'x',
    'sub/other.log': 'x',
    'sub/build/out.txt': 'x',
    'sub/only-here.txt': 'x',
    'sub/deeper/only-here.txt': 'x',
    'sub/deeper/trace.log': 'x',
  });
  const result = await pack(root);
  assert.deepEqual(manifest(result), {
    files: [
      '.gitignore',
      'keep.txt',
      'sub/.gitignore',
      'sub/build/out.txt',
      'sub/debug.log',
      'sub/deeper/only-here.txt',
    ],
    skipped: [],
  });
  // a.log, build/, sub/deeper/trace.log, sub/only-here.txt, sub/other.log
  assert.equal(result.ignoredCount, 5);
});

test('a negation re-includes a file: *.log then !keep.log', async (t) => {
  const root = await makeRepo(t, {
    '.gitignore': '*.log\n!keep.log\n',
    'app.log': 'x',
    'keep.log': 'kept\n',
    'logs/keep.log': 'kept too\n',
    'logs/other.log': 'x',
    'main.ts': 'export {};\n',
  });
  const result = await pack(root);
  assert.deepEqual(manifest(result), {
    files: ['.gitignore', 'keep.log', 'logs/keep.log', 'main.ts'],
    skipped: [],
  });
  assert.equal(result.ignoredCount, 2);
});

test('a negation cannot re-include a file inside an excluded directory (as in git)', async (t) => {
  const root = await makeRepo(t, {
    // `dist/` excludes the directory itself: `!dist/keep.txt` has no effect.
    // `out/*` excludes only the children, so `!out/keep.txt` does re-include.
    '.gitignore': 'dist/\n!dist/keep.txt\nout/*\n!out/keep.txt\n',
    'dist/keep.txt': 'x',
    'dist/bundle.js': 'x',
    'out/keep.txt': 'x',
    'out/bundle.js': 'x',
    'top.txt': 'x',
  });
  const result = await pack(root);
  assert.deepEqual(manifest(result), {
    files: ['.gitignore', 'out/keep.txt', 'top.txt'],
    skipped: [],
  });
  assert.equal(result.ignoredCount, 2); // dist/ (not entered), out/bundle.js
});

test('binary files (NUL byte, invalid UTF-8) and oversized files are skipped with reasons', async (t) => {
  const root = await makeRepo(t, {
    'bin.dat': new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01, 0x02]),
    'latin1.txt': new Uint8Array([0x63, 0x61, 0x66, 0xe9, 0x0a]), // "café" in Latin-1
    'utf8.txt': 'café ✓\n',
    'big.txt': 'b'.repeat(101),
    'exact.txt': 'e'.repeat(100),
  });
  const result = await pack(root, { maxFileBytes: 100 });
  assert.deepEqual(manifest(result), {
    files: ['exact.txt', 'utf8.txt'],
    skipped: [
      ['big.txt', 'too-large'],
      ['bin.dat', 'binary'],
      ['latin1.txt', 'binary'],
    ],
  });
  assert.equal(result.files[1]!.bytes, Buffer.byteLength('café ✓\n'));
  assert.equal(result.totalBytes, 100 + Buffer.byteLength('café ✓\n'));
});

test('the default size cap is 256 KiB', async (t) => {
  const root = await makeRepo(t, {
    'at-cap.txt': 'a'.repeat(262_144),
    'over-cap.txt': 'a'.repeat(262_145),
  });
  assert.deepEqual(manifest(await pack(root)), {
    files: ['at-cap.txt'],
    skipped: [['over-cap.txt', 'too-large']],
  });
});

test('.git is never entered; .git/info/exclude is honoured', async (t) => {
  const root = await makeRepo(t, {
    '.git/HEAD': 'ref: refs/heads/main\n',
    '.git/config': '[core]\n',
    '.git/info/exclude': 'secret.txt\n',
    'secret.txt': 'x',
    'src/.git': 'gitdir: ../.git/modules/src\n', // a gitlink file, as in submodules
    'src/secret.txt': 'x',
    'src/main.ts': 'x',
  });
  const result = await pack(root);
  assert.deepEqual(manifest(result), { files: ['src/main.ts'], skipped: [] });
  assert.equal(result.ignoredCount, 2);
});

test('symlinks are skipped and never followed, including loops', async (t) => {
  const root = await makeRepo(t, {
    'real/file.txt': 'x',
    'real/up': { symlink: '..' }, // loop: real/up/real/up/...
    'self': { symlink: 'self' }, // a link to itself
    'to-file.txt': { symlink: 'real/file.txt' },
    'to-dir': { symlink: 'real' },
    'dangling': { symlink: 'does-not-exist' },
  });
  const result = await pack(root);
  assert.deepEqual(manifest(result), {
    files: ['real/file.txt'],
    skipped: [
      ['dangling', 'symlink'],
      ['real/up', 'symlink'],
      ['self', 'symlink'],
      ['to-dir', 'symlink'],
      ['to-file.txt', 'symlink'],
    ],
  });
});

test('an ignored symlink is counted, not listed; a `dir/` pattern does not match a symlink', async (t) => {
  const root = await makeRepo(t, {
    '.gitignore': 'link-a\nlink-b/\n',
    'target/f.txt': 'x',
    'link-a': { symlink: 'target' },
    'link-b': { symlink: 'target' },
  });
  const result = await pack(root);
  assert.deepEqual(manifest(result), {
    files: ['.gitignore', 'target/f.txt'],
    skipped: [['link-b', 'symlink']],
  });
  assert.equal(result.ignoredCount, 1);
});

test('FIFOs are skipped as special (and never opened)', { skip: process.platform === 'win32' }, async (t) => {
  const root = await makeRepo(t, { 'a.txt': 'x' });
  execFileSync('mkfifo', [path.join(root, 'pipe')]);
  assert.deepEqual(manifest(await pack(root)), { files: ['a.txt'], skipped: [['pipe', 'special']] });
});

test(
  'unreadable directories and files are reported, not thrown',
  { skip: process.platform === 'win32' || process.getuid?.() === 0 ? 'needs a non-root POSIX user' : false },
  async (t) => {
    const root = await makeRepo(t, { 'locked/f.txt': 'x', 'no-read.txt': 'x', 'ok.txt': 'x' });
    await chmod(path.join(root, 'locked'), 0o000);
    await chmod(path.join(root, 'no-read.txt'), 0o000);
    try {
      assert.deepEqual(manifest(await pack(root)), {
        files: ['ok.txt'],
        skipped: [
          ['locked', 'unreadable'],
          ['no-read.txt', 'unreadable'],
        ],
      });
    } finally {
      await chmod(path.join(root, 'locked'), 0o755); // so that the cleanup can remove it
    }
  },
);

test('an empty file is included as an empty section', async (t) => {
  const root = await makeRepo(t, { 'empty.txt': '' });
  const result = await pack(root);
  assert.deepEqual(result.files, [{ path: 'empty.txt', bytes: 0, tokens: quarterChars('empty.txt\n```\n```\n'), text: 'empty.txt\n```\n```\n' }]);
  assert.deepEqual(result.skipped, []);
});

test('files are ordered by relative path in code-unit order', async (t) => {
  const root = await makeRepo(t, {
    'a/x': 'x',
    'a-b': 'x',
    'a.txt': 'x',
    'B': 'x',
    'é.txt': 'x',
    'a/b/c': 'x',
  });
  assert.deepEqual(manifest(await pack(root)).files, ['B', 'a-b', 'a.txt', 'a/b/c', 'a/x', 'é.txt']);
});

test('token budget: a section that does not fit is skipped, later ones that fit are packed', async (t) => {
  const contents: Record<string, string> = {
    'a.txt': 'alpha\n',
    'b.txt': 'b'.repeat(400) + '\n', // too big for what is left
    'c.txt': 'gamma\n', // fits after b.txt is skipped
    'd.bin': '\u0000binary',
  };
  const root = await makeRepo(t, contents);
  const cost = (p: string): number => Math.ceil(expectedSection(p, contents[p]!).length / 4);
  const tokenBudget = cost('a.txt') + cost('c.txt') + 10; // a + c would fit, but b comes first
  assert.ok(cost('a.txt') + cost('b.txt') > tokenBudget);

  const result = await pack(root, { tokenBudget });
  assert.deepEqual(manifest(result), {
    files: ['a.txt', 'c.txt'],
    skipped: [
      ['b.txt', 'over-budget'],
      ['d.bin', 'binary'],
    ],
  });
  assert.equal(result.files[0]!.text, expectedSection('a.txt', 'alpha\n'));
  assert.equal(result.files[0]!.tokens, cost('a.txt'));
  assert.equal(result.totalTokens, cost('a.txt') + cost('c.txt'));
  assert.ok(result.totalTokens <= tokenBudget);
  assert.equal(result.totalBytes, 12);
});

test('token budget: sections fill the budget exactly; async countTokens is awaited', async (t) => {
  const contents: Record<string, string> = { 'one.md': '1\n', 'two.md': 'two two\n', 'zzz.md': 'last' };
  const root = await makeRepo(t, contents);
  const cost = (p: string): number => Math.ceil(expectedSection(p, contents[p]!).length / 4);
  const tokenBudget = cost('one.md') + cost('two.md'); // exactly two sections
  const result = await pack(root, { tokenBudget, countTokens: async (text) => quarterChars(text) });
  assert.deepEqual(manifest(result), { files: ['one.md', 'two.md'], skipped: [['zzz.md', 'over-budget']] });
  assert.equal(result.totalTokens, tokenBudget);
  assert.equal(result.files.reduce((sum, f) => sum + f.tokens, 0), tokenBudget);

  const none = await pack(root, { tokenBudget: 0 });
  assert.deepEqual(manifest(none).files, []);
  assert.equal(none.totalTokens, 0);
});

test('abort via AbortSignal rejects with an AbortError', async (t) => {
  const root = await makeRepo(t, { 'a.txt': 'a', 'b.txt': 'b', 'c.txt': 'c' });

  const before = new AbortController();
  before.abort();
  await assert.rejects(pack(root, { signal: before.signal }), { name: 'AbortError' });

  // Aborted while the (async) tokenizer is busy: rejects without waiting for it.
  const during = new AbortController();
  let calls = 0;
  const pending = pack(root, {
    signal: during.signal,
    countTokens: () => {
      calls++;
      during.abort(new Error('user cancelled'));
      return new Promise<number>(() => undefined); // never settles
    },
  });
  await assert.rejects(pending, (err: Error) => {
    assert.equal(err.name, 'AbortError');
    assert.equal((err.cause as Error).message, 'user cancelled');
    return true;
  });
  assert.equal(calls, 1);
});

test('invalid options and tokenizer results reject', async (t) => {
  const root = await makeRepo(t, { 'a.txt': 'a' });
  await assert.rejects(pack(root, { tokenBudget: -1 }), RangeError);
  await assert.rejects(pack(root, { maxFileBytes: 1.5 }), RangeError);
  await assert.rejects(pack(root, { countTokens: () => Number.NaN }), TypeError);
  await assert.rejects(pack(path.join(root, 'missing')), { code: 'ENOENT' });
});

test('progress is reported for every phase', async (t) => {
  const root = await makeRepo(t, { 'a.txt': 'a', 'b.txt': 'b' });
  const seen: string[] = [];
  await pack(root, { onProgress: (p) => seen.push(`${p.phase}:${p.done}/${p.total ?? '?'}`) });
  assert.deepEqual(seen, ['walk:2/?', 'read:1/2', 'tokenize:1/?', 'read:2/2', 'tokenize:2/?']);
});

test('formatFileSection picks a fence longer than any backtick run in the content', () => {
  assert.equal(formatFileSection('a.md', 'no ticks'), 'a.md\n```\nno ticks\n```\n');
  assert.equal(formatFileSection('b.md', 'x\n```js\ny\n```\n'), 'b.md\n````\nx\n```js\ny\n```\n````\n');
  assert.equal(formatFileSection('c.md', '`````'), 'c.md\n``````\n`````\n``````\n');
  assert.equal(formatFileSection('d.md', ''), 'd.md\n```\n```\n');
});

test('rebasePattern rewrites nested patterns relative to the root', () => {
  assert.equal(rebasePattern('*.log', 'sub'), 'sub/**/*.log');
  assert.equal(rebasePattern('!keep.log', 'sub'), '!sub/**/keep.log');
  assert.equal(rebasePattern('/out/', 'a/b'), 'a/b/out/');
  assert.equal(rebasePattern('x/y', 'a'), 'a/x/y');
  assert.equal(rebasePattern('build/', '[x]'), '\\[x\\]/**/build/');
  assert.equal(rebasePattern('trailing \\ ', 'a'), 'a/**/trailing \\ ');
  assert.equal(rebasePattern('# comment', 'a'), undefined);
  assert.equal(rebasePattern('   ', 'a'), undefined);
  assert.equal(rebasePattern('*.log  ', ''), '*.log');
});

test('a .gitignore with a byte-order mark and CRLF line ends is read like git reads it', async (t) => {
  const root = await makeRepo(t, { '.gitignore': '\uFEFFa.tmp\r\nb.tmp\r\n', 'a.tmp': 'x', 'b.tmp': 'x', 'c.tmp': 'x' });
  const result = await pack(root);
  assert.deepEqual(manifest(result), { files: ['.gitignore', 'c.tmp'], skipped: [] });
  assert.equal(result.ignoredCount, 2);
});
