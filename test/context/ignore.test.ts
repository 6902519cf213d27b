/**
 * Which paths are packed at all: git's ignore rules (.gitignore at every level, negations,
 * .git/info/exclude), the default exclude list, the caller's include/exclude patterns and
 * VS Code's files.exclude. Each case asserts the exact manifest of a generated repository.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rebasePattern } from '../../src/context/gitignore';
import { DEFAULT_EXCLUDES, excludesFromVsCodeSetting, expandBraces } from '../../src/context/globs';
import { detailOf, makeRepo, manifest, pack } from './fixtures';

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
  const result = await pack(root, { defaultExcludes: false });
  assert.deepEqual(manifest(result), {
    files: ['.gitignore', 'keep.txt', 'sub/.gitignore', 'sub/build/out.txt', 'sub/debug.log', 'sub/deeper/only-here.txt'],
    skipped: [],
    ignored: [
      ['a.log', 'ignored'],
      ['build/', 'ignored'],
      ['sub/deeper/trace.log', 'ignored'],
      ['sub/only-here.txt', 'ignored'],
      ['sub/other.log', 'ignored'],
    ],
  });
  assert.equal(result.ignoredCount, 5);
  // the rule that decided, as `git check-ignore -v` prints it
  assert.equal(detailOf(result, 'a.log'), '.gitignore:1:*.log');
  assert.equal(detailOf(result, 'sub/deeper/trace.log'), '.gitignore:1:*.log');
  assert.equal(detailOf(result, 'sub/only-here.txt'), 'sub/.gitignore:3:/only-here.txt');

  // With the default excludes on, `build/` is excluded again after `!build/` re-included it
  // for git: the excludes apply on top of git's rules.
  const withDefaults = await pack(root);
  assert.deepEqual(manifest(withDefaults).ignored, [
    ['a.log', 'ignored'],
    ['build/', 'ignored'],
    ['sub/build/', 'excluded'],
    ['sub/deeper/trace.log', 'ignored'],
    ['sub/only-here.txt', 'ignored'],
    ['sub/other.log', 'ignored'],
  ]);
  assert.equal(detailOf(withDefaults, 'sub/build'), "default exclude 'build/'");
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
  assert.deepEqual(manifest(await pack(root)), {
    files: ['.gitignore', 'keep.log', 'logs/keep.log', 'main.ts'],
    skipped: [],
    ignored: [
      ['app.log', 'ignored'],
      ['logs/other.log', 'ignored'],
    ],
  });
});

test('a negation cannot re-include a file inside an ignored directory (as in git)', async (t) => {
  const root = await makeRepo(t, {
    // `logs/` excludes the directory itself: `!logs/keep.log` has no effect.
    // `tmp/*` excludes only the children, so `!tmp/keep.txt` does re-include.
    '.gitignore': 'logs/\n!logs/keep.log\ntmp/*\n!tmp/keep.txt\n',
    'logs/keep.log': 'x',
    'logs/debug.log': 'x',
    'tmp/keep.txt': 'x',
    'tmp/scratch.txt': 'x',
    'top.txt': 'x',
  });
  const result = await pack(root);
  assert.deepEqual(manifest(result), {
    files: ['.gitignore', 'tmp/keep.txt', 'top.txt'],
    skipped: [],
    ignored: [
      ['logs/', 'ignored'], // not entered: logs/keep.log is never seen
      ['tmp/scratch.txt', 'ignored'],
    ],
  });
  assert.equal(detailOf(result, 'logs'), '.gitignore:1:logs/');
});

test('.git is never entered; .git/info/exclude is honoured; gitlink files are skipped', async (t) => {
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
  assert.deepEqual(manifest(result), {
    files: ['src/main.ts'],
    skipped: [],
    ignored: [
      ['secret.txt', 'ignored'],
      ['src/secret.txt', 'ignored'],
    ],
  });
  assert.equal(detailOf(result, 'secret.txt'), '.git/info/exclude:1:secret.txt');
});

test('a root inside a git repository gets the enclosing repository\'s rules too, below its own; not when the root itself is ignored', async (t) => {
  const top = await makeRepo(t, {
    '.git/HEAD': 'ref: refs/heads/main\n',
    '.git/info/exclude': 'scratch.txt\n',
    '.gitignore': '*.log\nnotes.md\n/pkg/api/local.json\ngenerated/\n',
    'pkg/.gitignore': 'tmp/\n',
    'pkg/api/index.ts': 'export const api = 1;\n',
    'pkg/api/trace.log': 'x',
    'pkg/api/notes.md': 'x',
    'pkg/api/local.json': '{}\n',
    'pkg/api/scratch.txt': 'x',
    'pkg/api/tmp/cache.txt': 'x',
    'pkg/api/.gitignore': '!notes.md\n',
    'pkg/api/sub/deep.log': 'x',
    'generated/out.ts': 'export const out = 1;\n',
  });
  const result = await pack(`${top}/pkg/api`, { defaultExcludes: false });
  assert.deepEqual(manifest(result), {
    files: ['.gitignore', 'index.ts', 'notes.md'],
    skipped: [],
    ignored: [
      ['local.json', 'ignored'],
      ['scratch.txt', 'ignored'],
      ['sub/deep.log', 'ignored'],
      ['tmp/', 'ignored'],
      ['trace.log', 'ignored'],
    ],
  });
  // each rule named as `git check-ignore -v` would, from the root the pack was asked for
  assert.equal(detailOf(result, 'trace.log'), '../../.gitignore:1:*.log');
  assert.equal(detailOf(result, 'sub/deep.log'), '../../.gitignore:1:*.log');
  assert.equal(detailOf(result, 'local.json'), '../../.gitignore:3:/pkg/api/local.json');
  assert.equal(detailOf(result, 'scratch.txt'), '../../.git/info/exclude:1:scratch.txt');
  assert.equal(detailOf(result, 'tmp'), '../.gitignore:1:tmp/');
  // a folder the enclosing rules ignore, asked for explicitly, is packed
  assert.deepEqual(manifest(await pack(`${top}/generated`, { defaultExcludes: false })).files, ['out.ts']);
});

test('an ignored symlink is listed as ignored; a `dir/` pattern does not match a symlink', { skip: process.platform === 'win32' }, async (t) => {
  const root = await makeRepo(t, {
    '.gitignore': 'link-a\nlink-b/\n',
    'real/f.txt': 'x',
    'link-a': { symlink: 'real' },
    'link-b': { symlink: 'real' },
  });
  assert.deepEqual(manifest(await pack(root)), {
    files: ['.gitignore', 'real/f.txt'],
    skipped: [['link-b', 'symlink']],
    ignored: [['link-a', 'ignored']],
  });
});

test('a .gitignore with a byte-order mark and CRLF line ends is read like git reads it', async (t) => {
  const root = await makeRepo(t, { '.gitignore': '\uFEFFa.tmp\r\nb.tmp\r\n', 'a.tmp': 'x', 'b.tmp': 'x', 'c.tmp': 'x' });
  assert.deepEqual(manifest(await pack(root)), {
    files: ['.gitignore', 'c.tmp'],
    skipped: [],
    ignored: [
      ['a.tmp', 'ignored'],
      ['b.tmp', 'ignored'],
    ],
  });
});

test('the default excludes: dependencies, build output, lockfiles, bundles; overridable', async (t) => {
  const root = await makeRepo(t, {
    'node_modules/left-pad/index.js': 'x',
    'packages/web/node_modules/react/index.js': 'x',
    'dist/app.js': 'x',
    'build/out.o.txt': 'x',
    'out/extension.js': 'x',
    'target/debug/app.d': 'x',
    'vendor/lib.go': 'x',
    '__pycache__/m.cpython-312.pyc.txt': 'x',
    'package-lock.json': '{}',
    'yarn.lock': 'x',
    'pnpm-lock.yaml': 'x',
    'Cargo.lock': 'x',
    'poetry.lock': 'x',
    'web/jquery.min.js': 'x',
    'web/app.bundle.js': 'x',
    'web/app.js.map': '{}',
    'web/app.js': 'x',
    'src/build.ts': 'x', // a file named build.ts is not the build/ directory
    'src/main.ts': 'x',
  });
  const result = await pack(root);
  assert.deepEqual(manifest(result), {
    files: ['src/build.ts', 'src/main.ts', 'web/app.js'],
    skipped: [],
    ignored: [
      ['Cargo.lock', 'excluded'],
      ['__pycache__/', 'excluded'],
      ['build/', 'excluded'],
      ['dist/', 'excluded'],
      ['node_modules/', 'excluded'],
      ['out/', 'excluded'],
      ['package-lock.json', 'excluded'],
      ['packages/web/node_modules/', 'excluded'],
      ['pnpm-lock.yaml', 'excluded'],
      ['poetry.lock', 'excluded'],
      ['target/', 'excluded'],
      ['vendor/', 'excluded'],
      ['web/app.bundle.js', 'excluded'],
      ['web/app.js.map', 'excluded'],
      ['web/jquery.min.js', 'excluded'],
      ['yarn.lock', 'excluded'],
    ],
  });
  assert.equal(detailOf(result, 'yarn.lock'), "default exclude 'yarn.lock'");

  // off entirely
  const all = await pack(root, { defaultExcludes: false });
  assert.equal(all.files.length, 19);
  assert.deepEqual(all.ignored, []);

  // or re-include single entries with negations, which come after the defaults
  const some = await pack(root, { exclude: ['!dist/', '!yarn.lock', 'web/'] });
  assert.deepEqual(manifest(some).files, ['dist/app.js', 'src/build.ts', 'src/main.ts', 'yarn.lock']);
  assert.equal(detailOf(some, 'web'), "exclude 'web/'");
});

test('include and exclude patterns (gitignore syntax) narrow the pack; they never override .gitignore', async (t) => {
  const root = await makeRepo(t, {
    '.gitignore': 'src/secret.ts\n',
    'README.md': 'x',
    'docs/guide.md': 'x',
    'src/a.ts': 'x',
    'src/a.test.ts': 'x',
    'src/gen/types.ts': 'x',
    'src/secret.ts': 'x',
    'scripts/run.sh': 'x',
  });
  const result = await pack(root, { include: ['src/', '/README.md', '!src/gen/'], exclude: ['*.test.ts', '!src/secret.ts'] });
  assert.deepEqual(manifest(result), {
    files: ['README.md', 'src/a.ts'],
    skipped: [],
    ignored: [
      ['.gitignore', 'excluded'],
      ['docs/guide.md', 'excluded'],
      ['scripts/run.sh', 'excluded'],
      ['src/a.test.ts', 'excluded'],
      ['src/gen/types.ts', 'excluded'],
      ['src/secret.ts', 'ignored'],
    ],
  });
  assert.equal(detailOf(result, 'docs/guide.md'), 'not matched by include');
  assert.equal(detailOf(result, 'src/a.test.ts'), "exclude '*.test.ts'");

  await assert.rejects(pack(root, { include: 'src/' as unknown as string[] }), TypeError);
});

test('ignoreCase matches patterns case-insensitively', async (t) => {
  const root = await makeRepo(t, { '.gitignore': '*.LOG\n', 'a.log': 'x', 'B.Log': 'x', 'keep.txt': 'x' });
  assert.deepEqual(manifest(await pack(root)).files, ['.gitignore', 'B.Log', 'a.log', 'keep.txt']);
  assert.deepEqual(manifest(await pack(root, { ignoreCase: true })).files, ['.gitignore', 'keep.txt']);
});

test("VS Code's files.exclude converts to exclude patterns", async (t) => {
  const setting = {
    '**/.git': true,
    '**/*.{js,map}': true,
    'out': true,
    'tmp/**': true,
    './notes.txt': true,
    '**/off': false,
    '**/*.ts': { when: '$(basename).js' },
    '/abs/path': true,
  };
  assert.deepEqual(excludesFromVsCodeSetting(setting), ['**/.git', '**/*.js', '**/*.map', '/out', '/tmp/**', '/notes.txt']);
  assert.deepEqual(excludesFromVsCodeSetting(null), []);

  const root = await makeRepo(t, {
    'a.js': 'x',
    'lib/b.js': 'x',
    'lib/b.js.map.txt': 'x',
    'out/o.txt': 'x',
    'lib/out/kept.txt': 'x', // `out` is anchored: only the root one is excluded
    'tmp/t.txt': 'x',
    'notes.txt': 'x',
    'lib/notes.txt': 'x',
    'main.ts': 'x',
  });
  const result = await pack(root, { exclude: excludesFromVsCodeSetting(setting), defaultExcludes: false });
  assert.deepEqual(manifest(result).files, ['lib/b.js.map.txt', 'lib/notes.txt', 'lib/out/kept.txt', 'main.ts']);
});

test('expandBraces and rebasePattern', () => {
  assert.deepEqual(expandBraces('*.{js,ts}'), ['*.js', '*.ts']);
  assert.deepEqual(expandBraces('{a,b{c,d}}x'), ['ax', 'bcx', 'bdx']);
  assert.deepEqual(expandBraces('{single}'), ['{single}']);
  assert.deepEqual(expandBraces('{unclosed,x'), ['{unclosed,x']);
  assert.deepEqual(expandBraces('\\{a,b}'), ['\\{a,b}']);
  assert.equal(expandBraces('{a,b}'.repeat(20)).length, 1000);

  assert.equal(rebasePattern('*.log', 'sub'), 'sub/**/*.log');
  assert.equal(rebasePattern('!keep.log', 'sub'), '!sub/**/keep.log');
  assert.equal(rebasePattern('/out/', 'a/b'), 'a/b/out/');
  assert.equal(rebasePattern('x/y', 'a'), 'a/x/y');
  assert.equal(rebasePattern('build/', '[x]'), '\\[x\\]/**/build/');
  assert.equal(rebasePattern('trailing \\ ', 'a'), 'a/**/trailing \\ ');
  assert.equal(rebasePattern('# comment', 'a'), undefined);
  assert.equal(rebasePattern('   ', 'a'), undefined);
  assert.equal(rebasePattern('*.log  ', ''), '*.log');
  assert.ok(DEFAULT_EXCLUDES.includes('node_modules/'));
  assert.ok(Object.isFrozen(DEFAULT_EXCLUDES));
});
