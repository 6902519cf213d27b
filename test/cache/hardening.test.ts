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
import { folderTrouble } from '../../src/cache/ownership';
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

test('folderTrouble: a foreign owner, group or other write, a link are unsafe; a sticky world-writable root is not', () => {
  const st = (mode: number, uid = 1000, link = false) => ({ uid, mode, isDirectory: () => !link && (mode & 0o170000) === 0o040000, isSymbolicLink: () => link });
  assert.equal(folderTrouble(st(0o040700), 'entry', 1000), undefined);
  assert.equal(folderTrouble(st(0o040755), 'root', 1000), undefined);
  assert.equal(folderTrouble(st(0o040700, 1001), 'entry', 1000), 'owned by another user (uid 1001)');
  assert.equal(folderTrouble(st(0o040700, 0), 'root', 1000), 'owned by another user (uid 0)');
  assert.equal(folderTrouble(st(0o040777), 'entry', 1000), 'writable by other users (mode 0777)');
  assert.equal(folderTrouble(st(0o040770), 'root', 1000), 'writable by its group (mode 0770)');
  // /tmp-like: others may create names there but not replace this user's; entries are checked on their own
  assert.equal(folderTrouble(st(0o041777), 'root', 1000), undefined);
  assert.equal(folderTrouble(st(0o041777), 'entry', 1000), 'writable by other users (mode 1777)');
  assert.equal(folderTrouble(st(0o120777, 1000, true), 'entry', 1000), 'a symbolic link, not a folder RepoSnap made');
  assert.equal(folderTrouble(st(0o100600), 'root', 1000), 'not a folder');
});

test('a cache root or repository folder writable by others is refused with one warning: nothing is read, written or memoised', async (t) => {
  for (const which of ['root', 'entry'] as const) {
    const root = path.join(tempDir(t), 'cache-root');
    const dir = path.join(root, 'ws');
    CacheStore.open(dir);
    fs.chmodSync(which === 'root' ? root : dir, 0o777);
    const warnings: string[] = [];
    const store = CacheStore.open(dir, { onWarning: (w) => warnings.push(w) });
    assert.equal(store.isEnabled, false, which);
    assert.equal(warnings.length, 1, which);
    assert.match(warnings[0], new RegExp(`refusing the cache folder: ${which === 'root' ? root : dir} is writable by other users \\(mode 0777\\).*answering without the cache`));
    assert.equal(store.fingerprintMemo, null);
    assert.deepEqual(fs.readdirSync(path.join(dir, 'prefix')), []);
  }
});

test('a repository folder another user owns is refused', { skip: process.getuid?.() !== 0 ? 'chown needs root (CI runs as root)' : false }, (t) => {
  const root = path.join(tempDir(t), 'cache-root');
  const dir = path.join(root, 'ws');
  CacheStore.open(dir);
  fs.chownSync(dir, 65534, 65534);
  const warnings: string[] = [];
  assert.equal(CacheStore.open(dir, { onWarning: (w) => warnings.push(w) }).isEnabled, false);
  assert.match(warnings[0], /is owned by another user \(uid 65534\)/);
});
