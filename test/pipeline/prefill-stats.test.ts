/**
 * The prompt and prefill counts a question prints are its own (tiny model): a follow-up that
 * continues a thread with the ranked packing reports as its prompt the thread's cache and its new
 * turn, L, not a prompt with this question's retrieval section (computed, but not in the prompt);
 * and prefill_ms / prefill_tok_s time only the prefill calls: a question that first waits for
 * another process prefilling the same prefix (its lock, src/cache/store.ts `lockPrefix`) does not
 * count the wait. (Before: the `packed` line of a continued follow-up counted this question's
 * retrieval section, and the prefill time ran from before the restore, the wait and the thread's
 * state read included.)
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { CacheStore } from '../../src/cache/store';
import { loadModel, type EngineModel } from '../../src/engine/model';
import { askRepository, DEFAULT_SNAP, type AskEvent, type AskRequest } from '../../src/pipeline/ask';
import { checkTinyModel } from '../helpers/models';

let model: EngineModel;
let tmp: string;
let repo: string;

before(async () => {
  model = await loadModel(checkTinyModel());
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-prefill-stats-'));
  repo = path.join(tmp, 'repo');
  fs.mkdirSync(path.join(repo, 'src'), { recursive: true });
  fs.writeFileSync(path.join(repo, 'src', 'core.ts'), `export function coreTotal(xs: number[]): number {\n  return xs.reduce((a, b) => a + b, 0);\n}\n${'// core notes\n'.repeat(60)}`);
  for (let i = 0; i < 40; i++) {
    fs.writeFileSync(path.join(repo, 'src', `use${i}.ts`), `import { coreTotal } from './core';\nexport function use${i}(): number {\n  return coreTotal([${i}, ${i + 1}]);\n}\n`);
  }
});
after(() => {
  model.dispose();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** One question; its events with the time each came [ms, performance.now()]. */
async function ask(store: CacheStore, extra: Partial<AskRequest> & { question: string }) {
  const events: { at: number; e: AskEvent }[] = [];
  const stats = await askRepository(
    { repo, model, store, snap: DEFAULT_SNAP, contextSize: 2048, maxTokens: 2, session: { threads: 2 }, pack: { packing: 'ranked' }, retrievalShare: 0.15, ...extra },
    (e) => events.push({ at: performance.now(), e }),
  );
  const end = performance.now();
  await store.flush();
  const packed = events.filter((x) => x.e.kind === 'packed');
  assert.equal(packed.length, 1);
  const cacheAt = events.find((x) => x.e.kind === 'cache')!.at;
  return { stats, events, end, cacheAt, promptTokens: (packed[0]!.e as { promptTokens: number }).promptTokens };
}

// a question that names twenty functions: BM25 fills the retrieval room with their chunks
const MANY = `What do ${Array.from({ length: 20 }, (_, i) => `use${i + 1}`).join(' ')} return?`;

test('a continued follow-up with the ranked packing prints its own prompt (L) and prefill, without its retrieval section', async () => {
  const store = CacheStore.open(path.join(tmp, 'cache-continue'));
  const first = await ask(store, { question: 'Hello?', threadId: 't', followUp: 'continue' });
  assert.equal(first.promptTokens, first.stats.L);
  const cached = store.loadThread('t')!.snap.tokens.length;
  const second = await ask(store, { question: MANY, threadId: 't', followUp: 'continue' });
  const s = second.stats;
  assert.equal(s.cache, 'continue');
  // the premise: this question's retrieval found chunks (a resnap would put them in its prompt)
  const resnap = await ask(CacheStore.open(path.join(tmp, 'cache-resnap')), { question: MANY });
  assert.ok(resnap.stats.context!.files.some((f) => f.status === 'retrieved'), 'the question retrieves chunks');
  // the continued prompt: the thread's cache (first prompt and its answer) and the new turn
  assert.equal(second.promptTokens, s.L);
  assert.equal(s.L, s.reusedTokens + s.prefilledTokens);
  assert.equal(s.reusedTokens, cached, "the thread's cache, restored whole");
  assert.ok(cached > first.stats.L);
  assert.equal(s.prefillTokS, s.prefilledTokens / (s.prefillMs / 1000));
  // the prefill's time lies after the restore ('cache' event) and before the answer is done
  assert.ok(s.prefillMs > 0 && s.prefillMs <= second.end - second.cacheAt, `prefill ${s.prefillMs} ms, ${second.end - second.cacheAt} ms from the restore to the end`);
});

test('a question that waited for another process prefilling the same prefix does not count the wait as prefill', async () => {
  const store = CacheStore.open(path.join(tmp, 'cache-wait'));
  const prefixDir = path.join(store.dir, 'prefix');
  // the lock's name: the entry the question saves (a first run finds it, then its entry goes)
  const cold = await ask(store, { question: 'What does use3 return?' });
  const [entry] = fs.readdirSync(prefixDir).filter((n) => n.endsWith('.json'));
  const id = entry!.slice(0, -'.json'.length);
  for (const ext of ['json', 'rsnp']) fs.rmSync(path.join(prefixDir, `${id}.${ext}`));
  // another process holds the prefix's lock for 1.5 s, then dies (kill -9): its lock is taken over
  const holder = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)']);
  try {
    fs.writeFileSync(path.join(prefixDir, `${id}.lock`), JSON.stringify({ pid: holder.pid, host: os.hostname(), nonce: 'held', at: Date.now() }));
    const timer = setTimeout(() => holder.kill('SIGKILL'), 1500);
    const waited = await ask(store, { question: 'What does use3 return?' });
    clearTimeout(timer);
    const notice = waited.events.find((x) => x.e.kind === 'notice' && x.e.message === `waiting for another RepoSnap process prefilling this repository (pid ${holder.pid})…`);
    assert.ok(notice, JSON.stringify(waited.events.map((x) => x.e.kind)));
    const s = waited.stats;
    assert.equal(s.cache, 'miss', 'the holder saved nothing: this question prefilled the prefix itself');
    assert.equal(s.prefilledTokens, cold.stats.prefilledTokens);
    assert.equal(s.prefillTokS, s.prefilledTokens / (s.prefillMs / 1000));
    // the wait came before the restore's 'cache' event; the prefill after it
    assert.ok(waited.cacheAt - notice.at >= 1000, `waited ${waited.cacheAt - notice.at} ms`);
    assert.ok(s.prefillMs <= waited.end - waited.cacheAt, `prefill ${s.prefillMs} ms, ${waited.end - waited.cacheAt} ms from the restore to the end`);
    assert.equal(fs.existsSync(path.join(prefixDir, `${id}.lock`)), false, 'the taken-over lock is released');
  } finally {
    holder.kill('SIGKILL');
    if (holder.exitCode === null && holder.signalCode === null) await once(holder, 'exit');
  }
});
