/**
 * packRepository's contract: section format, totals, size cap, progress, cancellation,
 * option checks; and walkRepository's determinism under concurrency.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, fstatSync, lstatSync, openSync, readdirSync, readlinkSync, readSync, realpathSync } from 'node:fs';
import * as path from 'node:path';
import type { ContextFs } from '../../src/context/fsapi';
import { escapePathForHeader, formatFileSection } from '../../src/context/section';
import { walkRepository } from '../../src/context/walk';
import { manifestEntries, manifestTotals } from '../../src/context/manifest';
import { expectedSection, makeRepo, manifest, pack, quarterChars } from './fixtures';

test('sections, totals and the manifest of a small repository', async (t) => {
  const root = await makeRepo(t, {
    '.gitignore': '*.log\n',
    'a.log': 'x',
    'src/main.ts': 'export const main = 1;\n',
    'README.md': '# Demo',
    'logo.png': 'x',
  });
  const result = await pack(root);
  assert.equal(result.root, path.resolve(root));
  assert.deepEqual(manifest(result), {
    files: ['.gitignore', 'README.md', 'src/main.ts'],
    skipped: [['logo.png', 'binary']],
    ignored: [['a.log', 'ignored']],
  });
  const readme = result.files[1]!;
  assert.equal(readme.text, expectedSection('README.md', '# Demo'));
  assert.equal(readme.tokens, quarterChars(readme.text));
  assert.equal(readme.bytes, 6);
  assert.equal(readme.encoding, 'utf-8');
  assert.equal(result.totalBytes, 6 + 6 + 23);
  assert.equal(result.totalTokens, result.files.reduce((sum, f) => sum + f.tokens, 0));
  assert.equal(result.ignoredCount, 1);
  assert.equal(result.tokenBudget, Infinity);

  assert.deepEqual(
    manifestEntries(result).map((e) => [e.path, e.status, e.tokens]),
    [
      ['.gitignore', 'included', quarterChars(result.files[0]!.text)],
      ['README.md', 'included', readme.tokens],
      ['src/main.ts', 'included', result.files[2]!.tokens],
      ['a.log', 'ignored', undefined],
      ['logo.png', 'binary', undefined],
    ],
  );
  assert.deepEqual(manifestTotals(result), { files: 3, bytes: 35, tokens: result.totalTokens, leftOut: { binary: 1, ignored: 1 } });
});

test('the default size cap is 256 KiB', async (t) => {
  const line = 'a'.repeat(63) + '\n';
  const root = await makeRepo(t, {
    'at-cap.txt': line.repeat(4096),
    'over-cap.txt': line.repeat(4096) + 'b',
  });
  const result = await pack(root);
  assert.deepEqual(manifest(result), { files: ['at-cap.txt'], skipped: [['over-cap.txt', 'too-large']], ignored: [] });
  assert.equal(result.skipped[0]!.detail, '262145 bytes > cap of 262144 bytes');
});

test('abort via AbortSignal rejects with an AbortError: before, during the walk, during tokenizing', async (t) => {
  const root = await makeRepo(t, { 'a.txt': 'a', 'b.txt': 'b', 'c.txt': 'c', 'sub/d.txt': 'd' });

  const before = new AbortController();
  before.abort();
  await assert.rejects(pack(root, { signal: before.signal }), { name: 'AbortError' });

  const walking = new AbortController();
  await assert.rejects(
    pack(root, { signal: walking.signal, onProgress: (p) => p.phase === 'walk' && walking.abort() }),
    { name: 'AbortError' },
  );

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

test('a slow synchronous tokenizer does not starve the event loop: a timer can abort', async (t) => {
  const tree: Record<string, string> = {};
  for (let i = 0; i < 100; i++) tree[`f${String(i).padStart(3, '0')}.txt`] = `file ${i}\n`;
  const root = await makeRepo(t, tree);
  const controller = new AbortController();
  setTimeout(() => controller.abort(), 30);
  let calls = 0;
  const busy = (text: string): number => {
    calls++;
    const until = performance.now() + 3;
    while (performance.now() < until); // 3 ms of synchronous work per section
    return quarterChars(text);
  };
  // A file system that never waits (in memory, or sync calls): only the packer's own yields
  // give the timer a turn.
  const syncFs: ContextFs = {
    readdir: async (p) => readdirSync(p, { withFileTypes: true }),
    lstat: async (p) => lstatSync(p),
    realpath: async (p) => realpathSync.native(p),
    readlink: async (p) => readlinkSync(p),
    open: async (p, flags) => {
      const fd = openSync(p, flags);
      return {
        stat: async () => fstatSync(fd),
        read: async (buffer, offset, length, position) => ({ bytesRead: readSync(fd, buffer, offset, length, position) }),
        close: async () => closeSync(fd),
      };
    },
  };
  await assert.rejects(pack(root, { signal: controller.signal, countTokens: busy, fs: syncFs }), { name: 'AbortError' });
  assert.ok(calls < 50, `aborted after ${calls} of 100 sections`);
});

test('invalid options and tokenizer results reject', async (t) => {
  const root = await makeRepo(t, { 'a.txt': 'a' });
  await assert.rejects(pack(root, { tokenBudget: -1 }), RangeError);
  await assert.rejects(pack(root, { maxFileBytes: 1.5 }), RangeError);
  await assert.rejects(pack(root, { readAhead: 0 }), RangeError);
  await assert.rejects(pack(root, { countTokens: () => Number.NaN }), TypeError);
  await assert.rejects(pack(root, { exclude: [1 as unknown as string] }), TypeError);
  await assert.rejects(pack(path.join(root, 'missing')), { code: 'ENOENT' });
  await assert.rejects(pack(path.join(root, 'a.txt')), { code: 'ENOTDIR' });
});

test('progress is reported for every phase', async (t) => {
  const root = await makeRepo(t, { 'a.txt': 'a', 'b.txt': 'b' });
  const seen: string[] = [];
  await pack(root, { onProgress: (p) => seen.push(`${p.phase}:${p.done}/${p.total ?? '?'}`) });
  assert.deepEqual(seen, ['walk:2/?', 'read:1/2', 'tokenize:1/?', 'read:2/2', 'tokenize:2/?']);
});

test('the walk gives the same result at any concurrency', async (t) => {
  const tree: Record<string, string> = {};
  for (let d = 0; d < 8; d++) for (let f = 0; f < 8; f++) tree[`d${d}/s${f % 3}/f${f}.txt`] = `${d}${f}`;
  tree['.gitignore'] = 'd3/\n*/s1/\n';
  const root = await makeRepo(t, tree);
  const one = await walkRepository(root, { concurrency: 1 });
  const many = await walkRepository(root, { concurrency: 64 });
  assert.deepEqual(many, one);
  assert.equal(one.files.length, 1 + 7 * 5);
  assert.deepEqual(one.ignored.map((e) => e.path).slice(0, 3), ['d0/s1', 'd1/s1', 'd2/s1']);
  await assert.rejects(walkRepository(root, { concurrency: 0 }), RangeError);
});

test('formatFileSection picks a fence longer than any backtick run and escapes control characters in the path', () => {
  assert.equal(formatFileSection('a.md', 'no ticks'), 'a.md\n```\nno ticks\n```\n');
  assert.equal(formatFileSection('b.md', 'x\n```js\ny\n```\n'), 'b.md\n````\nx\n```js\ny\n```\n````\n');
  assert.equal(formatFileSection('c.md', '`````'), 'c.md\n``````\n`````\n``````\n');
  assert.equal(formatFileSection('d.md', ''), 'd.md\n```\n```\n');
  assert.equal(escapePathForHeader('a\nb\r\tc\u0001\u007f\u2028 ü 🎉'), 'a\\nb\\r\\tc\\x01\\x7f\\u2028 ü 🎉');
  assert.equal(escapePathForHeader('plain/path.ts'), 'plain/path.ts');
});
