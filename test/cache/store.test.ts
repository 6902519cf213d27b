/**
 * The cache store on its own: prefix lookup by hash chain, RAM-then-disk loading, LRU eviction
 * by size, corrupted entries removed and reported once, and a write error (full disk) that
 * turns caching off without failing anything.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { CHECKPOINT_TOKENS, commonCheckpoints, hashChain } from '../../src/cache/hash-chain';
import { CacheStore } from '../../src/cache/store';
import { loadModel, type EngineModel } from '../../src/engine/model';
import { createSession, type SessionSnapshot } from '../../src/engine/session';
import { encodeStateFile, writeFileAtomic } from '../../src/engine/state-file';
import { checkTinyModel, STORY } from '../helpers/models';

let model: EngineModel;
let tokens: number[];
let root: string;

before(async () => {
  model = await loadModel(checkTinyModel());
  tokens = Array.from(model.tokenize(STORY, { addSpecial: true }));
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-store-'));
});
after(() => {
  fs.rmSync(root, { recursive: true, force: true });
  model.dispose();
});

async function snapshotOf(toks: number[]): Promise<SessionSnapshot> {
  const s = createSession(model, { contextSize: 1024, threads: 1, snapWindow: 0 });
  try {
    await s.prefill(toks);
    return await s.snapshot();
  } finally {
    s.dispose();
  }
}

test('hash chains agree exactly on the shared checkpoints', () => {
  const a = hashChain(tokens);
  assert.equal(a.length, Math.floor(tokens.length / CHECKPOINT_TOKENS));
  const edited = [...tokens];
  edited[3 * CHECKPOINT_TOKENS + 5] = 7;
  const b = hashChain(edited);
  assert.equal(commonCheckpoints(a, b), 3, 'an edit in checkpoint 3 keeps checkpoints 0-2');
  assert.equal(commonCheckpoints(a, hashChain(tokens.slice(0, 130))), 2);
});

test('the longest cached prefix is found, loaded from RAM and from disk, under its key only', async () => {
  const store = CacheStore.open(path.join(root, 'ws-find'));
  const snap = await snapshotOf(tokens);
  const chain = hashChain(tokens);
  const id = store.savePrefix('key-a', chain, snap);
  await store.flush();

  const longer = [...tokens, 5, 6, 7];
  const found = store.findPrefix('key-a', hashChain(longer));
  assert.equal(found?.index.id, id);
  assert.equal(found?.matched, chain.length * CHECKPOINT_TOKENS);
  assert.equal(store.findPrefix('key-b', chain), undefined, 'another key (model, engine, settings) never matches');

  assert.equal(store.loadPrefix(found!.index), snap, 'the most recent prefix comes from RAM');
  const fresh = CacheStore.open(path.join(root, 'ws-find'));
  // a second store object of the same process shares the RAM entry; read the disk copy directly
  const disk = fs.readFileSync(path.join(root, 'ws-find', 'prefix', `${id}.rsnp`));
  assert.ok(disk.length > snap.payload.length);
  const s = createSession(model, { contextSize: 1024, threads: 1, snapWindow: 0 });
  try {
    await s.loadState(path.join(root, 'ws-find', 'prefix', `${id}.rsnp`));
    assert.deepEqual(s.tokens, tokens);
  } finally {
    s.dispose();
  }
  assert.equal(fresh.stats().entries.length, 1);
});

test('least recently used entries are evicted when the workspace exceeds its size cap', async () => {
  const dir = path.join(root, 'ws-evict');
  const snaps = [await snapshotOf(tokens.slice(0, 128)), await snapshotOf(tokens.slice(0, 192)), await snapshotOf(tokens.slice(0, 256))];
  const one = CacheStore.open(dir);
  const idA = one.savePrefix('k', hashChain(tokens.slice(0, 128)), snaps[0]!);
  await one.flush();
  const size = (s: SessionSnapshot) => encodeStateFile(s.header, s.tokens, s.payload).length;
  assert.equal(one.stats().totalBytes, size(snaps[0]!));
  const cap = size(snaps[0]!) + size(snaps[2]!) + 64; // A and C fit, all three do not
  const store = CacheStore.open(dir, { limits: { maxWorkspaceBytes: cap } });
  await new Promise((r) => setTimeout(r, 5));
  const idB = store.savePrefix('k', hashChain(tokens.slice(0, 192)), snaps[1]!);
  await store.flush();
  store.touch('prefix', idA); // A is now more recent than B
  await store.flush();
  await new Promise((r) => setTimeout(r, 5));
  const idC = store.savePrefix('k', hashChain(tokens.slice(0, 256)), snaps[2]!);
  await store.flush();
  const ids = store.stats().entries.map((e) => e.id).sort();
  assert.ok(store.stats().totalBytes <= cap, `${store.stats().totalBytes} > ${cap}`);
  assert.deepEqual(ids, [idA, idC].sort(), 'B, the least recently used, was evicted');
  assert.ok(!ids.includes(idB));
  assert.equal(store.stats().counters.evicted, 1);
});

test('a corrupted entry is reported once, removed, and not loaded', async () => {
  const dir = path.join(root, 'ws-corrupt');
  const warnings: string[] = [];
  const store = CacheStore.open(dir, { onWarning: (m) => warnings.push(m), limits: { maxRamBytes: 0 } });
  const id = store.savePrefix('k', hashChain(tokens), await snapshotOf(tokens));
  await store.flush();
  const file = path.join(dir, 'prefix', `${id}.rsnp`);
  const bytes = fs.readFileSync(file);
  bytes[bytes.length >> 1]! ^= 1;
  fs.writeFileSync(file, bytes);
  const found = store.findPrefix('k', hashChain(tokens));
  assert.ok(found);
  assert.equal(store.loadPrefix(found.index), undefined);
  assert.equal(store.loadPrefix(found.index), undefined);
  assert.equal(warnings.length, 1, warnings.join('\n'));
  assert.match(warnings[0]!, /removed a corrupted cache entry .*checksum mismatch/);
  assert.equal(fs.existsSync(file), false);
  assert.equal(store.findPrefix('k', hashChain(tokens)), undefined);

  // an index that is not JSON
  fs.writeFileSync(path.join(dir, 'prefix', 'broken.json'), '{"kind": "prefix", ');
  assert.equal(store.findPrefix('k', hashChain(tokens)), undefined);
  assert.equal(fs.existsSync(path.join(dir, 'prefix', 'broken.json')), false);
  await store.flush();
  assert.equal(store.stats().counters.corruptRemoved, 2);
});

test('a write error (full disk) turns caching off with one warning and never throws', async () => {
  const warnings: string[] = [];
  const store = CacheStore.open(path.join(root, 'ws-full'), {
    onWarning: (m) => warnings.push(m),
    fs: {
      writeFileAtomic: () => {
        throw Object.assign(new Error('no space left on device'), { code: 'ENOSPC' });
      },
    },
  });
  const snap = await snapshotOf(tokens.slice(0, 64));
  store.savePrefix('k', hashChain(tokens.slice(0, 64)), snap);
  store.savePrefix('k', hashChain(tokens.slice(0, 64)), snap);
  await store.flush();
  assert.equal(store.isEnabled, false);
  assert.equal(warnings.length, 1);
  assert.match(warnings[0]!, /could not be written \(ENOSPC\): caching is off/);
  assert.deepEqual(store.stats().entries, []);
  // the real writer still works for others: nothing was left behind
  writeFileAtomic(path.join(root, 'ws-full', 'probe'), Buffer.from('x'));
  assert.deepEqual(fs.readdirSync(path.join(root, 'ws-full', 'prefix')), []);
});
