/**
 * The cache store on its own: prefix lookup by hash chain, RAM-then-disk loading, LRU eviction
 * by size, corrupted entries removed and reported once, and a write error (full disk) that
 * turns caching off without failing anything; hostile ids and files of the wrong shape, damage
 * that cannot be removed, and the prefill time saved.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { CHECKPOINT_TOKENS, commonCheckpoints, hashChain } from '../../src/cache/hash-chain';
import { CacheStore } from '../../src/cache/store';
import { loadModel, type EngineModel } from '../../src/engine/model';
import { createSession, type SessionSnapshot } from '../../src/engine/session';
import { encodeStateFile, makeFolder, writeFileAtomic } from '../../src/engine/state-file';
import { askRepository, DEFAULT_SNAP } from '../../src/pipeline/ask';
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

/** A valid prefix index for `id` (hand-written, as the store writes it). */
function prefixIndex(id: string, over: Record<string, unknown> = {}) {
  return { kind: 'prefix', id, key: 'k', tokens: tokens.length, chain: hashChain(tokens), bytes: 100, createdAt: 1, lastUsed: 1, hits: 0, ...over };
}
function threadIndexJson(id: string, over: Record<string, unknown> = {}) {
  return { kind: 'thread', id, key: 'k', turns: [{ question: 'q', answer: 'a', answerTokens: [1, 2] }], prefixTokens: 10, snap: null, L: 12, B: 12, bytes: 100, createdAt: 1, lastUsed: 1, hits: 0, ...over };
}

test("an index's id never names a file: ids come from file names and are checked before anything is deleted", async () => {
  const base = path.join(root, 'ids');
  const dir = path.join(base, 'cache', 'ws');
  const other = path.join(base, 'cache', 'other-ws');
  const victims = path.join(base, 'x');
  fs.mkdirSync(victims, { recursive: true });
  // files outside any cache, named by hostile ids relative to the folders that hold the indexes
  for (const n of ['y', 'w', 'z', 'v']) {
    fs.writeFileSync(path.join(victims, `${n}.rsnp`), 'not a state file: corrupt if read');
    fs.writeFileSync(path.join(victims, `${n}.json`), '{}');
  }
  const warnings: string[] = [];
  const store = CacheStore.open(dir, { onWarning: (m) => warnings.push(m), limits: { maxWorkspaceBytes: 1, maxTotalBytes: 1, maxRamBytes: 0 } });
  fs.mkdirSync(path.join(other, 'prefix'), { recursive: true });
  const hostile = {
    [path.join(dir, 'prefix', 'evil.json')]: prefixIndex('../../../x/y'),
    // the id equals no file name even when it is a valid id
    [path.join(dir, 'prefix', '0123456789abcdef01234567.json')]: prefixIndex('fedcba9876543210fedcba98'),
    [path.join(dir, 'thread', 'evil.json')]: threadIndexJson('../../../x/z'),
    [path.join(other, 'prefix', 'evil.json')]: prefixIndex('../../../x/v', { kind: 'prefix' }),
    [path.join(other, 'prefix', 'evil2.json')]: { ...prefixIndex('../../../x/w'), kind: '../../../x' },
  };
  for (const [f, json] of Object.entries(hostile)) fs.writeFileSync(f, JSON.stringify(json));

  const found = store.findPrefix('k', hashChain(tokens));
  if (found) store.loadPrefix(found.index); // the unfixed store loaded (and deleted) ../../../x/y.rsnp here
  const thread = store.threadIndex('evil');
  // eviction past both caps (1 byte) walks every index of this and the other workspace
  store.savePrefix('k', hashChain(tokens.slice(0, 64)), await snapshotOf(tokens.slice(0, 64)));
  await store.flush();
  for (const n of ['y', 'w', 'z', 'v']) {
    assert.ok(fs.existsSync(path.join(victims, `${n}.rsnp`)), `${n}.rsnp outside the cache was deleted`);
    assert.ok(fs.existsSync(path.join(victims, `${n}.json`)), `${n}.json outside the cache was deleted`);
  }
  assert.equal(found, undefined, 'no hostile index is ever found');
  assert.equal(thread, undefined);
  assert.equal(fs.existsSync(path.join(dir, 'prefix', 'evil.json')), false, "this store's hostile indexes are removed as damaged");
  assert.equal(fs.existsSync(path.join(dir, 'thread', 'evil.json')), false);
  assert.equal(warnings.filter((w) => /removed a corrupted cache entry prefix\/evil /.test(w)).length, 1, warnings.join('\n'));
  assert.ok(warnings.some((w) => /prefix\/0123456789abcdef01234567 .*names another entry/.test(w)), warnings.join('\n'));
});

test('index files and stats.json of the wrong shape are reported once, removed and rebuilt; nothing throws', async () => {
  const valid = { prefix: prefixIndex('0123456789abcdef01234567'), thread: threadIndexJson('t1') };
  const shapes: [string, (kind: 'prefix' | 'thread') => unknown][] = [
    ['null', () => null],
    ['an array', () => [1, 2]],
    ['a string', () => 'prefix'],
    ['a missing field', (k) => ({ ...valid[k], key: undefined })],
    ['"chain": null / "turns": null', (k) => (k === 'prefix' ? { ...valid.prefix, chain: null } : { ...valid.thread, turns: null })],
    ['a count as a string', (k) => ({ ...valid[k], bytes: '100' })],
    ['a negative count', (k) => ({ ...valid[k], hits: -1 })],
    ['a wrong kind', (k) => ({ ...valid[k], kind: k === 'prefix' ? 'thread' : 'prefix' })],
    ['a bad nested entry', (k) => (k === 'prefix' ? { ...valid.prefix, chain: ['a', 3] } : { ...valid.thread, turns: [{ question: 'q', answer: null, answerTokens: [] }] })],
  ];
  const statsShapes: unknown[] = [null, { recent: null }, { ...JSON.parse('{"fullHits":0,"partialHits":0,"misses":0,"continues":0,"tokensReused":0,"corruptRemoved":0,"evicted":0}'), recent: [null] }, [], 7];
  for (const [i, [label, make]] of shapes.entries()) {
    const dir = path.join(root, `shapes-${i}`);
    const warnings: string[] = [];
    const store = CacheStore.open(dir, { onWarning: (m) => warnings.push(m) });
    fs.writeFileSync(path.join(dir, 'prefix', '0123456789abcdef01234567.json'), JSON.stringify(make('prefix')));
    fs.writeFileSync(path.join(dir, 'thread', 't1.json'), JSON.stringify(make('thread')));
    fs.writeFileSync(path.join(dir, 'stats.json'), JSON.stringify(statsShapes[i % statsShapes.length]));
    assert.equal(store.findPrefix('k', hashChain(tokens)), undefined, label);
    assert.equal(store.threadIndex('t1'), undefined, label);
    assert.equal(store.loadThread('t1'), undefined, label);
    const st = store.stats();
    assert.deepEqual(st.entries, [], label);
    assert.equal(st.counters.fullHits, 0, label);
    assert.deepEqual(st.counters.recent, [], label);
    assert.equal(store.stats().entries.length, 0, label);
    await store.flush();
    assert.equal(warnings.length, 3, `${label}: one warning per damaged file:\n${warnings.join('\n')}`);
    assert.match(warnings.find((w) => w.includes('prefix/'))!, /removed a corrupted cache entry prefix\/0123456789abcdef01234567 \(its index has the wrong shape: /);
    assert.match(warnings.find((w) => w.includes('thread/'))!, /removed a corrupted cache entry thread\/t1 \(its index has the wrong shape: /);
    assert.match(warnings.find((w) => w.includes('stats.json'))!, /removed the damaged cache counters stats.json \(the wrong shape/);
    assert.deepEqual(fs.readdirSync(path.join(dir, 'prefix')), []);
    assert.deepEqual(fs.readdirSync(path.join(dir, 'thread')), []);
    // rebuilt: new entries and counters are written and read back
    store.savePrefix('k', hashChain(tokens.slice(0, 64)), await snapshotOf(tokens.slice(0, 64)));
    store.recordQuestion({ at: 1, question: 'q', outcome: 'miss', key: 'k', L: 64, B: 64, reusedTokens: 0, prefilledTokens: 64, prefillMs: 10, snapMs: 0, ttftMs: 12, decodeTokS: 5 });
    await store.flush();
    assert.equal(store.stats().entries.length, 1, label);
    assert.equal(store.stats().counters.misses, 1, label);
    assert.equal(warnings.length, 3, label);
  }
});

test('a damaged entry that cannot be removed: the answer still comes without the cache, with one warning', async () => {
  const dir = path.join(root, 'undeletable');
  const repo = path.join(root, 'undeletable-repo');
  fs.mkdirSync(repo, { recursive: true });
  fs.writeFileSync(path.join(repo, 'story.txt'), STORY);
  const base = { repo, model, contextSize: 1024, maxTokens: 4, snap: { ...DEFAULT_SNAP, window: 16, budget: 64 }, session: { threads: 1 } };
  const first = CacheStore.open(dir, { limits: { maxRamBytes: 0 } });
  await askRepository({ ...base, store: first, question: 'Who found the dog?' }, () => {});
  await first.flush();
  const [state] = fs.readdirSync(path.join(dir, 'prefix')).filter((f) => f.endsWith('.rsnp'));
  const file = path.join(dir, 'prefix', state!);
  fs.truncateSync(file, 100);

  // as a read-only folder or another user's cache would: every removal fails
  const eacces = () => {
    throw Object.assign(new Error('permission denied'), { code: 'EACCES' });
  };
  const warnings: string[] = [];
  const store = CacheStore.open(dir, { onWarning: (m) => warnings.push(m), fs: { writeFileAtomic, rm: eacces }, limits: { maxRamBytes: 0 } });
  const s = await askRepository({ ...base, store, question: 'Who found the dog?' }, () => {});
  await store.flush();
  assert.equal(s.cache, 'miss', 'the damaged prefix is not used');
  assert.equal(s.decodeTokens, 4, 'the answer came');
  assert.equal(warnings.length, 1, warnings.join('\n'));
  assert.match(warnings[0]!, /^the corrupted cache entry prefix\/[0-9a-f]{24} \(.*truncated.*\) cannot be removed \(EACCES\): caching is off/);
  assert.equal(store.isEnabled, false);
  assert.ok(fs.existsSync(file), 'the entry is still there (nothing could remove it)');
  // asking again in the same process: still an answer, no second warning
  await askRepository({ ...base, store, question: 'Where did Lily play?' }, () => {});
  assert.equal(warnings.length, 1, warnings.join('\n'));

  // clearing a cache whose files cannot be removed: one line, an error the CLI reports as such
  await assert.rejects(store.clear(), (e: Error) => {
    assert.equal(e.name, 'CacheError');
    assert.match(e.message, /^cannot clear the cache .*undeletable: prefix\/[0-9a-f]{24}\.(json|rsnp) cannot be removed \(EACCES\)$/);
    return true;
  });
});

test('prefill saved = reused tokens × the cold prefill time per token measured under the same key', async () => {
  const store = CacheStore.open(path.join(root, 'saved'));
  const q = { question: 'q', B: 64, snapMs: 1, ttftMs: 1, decodeTokS: 1 };
  // a cold question under key A: 1,000 tokens prefilled in 2,000 ms → 2 ms/token
  store.recordQuestion({ ...q, at: 1, outcome: 'miss', key: 'A', L: 1000, reusedTokens: 0, prefilledTokens: 1000, prefillMs: 2000 });
  // a hit under A: 900 tokens reused, the question's 100 tokens prefilled in 400 ms (4 ms/token: short prefills cost more per token)
  store.recordQuestion({ ...q, at: 2, outcome: 'hit', key: 'A', L: 1000, reusedTokens: 900, prefilledTokens: 100, prefillMs: 400 });
  // a partial hit under A: 600 reused
  store.recordQuestion({ ...q, at: 3, outcome: 'partial', key: 'A', L: 1000, reusedTokens: 600, prefilledTokens: 400, prefillMs: 1000 });
  // key B (another model): cold at 0.5 ms/token, then a continue reusing 300
  store.recordQuestion({ ...q, at: 4, outcome: 'miss', key: 'B', L: 800, reusedTokens: 0, prefilledTokens: 800, prefillMs: 400 });
  store.recordQuestion({ ...q, at: 5, outcome: 'continue', key: 'B', L: 400, reusedTokens: 300, prefilledTokens: 20, prefillMs: 50 });
  // key C: reuse with no cold measurement: not counted, reported
  store.recordQuestion({ ...q, at: 6, outcome: 'hit', key: 'C', L: 500, reusedTokens: 450, prefilledTokens: 50, prefillMs: 30 });
  await store.flush();
  const c = store.stats().counters;
  // by hand: 900 × 2 + 600 × 2 + 300 × 0.5 = 1800 + 1200 + 150 = 3150 ms
  assert.equal(c.prefillSavedMs, 3150);
  assert.equal(c.unmeasuredReuses, 1);
  assert.equal(c.tokensReused, 900 + 600 + 300 + 450);
  assert.deepEqual(c.coldPrefill, { A: { msPerToken: 2, tokens: 1000, at: 1 }, B: { msPerToken: 0.5, tokens: 800, at: 4 } });
});

test('removeIfEmpty removes a folder that holds nothing, and only that; saving afterwards makes it again', async () => {
  const dir = path.join(root, 'ws-empty');
  const store = CacheStore.open(dir);
  assert.deepEqual(fs.readdirSync(dir).sort(), ['prefix', 'thread'], 'open() makes the two folders');
  assert.equal(store.fingerprintMemo, path.join(root, 'model-fingerprints.json'), "the model fingerprints live in the store's cache root");
  assert.equal(await store.removeIfEmpty(), true);
  assert.equal(fs.existsSync(dir), false);
  assert.equal(fs.existsSync(`${dir}.lock`), false, 'the folder lock is released and gone');
  assert.equal(await store.removeIfEmpty(), false, 'nothing left to remove');

  // counters alone are content (questions were answered): kept
  const counted = CacheStore.open(path.join(root, 'ws-counters'));
  counted.recordQuestion({ at: 1, question: 'q', outcome: 'miss', L: 10, B: 10, reusedTokens: 0, prefilledTokens: 10, prefillMs: 5, snapMs: 0, ttftMs: 6, decodeTokS: 1 });
  assert.equal(await counted.removeIfEmpty(), false);
  assert.ok(fs.existsSync(path.join(root, 'ws-counters', 'stats.json')));

  // a thread lock another question holds: kept (its folder is not empty)
  const locked = CacheStore.open(path.join(root, 'ws-locked'));
  const lock = await locked.lockThread('t1');
  assert.equal(await locked.removeIfEmpty(), false);
  await lock.release();
  assert.equal(await locked.removeIfEmpty(), true, 'once released the folder holds nothing');

  // a store whose folder was removed writes again: the folders are made anew under the lock
  const snap = await snapshotOf(tokens.slice(0, 80));
  store.savePrefix('k', hashChain(snap.tokens), snap);
  await store.flush();
  assert.equal(store.isEnabled, true);
  assert.equal(store.stats().entries.length, 1);
});

test('makeFolder creates the missing levels, accepts an existing folder, and refuses a file in the way', () => {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-mkdir-'));
  try {
    makeFolder(path.join(base, 'a', 'b', 'c'));
    assert.ok(fs.statSync(path.join(base, 'a', 'b', 'c')).isDirectory());
    makeFolder(path.join(base, 'a', 'b')); // exists: nothing to do
    fs.writeFileSync(path.join(base, 'f'), 'x');
    assert.throws(() => makeFolder(path.join(base, 'f')), { code: 'EEXIST' });
    assert.throws(() => makeFolder(path.join(base, 'f', 'g')), { code: 'ENOTDIR' });
  } finally {
    fs.rmSync(base, { recursive: true, force: true });
  }
});

test("a cache folder under /proc (mkdir answers ENOENT under an existing folder) turns caching off instead of spinning in mkdirSync's recursive loop", { skip: process.platform !== 'linux' && '/proc is Linux only' }, () => {
  // in a child process: the old code never returned (mkdirSync recursive, 11 minutes at 100 % CPU, SIGTERM ignored)
  const script = [
    `const { CacheStore } = require(${JSON.stringify(path.join(__dirname, '..', '..', 'src', 'cache', 'store.ts'))});`,
    `const { writeFileAtomic } = require(${JSON.stringify(path.join(__dirname, '..', '..', 'src', 'engine', 'state-file.ts'))});`,
    `const store = CacheStore.open('/proc/self/reposnap-cache/repo-1');`,
    `let code = 'none';`,
    `try { writeFileAtomic('/proc/self/reposnap-cache/model-fingerprints.json', new Uint8Array(1)); } catch (e) { code = e.code; }`,
    `process.stdout.write(JSON.stringify({ enabled: store.enabled, code }));`,
  ].join('\n');
  const r = spawnSync(process.execPath, ['--import', 'tsx', '-e', script], { encoding: 'utf8', timeout: 60_000, killSignal: 'SIGKILL' });
  assert.equal(r.signal, null, 'the child returned (it was killed after 60 s when mkdirSync looped)');
  assert.deepEqual(JSON.parse(r.stdout), { enabled: false, code: 'ENOENT' });
});

test('a store whose folder became writable by others reads none of its entries (issue 29, item 4)', async () => {
  const dir = path.join(root, 'ws-refused');
  const store = CacheStore.open(dir);
  const chain = hashChain(tokens);
  store.savePrefix('k', chain, await snapshotOf(tokens));
  await store.flush();
  assert.ok(CacheStore.open(dir).findPrefix('k', chain), 'found while the folder is private');
  fs.chmodSync(path.join(dir, 'prefix'), 0o775);
  const warnings: string[] = [];
  const refused = CacheStore.open(dir, { onWarning: (w) => warnings.push(w) });
  assert.equal(refused.findPrefix('k', chain), undefined);
  assert.equal(refused.stats().entries.length, 0);
  assert.match(warnings.join('\n'), /prefix is writable by its group \(mode 0775\)/);
});
