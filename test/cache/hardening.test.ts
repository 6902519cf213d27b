/**
 * The cache on disk holds against a hostile local user (issue 29, items 4–6): temporary files are
 * created new under a random name and never through a planted link; `cache clear` never enters a
 * linked folder and removes only the files the store names; folders are 0700 and lock files 0600.
 * No model: the store's folder operations alone.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { acquireLock } from '../../src/cache/lock';
import { CacheStore } from '../../src/cache/store';
import { makeFolder, temporaryName, writeFileAtomic } from '../../src/engine/state-file';

/** A fresh temporary folder, removed after the test. */
function tempDir(t: TestContext): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-hardening-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const mode = (p: string): number => fs.statSync(p).mode & 0o777;

test('writeFileAtomic never writes through a link planted at a temporary name', (t) => {
  const dir = tempDir(t);
  const victim = path.join(dir, 'precious.txt');
  fs.writeFileSync(victim, 'keep');
  const file = path.join(dir, 'cache', 'fingerprint.json');
  fs.mkdirSync(path.dirname(file));
  // the name the old code used, `.<name>.<pid>.<ms>.tmp`, made predictable by holding the clock
  const now = Date.now();
  t.mock.method(Date, 'now', () => now);
  fs.symlinkSync(victim, path.join(path.dirname(file), `.fingerprint.json.${process.pid}.${now}.tmp`));
  writeFileAtomic(file, Buffer.from('{"new":1}'));
  t.mock.restoreAll();
  assert.equal(fs.readFileSync(victim, 'utf8'), 'keep');
  assert.equal(fs.lstatSync(file).isSymbolicLink(), false);
  assert.equal(fs.readFileSync(file, 'utf8'), '{"new":1}');
  assert.equal(mode(file), 0o600);
});

test('temporary names are random and keep the pid the sweep reads: .<name>.<pid>.<15 digits>.tmp', () => {
  const names = new Set(Array.from({ length: 50 }, () => path.basename(temporaryName('/c/x.json'))));
  assert.equal(names.size, 50);
  for (const n of names) assert.match(n, new RegExp(`^\\.x\\.json\\.${process.pid}\\.\\d{15}\\.tmp$`));
});

test('cache clear never enters a linked prefix/ folder: the link goes, what it points to stays', async (t) => {
  const root = tempDir(t);
  const precious = path.join(root, 'precious');
  fs.mkdirSync(precious);
  const kept = ['a.txt', `${'0'.repeat(24)}.json`, `${'0'.repeat(24)}.rsnp`];
  for (const n of kept) fs.writeFileSync(path.join(precious, n), 'mine');
  const dir = path.join(root, 'cache', 'ws');
  CacheStore.open(dir);
  fs.rmSync(path.join(dir, 'prefix'), { recursive: true });
  fs.symlinkSync(precious, path.join(dir, 'prefix'));
  await CacheStore.open(dir).clear();
  assert.deepEqual(fs.readdirSync(precious).sort(), kept.sort());
  assert.equal(fs.existsSync(path.join(dir, 'prefix')), false, 'the link itself is removed');
});

test('cache clear removes only the files the store names', async (t) => {
  const dir = path.join(tempDir(t), 'ws');
  CacheStore.open(dir);
  const id = 'f'.repeat(24);
  for (const n of [`${id}.json`, `${id}.rsnp`, `.${id}.json.1.123456789012345.tmp`, 'notes.txt', 'README']) fs.writeFileSync(path.join(dir, 'prefix', n), 'x');
  await CacheStore.open(dir).clear();
  assert.deepEqual(fs.readdirSync(path.join(dir, 'prefix')).sort(), ['README', 'notes.txt']);
});

test('cache folders are 0700 and lock files 0600', async (t) => {
  const old = process.umask(0o022);
  t.after(() => process.umask(old));
  const root = tempDir(t);
  const dir = path.join(root, 'cache-root', 'ws');
  CacheStore.open(dir);
  for (const d of [path.join(root, 'cache-root'), dir, path.join(dir, 'prefix'), path.join(dir, 'thread')]) assert.equal(mode(d).toString(8), '700', d);
  makeFolder(path.join(root, 'a', 'b'));
  assert.equal(mode(path.join(root, 'a')).toString(8), '700');
  const lock = await acquireLock(path.join(dir, 'x.lock'), { timeoutMs: 1000 });
  assert.equal(mode(path.join(dir, 'x.lock')).toString(8), '600');
  lock.release();
});
