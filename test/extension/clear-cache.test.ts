/**
 * `RepoSnap: Clear Cache` confirms in a modal and says what it deletes (issue 14, section 5):
 * how many cached KV states of which kind, how many bytes, from which folder, and that the
 * recorded question stats are reset; Cancel deletes nothing. The command runs against the
 * `vscode` stand-in (fake-vscode.ts) over a real cache store holding two repository prefixes
 * saved from the tiny model.
 */
import { fake, Uri } from './fake-vscode';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { hashChain } from '../../src/cache/hash-chain';
import { CacheStore } from '../../src/cache/store';
import { registerCommands } from '../../src/commands/register';
import { loadModel } from '../../src/engine/model';
import { createSession } from '../../src/engine/session';
import { clearCachePrompt, formatBytes } from '../../src/stats/clear-cache';
import { QuestionRecords } from '../../src/stats/records';
import type { WireAskStats } from '../../src/host/protocol';
import { checkTinyModel, STORY } from '../helpers/models';

let root: string;
let dir: string;

before(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-clear-'));
  dir = path.join(root, 'cache', 'ws-0123456789ab');
  const model = await loadModel(checkTinyModel());
  try {
    const tokens = Array.from(model.tokenize(STORY, { addSpecial: true }));
    const store = CacheStore.open(dir);
    for (const [key, n] of [['key-a', 128], ['key-b', 192]] as const) {
      const s = createSession(model, { contextSize: 1024, threads: 1, snapWindow: 0 });
      try {
        await s.prefill(tokens.slice(0, n));
        store.savePrefix(key, hashChain(tokens.slice(0, n)), await s.snapshot());
      } finally {
        s.dispose();
      }
    }
    await store.flush();
  } finally {
    model.dispose();
  }
});
after(() => fs.rmSync(root, { recursive: true, force: true }));

/** The state files' bytes on disk, measured here (not by the store). */
function stateBytesOnDisk(): number {
  const d = path.join(dir, 'prefix');
  return fs.readdirSync(d).filter((f) => f.endsWith('.rsnp')).reduce((n, f) => n + fs.statSync(path.join(d, f)).size, 0);
}

function records(n: number): QuestionRecords {
  const m = new Map<string, unknown>();
  const r = new QuestionRecords({ get: <T>(k: string) => m.get(k) as T | undefined, update: async (k, v) => void m.set(k, v) });
  const s = { L: 100, B: 64, ratio: 0.64, snap: true, files: 1, packMs: 1, prefillMs: 1, prefillTokS: 1, snapMs: 1, ttftMs: 1, decodeMs: 1, decodeTokens: 1, decodeTokS: 1, kvBytesBefore: 2, kvBytesAfter: 1, cache: 'miss' } as WireAskStats;
  for (let i = 0; i < n; i++) r.add('chat', 'm', `q${i}`, s);
  return r;
}

function register(recs: QuestionRecords) {
  const freed: number[] = [];
  const context = { subscriptions: [] as { dispose(): unknown }[] };
  const engine = {
    repository: () => ({ uri: Uri.file(path.join(root, 'ws')), name: 'ws', index: 0 }),
    cacheDir: async () => dir,
    // what the engine process does for the command: the store's bytes, then clear()
    clearCache: async () => {
      const store = CacheStore.open(dir, { create: false });
      const bytes = store.stats().totalBytes;
      await store.clear();
      freed.push(bytes);
      return bytes;
    },
  };
  registerCommands(context as never, { engine, records: recs } as never);
  return { freed, run: () => fake.commands.get('reposnap.clearCache')!() as Promise<boolean> };
}

test('Clear Cache asks first, naming what it deletes; Cancel deletes nothing', async () => {
  fake.reset();
  const recs = records(3);
  const { run, freed } = register(recs);
  const bytes = stateBytesOnDisk();
  assert.ok(bytes > 2 ** 10 && bytes < 2 ** 20, `the tiny model's two states take KiB: ${bytes}`);
  fake.answers.message = undefined; // the modal's Cancel
  assert.equal(await run(), false);
  assert.equal(fake.messages.length, 1);
  const m = fake.messages[0]!;
  assert.equal(m.level, 'warning');
  assert.equal(m.message, "Clear RepoSnap's cache for ws?");
  assert.deepEqual(m.items, ['Clear Cache']);
  const options = m.options as { modal: boolean; detail: string };
  assert.equal(options.modal, true);
  assert.equal(
    options.detail,
    `It deletes 2 cached KV states (2 repository prefixes, 0 threads), ${(bytes / 1024).toFixed(1)} KiB, from ${dir}. ` +
      'The 3 recorded questions in Cache Stats are reset too. The next question reads the repository again (a full prefill).',
  );
  assert.deepEqual(freed, [], 'nothing cleared');
  assert.equal(CacheStore.open(dir, { create: false }).stats().entries.length, 2);
  assert.equal(recs.all().length, 3);
});

test('Clear Cache, confirmed, deletes the entries and the question stats, and says how much it freed', async () => {
  fake.reset();
  const recs = records(3);
  const { run, freed } = register(recs);
  const bytes = stateBytesOnDisk();
  fake.answers.message = 'Clear Cache';
  assert.equal(await run(), true);
  assert.equal(CacheStore.open(dir, { create: false }).stats().entries.length, 0);
  assert.deepEqual(fs.readdirSync(path.join(dir, 'prefix')).filter((f) => !f.endsWith('.lock')), []);
  assert.equal(recs.all().length, 0);
  assert.deepEqual(freed, [bytes]);
  assert.equal(fake.messages.at(-1)!.message, `RepoSnap: cache cleared (${(bytes / 1024).toFixed(1)} KiB freed; question stats reset).`);
  // once empty, nothing to confirm
  fake.messages.length = 0;
  assert.equal(await run(), false);
  assert.deepEqual(fake.messages.map((x) => [x.level, x.message]), [['info', 'RepoSnap: the cache is already empty.']]);
});

test('the prompt\'s wording: kinds, singulars, sizes (hand-written expectations)', () => {
  const prefix = { kind: 'prefix' } as never;
  const thread = { kind: 'thread' } as never;
  assert.deepEqual(clearCachePrompt({ dir: '/c/ws', entries: [prefix, thread], totalBytes: 3 * 2 ** 20 + 2 ** 19 }, 1, 'ws'), {
    message: "Clear RepoSnap's cache for ws?",
    detail: 'It deletes 2 cached KV states (1 repository prefix, 1 thread), 3.5 MiB, from /c/ws. The 1 recorded question in Cache Stats is reset too. The next question reads the repository again (a full prefill).',
    confirm: 'Clear Cache',
  });
  assert.equal(clearCachePrompt({ dir: '/c/ws', entries: [], totalBytes: 0 }, 0, 'ws'), undefined);
  assert.match(clearCachePrompt({ dir: '/c/ws', entries: [], totalBytes: 0 }, 2, 'ws')!.detail, /^The cache holds no KV state\. The 2 recorded questions/);
  assert.deepEqual([formatBytes(0), formatBytes(1), formatBytes(1023), formatBytes(1536), formatBytes(41.26 * 2 ** 20), formatBytes(2.1 * 2 ** 30)], ['0 bytes', '1 byte', '1,023 bytes', '1.5 KiB', '41.3 MiB', '2.10 GiB']);
});
