/**
 * One cache store per folder (src/cache/window-store.ts, issue 14 section 6): two windows on a
 * folder (two different `storageUri` folders) get one store and see each other's entries, two
 * folders get two, a symlinked path gets its target's store, and a window's old store under its
 * `storageUri` is adopted once (thread transcripts included) without overwriting shared entries.
 * The snapshots are built by hand: the store never looks inside a state's payload.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { hashChain } from '../../src/cache/hash-chain';
import { workspaceCacheDir } from '../../src/cache/location';
import { CacheStore } from '../../src/cache/store';
import { adoptWindowStore, folderStoreDir, windowStoreDir } from '../../src/cache/window-store';
import type { SessionSnapshot } from '../../src/engine/session';

let tmp: string;
let root: string;
let folder: string;
before(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-window-store-')));
  root = path.join(tmp, 'cache-root');
  folder = path.join(tmp, 'repo');
  fs.mkdirSync(folder);
});
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** A state of `n` tokens (0, 1, …, n-1) with a payload of `n` bytes of `fill`. */
function snapshot(n: number, fill: number): SessionSnapshot {
  return {
    header: { model: 'm', engine: 'e', typeK: 'f16', typeV: 'f16', flashAttention: 'auto', nPast: n, cells: n, snap: null, createdAt: 1 },
    tokens: Int32Array.from({ length: n }, (_, i) => i),
    payload: new Uint8Array(n).fill(fill),
  };
}

const TURN = { question: 'Where is the budget chosen?', answer: 'In ask.ts.', answerTokens: [5, 6, 7] };

/** Saves a thread with one turn in `store` and waits for it to be on disk. */
async function saveThread(store: CacheStore, id: string, snap: SessionSnapshot): Promise<void> {
  store.saveThread({ id, key: 'k', turns: [TURN], prefixTokens: 64, snap: null, L: snap.tokens.length, B: snap.tokens.length }, snap);
  await store.flush();
}

test('two windows on one folder (different storageUri) share its store: the second sees the first one\'s prefix and thread', async () => {
  const a = await folderStoreDir(folder, { windowStorageDir: path.join(tmp, 'window-a'), root });
  const b = await folderStoreDir(folder, { windowStorageDir: path.join(tmp, 'window-b'), root });
  assert.equal(a, b);
  assert.equal(path.dirname(a), root, 'the store is under the shared root, not under either window storage');

  const first = CacheStore.open(a);
  const tokens = Array.from({ length: 128 }, (_, i) => i);
  const chain = hashChain(tokens);
  const id = first.savePrefix('k', chain, snapshot(128, 7));
  await saveThread(first, 't-1', snapshot(80, 9));

  const second = CacheStore.open(b);
  const found = second.findPrefix('k', chain);
  assert.equal(found?.index.id, id);
  assert.equal(found?.matched, 128);
  const thread = second.loadThread('t-1');
  assert.deepEqual(thread?.index.turns, [TURN]);
  assert.deepEqual(Array.from(thread!.snap.payload.subarray(0, 3)), [9, 9, 9], 'the thread state read from disk is the first window\'s');
});

test('two folders get two stores; a symlink to a folder gets the folder\'s store', async () => {
  const other = path.join(tmp, 'other-repo');
  fs.mkdirSync(other);
  const link = path.join(tmp, 'repo-link');
  fs.symlinkSync(folder, link, 'dir');
  const mine = await folderStoreDir(folder, { root });
  assert.notEqual(await folderStoreDir(other, { root }), mine);
  assert.equal(await folderStoreDir(link, { root }), mine);
  assert.equal(await folderStoreDir(path.join(link, '.'), { windowStorageDir: path.join(tmp, 'window-c'), root }), mine);
});

test("a window's old store is adopted once: entries move, a shared entry of the same id wins, the old folder goes", async () => {
  const f = path.join(tmp, 'adopt-repo');
  fs.mkdirSync(f);
  const storage = path.join(tmp, 'window-old');
  const old = windowStoreDir(storage, f);
  assert.equal(old, workspaceCacheDir(path.join(storage, 'cache'), f), 'where earlier versions kept it');
  const shared = workspaceCacheDir(root, f);

  // the old window store: a prefix, two threads, counters; the shared store already has thread t-2
  const oldStore = CacheStore.open(old);
  const prefixId = oldStore.savePrefix('k', hashChain(Array.from({ length: 64 }, (_, i) => i)), snapshot(64, 1));
  await saveThread(oldStore, 't-1', snapshot(70, 2));
  await saveThread(oldStore, 't-2', snapshot(70, 3));
  oldStore.recordQuestion({ at: 1, question: 'q', outcome: 'miss', L: 64, B: 64, reusedTokens: 0, prefilledTokens: 64, prefillMs: 10, snapMs: 0, ttftMs: 12, decodeTokS: 5 });
  await oldStore.flush();
  await saveThread(CacheStore.open(shared), 't-2', snapshot(70, 4));

  const dir = await folderStoreDir(f, { windowStorageDir: storage, root });
  assert.equal(dir, shared);
  assert.equal(fs.existsSync(old), false, 'the old store is gone');
  assert.equal(fs.existsSync(path.join(storage, 'cache')), false, "the window's emptied cache folder is gone");
  const store = CacheStore.open(dir);
  assert.deepEqual(store.loadThread('t-1')?.index.turns, [TURN], "the old thread's transcript (the turns its follow-ups replay) moved");
  assert.equal(store.loadThread('t-2')?.snap.payload[0], 4, 'the shared store kept its own t-2');
  assert.ok(fs.existsSync(path.join(dir, 'prefix', `${prefixId}.rsnp`)));
  const stats = store.stats();
  assert.equal(stats.entries.length, 3);
  assert.equal(stats.counters.misses, 1, 'the old counters moved (the shared store had none)');

  // a second call finds nothing to adopt
  assert.deepEqual(await adoptWindowStore(old, dir), { moved: 0, dropped: 0, countersMoved: false });
});

test('across file systems, thread entries are copied and prefix entries dropped', async () => {
  const from = path.join(tmp, 'xdev', 'old');
  const to = path.join(tmp, 'xdev', 'shared');
  const s = CacheStore.open(from);
  const prefixId = s.savePrefix('k', hashChain(Array.from({ length: 64 }, (_, i) => i)), snapshot(64, 1));
  await saveThread(s, 't-9', snapshot(70, 5));
  await s.flush();
  const exdev = () => {
    throw Object.assign(new Error('cross-device link not permitted'), { code: 'EXDEV' });
  };
  assert.deepEqual(await adoptWindowStore(from, to, { rename: exdev }), { moved: 1, dropped: 1, countersMoved: false });
  const store = CacheStore.open(to);
  assert.deepEqual(store.loadThread('t-9')?.index.turns, [TURN]);
  assert.equal(fs.existsSync(path.join(to, 'prefix', `${prefixId}.json`)), false);
  assert.equal(fs.existsSync(from), false);
});

test('an old store that cannot be adopted leaves a warning and the shared store is used', async () => {
  const f = path.join(tmp, 'stuck-repo');
  fs.mkdirSync(f);
  const storage = path.join(tmp, 'window-stuck');
  const old = windowStoreDir(storage, f);
  await saveThread(CacheStore.open(old), 't-1', snapshot(70, 6));
  const warnings: string[] = [];
  const eperm = () => {
    throw Object.assign(new Error('operation not permitted'), { code: 'EPERM' });
  };
  const dir = await folderStoreDir(f, { windowStorageDir: storage, root, rename: eperm, onWarning: (m) => warnings.push(m) });
  assert.equal(dir, workspaceCacheDir(root, f));
  assert.equal(warnings.length, 1);
  assert.match(warnings[0]!, /could not be moved .* \(EPERM\): it is left in place and tried again next time/);
  assert.ok(fs.existsSync(path.join(old, 'thread', 't-1.json')), 'nothing was lost');
  assert.equal(await folderStoreDir(f, { windowStorageDir: storage, root }), dir);
  assert.deepEqual(CacheStore.open(dir).threadIndex('t-1')?.turns, [TURN], 'the next call adopts it');
});

test('the old store is adopted on a first run, before the shared cache folder exists', async () => {
  const f = path.join(tmp, 'first-run-repo');
  fs.mkdirSync(f);
  const storage = path.join(tmp, 'window-first-run');
  await saveThread(CacheStore.open(windowStoreDir(storage, f)), 't-1', snapshot(70, 8));
  const freshRoot = path.join(tmp, 'no-such-root', 'reposnap');
  const warnings: string[] = [];
  const dir = await folderStoreDir(f, { windowStorageDir: storage, root: freshRoot, onWarning: (m) => warnings.push(m) });
  assert.deepEqual(warnings, []);
  assert.deepEqual(CacheStore.open(dir).threadIndex('t-1')?.turns, [TURN]);
});
