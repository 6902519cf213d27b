/**
 * Files that must not break the packer. Each case builds its fixture repository, packs it
 * (which must resolve, not throw) and asserts the exact manifest: included paths in prompt
 * order, every skipped and ignored path with its reason.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { chmod, symlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import * as path from 'node:path';
import { detailOf, expectedSection, faultyFs, makeRepo, makeTempDir, manifest, pack, writeTree } from './fixtures';

const posix = process.platform !== 'win32';
const linux = process.platform === 'linux';

test('symlinks: loops, a directory outside the root, inside targets and dangling links are reported, never followed', { skip: !posix }, async (t) => {
  const outside = await makeTempDir(t, 'reposnap-outside-');
  await writeFile(path.join(outside, 'secret.txt'), 'not in this repository\n');
  const root = await makeRepo(t, {
    'real/file.txt': 'x\n',
    'real/up': { symlink: '..' }, // followed, real/up/real/up/... would never end
    'loop-a': { symlink: 'loop-b' }, // a cycle of links: ELOOP
    'loop-b': { symlink: 'loop-a' },
    'self': { symlink: 'self' },
    'to-file.txt': { symlink: 'real/file.txt' },
    'to-outside': { symlink: outside },
    'dangling': { symlink: 'does-not-exist' },
  });
  await symlink(path.relative(root, outside), path.join(root, 'to-outside-rel'));

  const result = await pack(root);
  assert.deepEqual(manifest(result), {
    files: ['real/file.txt'],
    skipped: [
      ['dangling', 'symlink'],
      ['loop-a', 'symlink'],
      ['loop-b', 'symlink'],
      ['real/up', 'symlink'],
      ['self', 'symlink'],
      ['to-file.txt', 'symlink'],
      ['to-outside', 'symlink'],
      ['to-outside-rel', 'symlink'],
    ],
    ignored: [],
  });
  assert.match(detailOf(result, 'dangling'), /^dangling \(-> does-not-exist\); not followed$/);
  assert.match(detailOf(result, 'loop-a'), /^symlink loop \(-> loop-b, ELOOP\)/);
  assert.match(detailOf(result, 'self'), /^symlink loop \(-> self, ELOOP\)/);
  assert.match(detailOf(result, 'real/up'), /^symlink loop: points to its own ancestor directory '\.' \(-> \.\.\)/);
  assert.match(detailOf(result, 'to-file.txt'), /^points inside the repository to 'real\/file\.txt'/);
  assert.match(detailOf(result, 'to-outside'), /^points outside the repository/);
  assert.match(detailOf(result, 'to-outside-rel'), /^points outside the repository/);
  assert.ok(!result.files.some((f) => f.text.includes('not in this repository')));

  // Packing through a symlink to the root: links are still classified against the real root.
  const viaLink = path.join(outside, 'repo-link');
  await symlink(root, viaLink);
  const again = await pack(viaLink);
  assert.deepEqual(manifest(again), manifest(result));
  assert.match(detailOf(again, 'to-file.txt'), /^points inside the repository/);
});

test('FIFOs and sockets are reported as special and never opened', { skip: !posix }, async (t) => {
  const root = await makeRepo(t, { 'a.txt': 'x\n' });
  execFileSync('mkfifo', [path.join(root, 'pipe')]);
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(path.join(root, 'sock'), resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const result = await pack(root);
  assert.deepEqual(manifest(result), {
    files: ['a.txt'],
    skipped: [
      ['pipe', 'special'],
      ['sock', 'special'],
    ],
    ignored: [],
  });
  assert.equal(detailOf(result, 'pipe'), 'FIFO (named pipe); never opened');
  assert.equal(detailOf(result, 'sock'), 'socket; never opened');
});

test('unreadable directories, files and ignore files are reported (failures injected, so this runs as root too)', async (t) => {
  const root = await makeRepo(t, {
    'locked/f.txt': 'x\n',
    'no-open.txt': 'x\n',
    'eio.txt': 'x\n',
    'rules/.gitignore': '*.tmp\n',
    'rules/a.tmp': 'x\n',
    'no-stat.txt': 'x\n',
    'ok.txt': 'x\n',
  });
  const abs = (rel: string): string => path.join(root, ...rel.split('/'));
  const fs = faultyFs({
    readdir: { [abs('locked')]: 'EACCES' },
    open: { [abs('no-open.txt')]: 'EACCES', [abs('rules/.gitignore')]: 'EACCES' },
    read: { [abs('eio.txt')]: 'EIO' },
    lstat: { [abs('no-stat.txt')]: 'EPERM' },
  });
  const result = await pack(root, { fs });
  assert.deepEqual(manifest(result), {
    // the rules of an unreadable .gitignore are not applied
    files: ['ok.txt', 'rules/a.tmp'],
    skipped: [
      ['eio.txt', 'unreadable'],
      ['locked', 'unreadable'],
      ['no-open.txt', 'unreadable'],
      ['no-stat.txt', 'unreadable'],
      ['rules/.gitignore', 'unreadable'],
    ],
    ignored: [],
  });
  assert.equal(detailOf(result, 'eio.txt'), 'cannot read: EIO');
  assert.equal(detailOf(result, 'locked'), 'cannot list directory: EACCES');
  assert.equal(detailOf(result, 'no-open.txt'), 'cannot open: EACCES');
  assert.equal(detailOf(result, 'no-stat.txt'), 'cannot stat: EPERM');
  assert.equal(detailOf(result, 'rules/.gitignore'), 'cannot read ignore rules: EACCES');
});

test('permission bits: mode 000 makes a file unreadable for a normal user; root reads it anyway', { skip: !posix }, async (t) => {
  const root = await makeRepo(t, { 'locked/f.txt': 'x\n', 'no-read.txt': 'x\n', 'ok.txt': 'x\n' });
  await chmod(path.join(root, 'locked'), 0o000);
  await chmod(path.join(root, 'no-read.txt'), 0o000);
  let result;
  try {
    result = await pack(root);
  } finally {
    await chmod(path.join(root, 'locked'), 0o755); // so that the cleanup can remove it
  }
  if (process.getuid?.() === 0) {
    assert.deepEqual(manifest(result), { files: ['locked/f.txt', 'no-read.txt', 'ok.txt'], skipped: [], ignored: [] });
  } else {
    assert.deepEqual(manifest(result), {
      files: ['ok.txt'],
      skipped: [
        ['locked', 'unreadable'],
        ['no-read.txt', 'unreadable'],
      ],
      ignored: [],
    });
  }
});

test('files deleted or replaced during the walk are reported as vanished or changed', { skip: !posix }, async (t) => {
  const outside = await makeTempDir(t, 'reposnap-outside-');
  await writeFile(path.join(outside, 'secret.txt'), 'not in this repository\n');
  const root = await makeRepo(t, {
    'edited.txt': 'before\n',
    'gone.txt': 'x\n',
    'keep.txt': 'kept\n',
    'sub/inner.txt': 'x\n',
    'swapped/inner.txt': 'x\n',
    'to-dir.txt': 'x\n',
    'to-fifo.txt': 'x\n',
    'to-link.txt': 'x\n',
  });
  const abs = (rel: string): string => path.join(root, rel);
  let done = false;
  const result = await pack(root, {
    onProgress: (p) => {
      // The first walk event comes after the root is listed and its files are stat'ed, before
      // `sub` is listed and before any file is read.
      if (p.phase !== 'walk' || done) return;
      done = true;
      writeFileSync(abs('edited.txt'), 'after the walk\n');
      utimesSync(abs('edited.txt'), 2_000_000_000, 2_000_000_000);
      rmSync(abs('gone.txt'));
      rmSync(abs('sub'), { recursive: true });
      rmSync(abs('swapped'), { recursive: true });
      symlinkSync(outside, abs('swapped')); // a directory swapped for a link out of the root
      rmSync(abs('to-dir.txt'));
      mkdirSync(abs('to-dir.txt'));
      rmSync(abs('to-fifo.txt'));
      execFileSync('mkfifo', [abs('to-fifo.txt')]);
      rmSync(abs('to-link.txt'));
      symlinkSync('keep.txt', abs('to-link.txt'));
    },
  });
  assert.ok(done);
  assert.deepEqual(manifest(result), {
    // edited after the walk: packed with its new content, last (the newest mtime)
    files: ['keep.txt', 'edited.txt'],
    skipped: [
      ['gone.txt', 'vanished'],
      ['sub', 'vanished'],
      ['swapped', 'changed'],
      ['to-dir.txt', 'changed'],
      ['to-fifo.txt', 'changed'],
      ['to-link.txt', 'changed'],
    ],
    ignored: [],
  });
  assert.equal(result.files[1]!.text, expectedSection('edited.txt', 'after the walk\n'));
  assert.equal(result.files[1]!.mtimeMs, 2_000_000_000_000);
  assert.equal(detailOf(result, 'gone.txt'), 'removed after the walk found it (ENOENT)');
  assert.equal(detailOf(result, 'sub'), 'directory removed during the walk (ENOENT)');
  assert.equal(detailOf(result, 'swapped'), 'replaced by a symbolic link during the walk; not followed');
  assert.equal(detailOf(result, 'to-dir.txt'), 'replaced by a directory after the walk');
  assert.equal(detailOf(result, 'to-fifo.txt'), 'replaced by a FIFO after the walk');
  assert.equal(detailOf(result, 'to-link.txt'), 'replaced by a symbolic link after the walk (ELOOP)');
});

test('a file that changes while it is read is read again, and left out if it keeps changing', async (t) => {
  const root = await makeRepo(t, { 'busy.log.txt': 'x\n', 'flaky.txt': 'settled\n', 'calm.txt': 'y\n' });
  const fs = faultyFs({ changing: { [path.join(root, 'busy.log.txt')]: 100, [path.join(root, 'flaky.txt')]: 1 } });
  const result = await pack(root, { fs });
  assert.deepEqual(manifest(result), {
    files: ['calm.txt', 'flaky.txt'],
    skipped: [['busy.log.txt', 'changed']],
    ignored: [],
  });
  assert.equal(detailOf(result, 'busy.log.txt'), 'modified while being read (twice)');
  assert.equal(result.files[1]!.text, expectedSection('flaky.txt', 'settled\n'));
});

test('0-byte and whitespace-only files are left out as empty', async (t) => {
  const root = await makeRepo(t, { 'empty.txt': '', '__init__.py': '', 'blank.md': ' \n\t\n', 'one.txt': '1\n' });
  const result = await pack(root);
  assert.deepEqual(manifest(result), {
    files: ['one.txt'],
    skipped: [
      ['__init__.py', 'empty'],
      ['blank.md', 'empty'],
      ['empty.txt', 'empty'],
    ],
    ignored: [],
  });
  assert.equal(detailOf(result, 'empty.txt'), '0 bytes');
  assert.equal(detailOf(result, 'blank.md'), 'only whitespace');
});

test('CRLF, CR and a UTF-8 byte-order mark: the BOM is dropped and line ends become LF, with notes', async (t) => {
  const root = await makeRepo(t, {
    'bom.ts': '\uFEFFexport const x = 1;\n',
    'both.md': '\uFEFF# Title\r\n\r\ntext\r\n',
    'cr.txt': 'old\rmac\r',
    'crlf.txt': 'a\r\nb\r\n',
    'lf.txt': 'a\nb\n',
  });
  const result = await pack(root);
  assert.deepEqual(manifest(result), { files: ['bom.ts', 'both.md', 'cr.txt', 'crlf.txt', 'lf.txt'], skipped: [], ignored: [] });
  const byPath = new Map(result.files.map((f) => [f.path, f]));
  assert.equal(byPath.get('bom.ts')!.text, expectedSection('bom.ts', 'export const x = 1;\n'));
  assert.deepEqual(byPath.get('bom.ts')!.notes, ['UTF-8 byte-order mark removed']);
  assert.equal(byPath.get('both.md')!.text, expectedSection('both.md', '# Title\n\ntext\n'));
  assert.deepEqual(byPath.get('both.md')!.notes, ['UTF-8 byte-order mark removed', 'CRLF line ends converted to LF']);
  assert.equal(byPath.get('cr.txt')!.text, expectedSection('cr.txt', 'old\nmac\n'));
  assert.deepEqual(byPath.get('cr.txt')!.notes, ['CR line ends converted to LF']);
  assert.equal(byPath.get('crlf.txt')!.text, expectedSection('crlf.txt', 'a\nb\n'));
  assert.deepEqual(byPath.get('crlf.txt')!.notes, ['CRLF line ends converted to LF']);
  assert.deepEqual(byPath.get('lf.txt')!.notes, []);
  assert.equal(byPath.get('both.md')!.bytes, Buffer.byteLength('\uFEFF# Title\r\n\r\ntext\r\n'));
  assert.ok(result.files.every((f) => f.encoding === 'utf-8'));
});

test('Latin-1 / Windows-1252 text is decoded and noted (no other Latin encoding guessed); UTF-16 with a BOM is decoded; other non-UTF-8 bytes are binary', async (t) => {
  const latin1 = Buffer.from('caf\xe9 cr\xe8me \x80 na\xefve\n', 'latin1');
  const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('héllo ✓\r\n', 'utf16le')]);
  const noise = Buffer.from([0x41, 0x81, 0x02, 0x03, 0xff, 0x41, 0x0a]);
  const root = await makeRepo(t, { 'latin1.txt': latin1, 'noise.txt': noise, 'utf16.txt': utf16 });
  const result = await pack(root);
  assert.deepEqual(manifest(result), { files: ['latin1.txt', 'utf16.txt'], skipped: [['noise.txt', 'binary']], ignored: [] });
  const [l1, u16] = result.files;
  assert.equal(l1!.text, expectedSection('latin1.txt', 'café crème € naïve\n'));
  assert.equal(l1!.encoding, 'windows-1252');
  assert.deepEqual(l1!.notes, ['not valid UTF-8 (byte 0xE9 at offset 3); decoded as Windows-1252 (no encoding detected: best guess Windows-1250, confidence 16)']);
  assert.equal(l1!.bytes, latin1.length);
  assert.equal(u16!.text, expectedSection('utf16.txt', 'héllo ✓\n'));
  assert.equal(u16!.encoding, 'utf-16le');
  assert.deepEqual(u16!.notes, ['decoded as UTF-16LE (byte-order mark)', 'CRLF line ends converted to LF']);
  assert.equal(detailOf(result, 'noise.txt'), 'not UTF-8 (byte 0x81 at offset 1) and not text (control byte 0x02 at offset 2)');
});

test('binary content: NUL bytes inside a .ts file (anywhere), signatures, binary extensions', async (t) => {
  const root = await makeRepo(t, {
    'nul.ts': 'export const a = 1;\u0000\n',
    'late-nul.ts': '// line\n'.repeat(2000) + '\u0000\n', // the NUL is past the first 8 KiB
    'logo.png': 'this is not really a PNG, but the extension says binary\n',
    'report.txt': '%PDF-1.7\n1 0 obj\n',
    'fine.ts': 'export const b = 2;\n',
  });
  const result = await pack(root);
  assert.deepEqual(manifest(result), {
    files: ['fine.ts'],
    skipped: [
      ['late-nul.ts', 'binary'],
      ['logo.png', 'binary'],
      ['nul.ts', 'binary'],
      ['report.txt', 'binary'],
    ],
    ignored: [],
  });
  assert.equal(detailOf(result, 'nul.ts'), 'NUL byte at offset 19');
  assert.equal(detailOf(result, 'late-nul.ts'), 'NUL byte at offset 16000');
  assert.equal(detailOf(result, 'logo.png'), "binary file extension '.png'");
  assert.equal(detailOf(result, 'report.txt'), 'PDF signature');
});

test('a 5 MB minified bundle is left out as minified, over the cap or not; bundles by name are excluded', async (t) => {
  const bundle = 'var a=0;'.repeat(655_360); // 5 MiB on one line
  const root = await makeRepo(t, {
    'static/app.js': bundle,
    'static/app.min.js': 'var b=1;',
    'static/long-line.md': '# Notes\n\n' + 'word '.repeat(240) + '\n' + 'short line\n'.repeat(50),
    'src/main.ts': 'export {};\n',
  });
  const result = await pack(root);
  assert.deepEqual(manifest(result), {
    files: ['src/main.ts', 'static/long-line.md'],
    skipped: [['static/app.js', 'minified']],
    ignored: [['static/app.min.js', 'excluded']],
  });
  assert.equal(
    detailOf(result, 'static/app.js'),
    'longest line 8192 characters, 8192 per line on average in the first 8192 bytes (5242880 bytes, over the cap of 262144)',
  );
  assert.equal(detailOf(result, 'static/app.min.js'), "default exclude '*.min.js'");

  const raised = await pack(root, { maxFileBytes: 8 * 1024 * 1024 });
  assert.deepEqual(manifest(raised), manifest(result));
  assert.equal(detailOf(raised, 'static/app.js'), 'longest line 5242880 characters, 5242880 per line on average');

  const kept = await pack(root, { maxFileBytes: 8 * 1024 * 1024, skipGenerated: false });
  assert.deepEqual(manifest(kept).files, ['src/main.ts', 'static/app.js', 'static/long-line.md']);
});

test('files over the cap get the most specific reason their first 8 KiB give', async (t) => {
  const longLines = ('"' + 'x'.repeat(1500) + '",\n').repeat(20); // long lines, but not a bundle
  const root = await makeRepo(t, {
    'data/prompts.json': longLines,
    'gen/big.go': '// Code generated by mockgen. DO NOT EDIT.\n' + 'func f() {}\n'.repeat(3000),
    'img/raw.bin.txt': '\u0000'.repeat(20_000),
    'small.txt': 'fits\n',
  });
  const result = await pack(root, { maxFileBytes: 10_000 });
  assert.deepEqual(manifest(result), {
    files: ['small.txt'],
    skipped: [
      ['data/prompts.json', 'too-large'],
      ['gen/big.go', 'generated'],
      ['img/raw.bin.txt', 'binary'],
    ],
    ignored: [],
  });
  assert.equal(detailOf(result, 'data/prompts.json'), '30080 bytes > cap of 10000 bytes');
  assert.equal(
    detailOf(result, 'gen/big.go'),
    'generated-file marker on line 1: "// Code generated by mockgen. DO NOT EDIT." (36043 bytes, over the cap of 10000)',
  );
  assert.equal(detailOf(result, 'img/raw.bin.txt'), 'NUL byte at offset 0 (20000 bytes, over the cap of 10000)');
});

test('generated files are left out by their markers in the first lines', async (t) => {
  const root = await makeRepo(t, {
    'api.pb.go': '// Code generated by protoc-gen-go. DO NOT EDIT.\n// source: api.proto\n\npackage api\n',
    'relay.ts': '/**\n * @generated SignedSource<<abc>>\n */\nexport {};\n',
    'requirements.txt': '#\n# This file is autogenerated by pip-compile with Python 3.12\n#\nflask==3.0.0\n',
    'Designer.cs': '// <auto-generated>\n//   by a tool\n// </auto-generated>\nclass A {}\n',
    'late.ts': '// line\n'.repeat(12) + '// DO NOT EDIT the table below by hand\n',
    'lower.ts': '// do not edit without telling the team\nexport {};\n',
    'prose.md': 'We have not auto-generated anything here.\n',
  });
  const result = await pack(root);
  assert.deepEqual(manifest(result), {
    files: ['late.ts', 'lower.ts', 'prose.md'],
    skipped: [
      ['Designer.cs', 'generated'],
      ['api.pb.go', 'generated'],
      ['relay.ts', 'generated'],
      ['requirements.txt', 'generated'],
    ],
    ignored: [],
  });
  assert.equal(detailOf(result, 'api.pb.go'), 'generated-file marker on line 1: "// Code generated by protoc-gen-go. DO NOT EDIT."');
  assert.equal(detailOf(result, 'requirements.txt'), 'generated-file marker on line 2: "# This file is autogenerated by pip-compile with Python 3.12"');

  const kept = await pack(root, { skipGenerated: false });
  assert.equal(kept.files.length, 7);
});

test('200 nested directories', async (t) => {
  const deep = Array.from({ length: 200 }, (_, i) => `d${i}`).join('/');
  const root = await makeRepo(t, { [`${deep}/leaf.txt`]: 'at the bottom\n', 'top.txt': 'at the top\n' });
  const result = await pack(root);
  assert.deepEqual(manifest(result), { files: [`${deep}/leaf.txt`, 'top.txt'], skipped: [], ignored: [] });
  assert.equal(result.files[0]!.text, expectedSection(`${deep}/leaf.txt`, 'at the bottom\n'));
});

test('Unicode, spaces and control characters in names; a name that is not valid UTF-8', { skip: !posix }, async (t) => {
  const root = await makeRepo(t, {
    'dir with spaces/file name.txt': 'spaces\n',
    'ünïcödé/日本語.md': 'unicode\n',
    'emoji 🎉.txt': 'emoji\n',
    'tab\there.txt': 'tab\n',
    'new\nline.txt': 'newline\n',
  });
  if (linux) writeFileSync(Buffer.concat([Buffer.from(path.join(root, 'bad-')), Buffer.from([0xff]), Buffer.from('.txt')]), 'latin\n');
  const result = await pack(root);
  assert.deepEqual(manifest(result), {
    files: ['dir with spaces/file name.txt', 'emoji 🎉.txt', 'new\nline.txt', 'tab\there.txt', 'ünïcödé/日本語.md'],
    skipped: linux ? [['bad-\uFFFD.txt', 'unreadable']] : [],
    ignored: [],
  });
  const byPath = new Map(result.files.map((f) => [f.path, f.text]));
  assert.equal(byPath.get('ünïcödé/日本語.md'), expectedSection('ünïcödé/日本語.md', 'unicode\n'));
  // the section header stays one line: control characters in names are escaped
  assert.equal(byPath.get('new\nline.txt'), expectedSection('new\\nline.txt', 'newline\n'));
  assert.equal(byPath.get('tab\there.txt'), expectedSection('tab\\there.txt', 'tab\n'));
  if (linux) assert.equal(detailOf(result, 'bad-\uFFFD.txt'), 'the name is not valid UTF-8 and cannot be opened (ENOENT)');
});

test('everything at once: a hostile repository packs without an exception', { skip: !posix }, async (t) => {
  const root = await makeRepo(t, {
    '.gitignore': 'logs/\n!logs/keep.log\n',
    'logs/keep.log': 'x\n',
    'node_modules/pkg/index.js': 'x\n',
    'a.ts': 'export {};\n',
    'empty.ts': '',
    'nul.ts': '\u0000',
    'loop': { symlink: 'loop' },
  });
  execFileSync('mkfifo', [path.join(root, 'fifo')]);
  await writeTree(root, { 'deep/x/y/z.txt': 'z\n' });
  // budget: z.txt (7 tokens) and a.ts (6) fit; .gitignore (10), the largest, is dropped
  const result = await pack(root, { tokenBudget: 20 });
  assert.deepEqual(manifest(result), {
    files: ['a.ts', 'deep/x/y/z.txt'],
    skipped: [
      ['.gitignore', 'over-budget'],
      ['empty.ts', 'empty'],
      ['fifo', 'special'],
      ['loop', 'symlink'],
      ['nul.ts', 'binary'],
    ],
    ignored: [
      ['logs/', 'ignored'],
      ['node_modules/', 'excluded'],
    ],
  });
});
