/**
 * `restoreMs` (the CLI's `restore_ms`) covers the whole restore: reading and checking the cached
 * state (`restoreReadMs`, also in the `--json` stats) and putting it into the engine, on the tiny
 * model. (Before: it timed the engine's restore only; a slow disk's read of the state file was
 * counted nowhere.) The store's reads are slowed by a known delay (a slow disk: each read still
 * happens, then waits), so the bounds below hold on any machine.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { CacheStore } from '../../src/cache/store';
import { loadModel, type EngineModel } from '../../src/engine/model';
import { askRepository, DEFAULT_SNAP, type AskStats } from '../../src/pipeline/ask';
import { writeCoreUsersRepo } from '../helpers/core-users-repo';
import { checkTinyModel } from '../helpers/models';

/** The delay each slowed read adds [ms]; far above the tiny model's engine restore (a few ms). */
const SLOW_MS = 400;

let model: EngineModel;
let tmp: string;
let repo: string;

before(async () => {
  model = await loadModel(checkTinyModel());
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-restore-ms-'));
  repo = path.join(tmp, 'repo');
  writeCoreUsersRepo(repo);
});
after(() => {
  model.dispose();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** Waits `ms` without yielding (the store's reads are synchronous). */
function busyWait(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

test("restoreMs covers reading the cached state (restoreReadMs) and the engine's restore, for a prefix and a continued thread", async () => {
  const store = CacheStore.open(path.join(tmp, 'cache'), { onWarning: (m) => assert.fail(`unexpected cache warning: ${m}`) });
  const reads: string[] = [];
  const loadPrefix = store.loadPrefix.bind(store);
  const loadThread = store.loadThread.bind(store);
  store.loadPrefix = (index) => {
    const snap = loadPrefix(index);
    reads.push('prefix');
    busyWait(SLOW_MS);
    return snap;
  };
  store.loadThread = (id, expect) => {
    const thread = loadThread(id, expect);
    reads.push('thread');
    busyWait(SLOW_MS);
    return thread;
  };
  const ask = async (question: string, followUp: 'resnap' | 'continue'): Promise<AskStats> => {
    const stats = await askRepository({ repo, model, store, question, threadId: 't', followUp, snap: DEFAULT_SNAP, contextSize: 2048, maxTokens: 2, session: { threads: 2 } }, () => {});
    await store.flush();
    return stats;
  };
  const miss = await ask('What does use7 return?', 'resnap');
  assert.equal(miss.cache, 'miss');
  assert.deepEqual(reads, []);
  assert.equal(miss.restoreMs, 0);

  const hit = await ask('What does use8 return?', 'resnap');
  assert.equal(hit.cache, 'hit');
  assert.deepEqual(reads, ['prefix']);
  assert.ok(hit.restoreMs >= SLOW_MS, `restore ${hit.restoreMs} ms`);
  assert.equal(miss.restoreReadMs, 0);
  assert.ok(hit.restoreReadMs >= SLOW_MS, `read ${hit.restoreReadMs} ms`);
  // the engine's part comes on top of the read
  assert.ok(hit.restoreMs > hit.restoreReadMs, `restore ${hit.restoreMs} ms, read ${hit.restoreReadMs} ms`);

  const continued = await ask('And use9?', 'continue');
  assert.equal(continued.cache, 'continue');
  assert.deepEqual(reads, ['prefix', 'thread']);
  assert.ok(continued.restoreReadMs >= SLOW_MS, `read ${continued.restoreReadMs} ms`);
  assert.ok(continued.restoreMs > continued.restoreReadMs, `restore ${continued.restoreMs} ms, read ${continued.restoreReadMs} ms`);
});
