/**
 * The pipeline on an interleaved sliding-window model (issue 17): a synthetic gemma3 that
 * llama.cpp itself builds (12 layers, 5 local to 1 global, so layers 5 and 11 are global; sliding
 * window 32; 4 query heads, 2 KV heads, head size 32; F16 K/V, the pipeline's default), asked
 * through `askRepository` like any model:
 * - the stats give B for the global layers and the sliding layers' cells and window apart
 *   (`swa_cells=… swa_window=…` on the CLI's stats line, the chat badge, the stats panel's
 *   records), the KV bytes before and after exactly; a model without sliding-window layers
 *   gets none of these fields;
 * - the per-workspace cache store: the uncompressed prefix saved to disk and restored (a hit,
 *   RAM copy off) keeps the same positions and gives the same answer as a cold run, and so does a
 *   prefix that matches in part, restored and cut (saved with every sliding-layer cell); a thread's
 *   compressed iSWA cache saved and restored continues the thread (`continue`).
 */
import '../extension/fake-vscode'; // src/chat/view.ts imports vscode
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { CacheStore } from '../../src/cache/store';
import { answerStats } from '../../src/chat/view';
import { badgeText } from '../../src/chat/protocol';
import { formatStats } from '../../src/cli/stats-line';
import { loadModel, type EngineModel } from '../../src/engine/model';
import { EngineSession } from '../../src/engine/session';
import { ensureSyntheticModel } from '../../src/engine/synthetic';
import { askRepository, DEFAULT_SNAP, type AskRequest, type AskStats } from '../../src/pipeline/ask';
import { QuestionRecords } from '../../src/stats/records';
import { checkTinyModel } from '../helpers/models';

/** The synthetic gemma3's shape (as test/engine/iswa.test.ts); llama.cpp's gemma3 loader sets the 5-to-1 pattern. */
const SHAPE = { architecture: 'gemma3', slidingWindow: 32, nLayer: 12, nEmbd: 128, nHead: 4, nHeadKv: 2, nFf: 256, nVocab: 512, weightType: 'f32' as const, seed: 3 };
const N_GLOBAL = 2; // layers 5 and 11 (il % 6 == 5)
const N_SWA_LAYERS = SHAPE.nLayer - N_GLOBAL;
const HEAD_DIM = SHAPE.nEmbd / SHAPE.nHead;
/** K + V bytes of one cell over the given layers: layers · n_head_kv · (d_k + d_v) · 2 (F16 cache). */
const bytesPerCell = (layers: number) => layers * SHAPE.nHeadKv * (HEAD_DIM + HEAD_DIM) * 2;
const BUDGET = 64;
const SNAP = { ...DEFAULT_SNAP, budget: BUDGET, window: 16 };

let dir: string;
let repo: string;
let model: EngineModel;

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-iswa-ask-'));
  model = await loadModel(await ensureSyntheticModel(dir, SHAPE));
  repo = path.join(dir, 'repo');
  fs.mkdirSync(path.join(repo, 'src'), { recursive: true });
  for (let i = 0; i < 3; i++) fs.writeFileSync(path.join(repo, 'src', `part${i}.ts`), `export function part${i}(x: number): number {\n  return x * ${i} + ${i * 7};\n}\n`.repeat(2));
});

after(() => {
  model.dispose();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Asks on the synthetic gemma3; returns the stats, the answer's text, the kept positions of the snap and the notices. */
async function ask(req: Partial<AskRequest> & { question: string }, on: EngineModel = model) {
  let kept = new Int32Array(0);
  let text = '';
  const notices: string[] = [];
  const stats: AskStats = await askRepository(
    {
      repo,
      model: on,
      snap: SNAP,
      contextSize: 1024,
      maxTokens: 8,
      // packed for the 8-token answer, as the fixture's sizes were chosen for (part1.ts in the prompt)
      answerRoom: 8,
      session: { threads: 1 },
      temperature: 0,
      afterSnap: (s) => {
        kept = Int32Array.from(s.snapKept());
      },
      ...req,
    },
    (e) => {
      if (e.kind === 'token') text += e.text;
      if (e.kind === 'notice') notices.push(e.message);
    },
  );
  await req.store?.flush();
  return { stats, text, kept, notices };
}

test('iSWA stats: B for the global layers, the sliding layers\' cells and window apart, KV bytes exact; none for other models', async () => {
  assert.equal(model.info.nSwa, SHAPE.slidingWindow);
  const { stats: s } = await ask({ question: 'What does part1 return?' });
  assert.ok(s.snap && s.L > 2 * SHAPE.slidingWindow && s.B === BUDGET, `compressed: L ${s.L}, B ${s.B}`);
  // llama.cpp's sliding layers keep, for the last position, the positions the window does not mask: min(L, n_swa)
  assert.equal(s.swaCells, Math.min(s.L, SHAPE.slidingWindow));
  assert.equal(s.swaWindow, SHAPE.slidingWindow);
  assert.equal(s.kvBytesBefore, s.L * bytesPerCell(N_GLOBAL) + SHAPE.slidingWindow * bytesPerCell(N_SWA_LAYERS));
  assert.equal(s.kvBytesAfter, BUDGET * bytesPerCell(N_GLOBAL) + SHAPE.slidingWindow * bytesPerCell(N_SWA_LAYERS));
  assert.match(formatStats(s), new RegExp(` L=${s.L} B=${BUDGET} swa_cells=32 swa_window=32 ratio=`));
  assert.match(formatStats(s), new RegExp(` kv_bytes=${s.kvBytesBefore}->${s.kvBytesAfter} `));

  // the extension: the badge (in the chat's Context line) and the stats panel's record
  const badge = answerStats({ ...s, cache: s.cache });
  assert.deepEqual([badge.swaCells, badge.swaWindow], [32, 32]);
  assert.match(badgeText(badge), new RegExp(`^L ${s.L.toLocaleString('en-US')} → B 64 \\(${(BUDGET / s.L).toFixed(2)}\\) · sliding layers 32 cells \\(window 32\\) · prefill `));
  let saved: unknown;
  const records = new QuestionRecords({ get: () => undefined, update: async (_k, v) => void (saved = v) });
  const r = records.add('chat', 'gemma3', 'q', s, 1);
  assert.deepEqual([r.B, r.swaCells, r.swaWindow], [BUDGET, 32, 32]);
  assert.deepEqual((saved as typeof r[])[0]!.swaCells, 32);

  // a model without sliding-window layers: no swa fields anywhere
  const tiny = await loadModel(checkTinyModel());
  try {
    const { stats: t } = await ask({ question: 'What does part1 return?', snap: { ...DEFAULT_SNAP, budget: 64 } }, tiny);
    assert.ok(t.B < t.L);
    assert.deepEqual([t.swaCells, t.swaWindow], [undefined, undefined]);
    assert.doesNotMatch(formatStats(t), /swa_/);
    assert.doesNotMatch(badgeText(answerStats({ ...t, cache: t.cache })), /sliding/);
    assert.equal(records.add('chat', 'tiny', 'q', t, 2).swaWindow, undefined);
  } finally {
    tiny.dispose();
  }
});

test('iSWA cache store: a prefix restored from disk keeps the positions and the answer of a cold run', async () => {
  const question = 'Which part adds 14?';
  const cold = await ask({ question });
  assert.equal(cold.stats.cache, 'off');
  // no RAM copy: the hit reads the state file back from disk
  const store = CacheStore.open(path.join(dir, 'store-prefix'), { limits: { maxRamBytes: 0 }, onWarning: (m) => assert.fail(`unexpected cache warning: ${m}`) });
  const miss = await ask({ question, store });
  assert.equal(miss.stats.cache, 'miss');
  const hit = await ask({ question, store });
  assert.equal(hit.stats.cache, 'hit');
  assert.ok(hit.stats.reusedTokens > 0 && hit.stats.reusedTokens <= hit.stats.prefixTokens, `reused ${hit.stats.reusedTokens}`);
  for (const r of [miss, hit]) {
    assert.deepEqual([r.stats.L, r.stats.B, r.stats.swaCells, r.stats.kvBytesBefore, r.stats.kvBytesAfter], [cold.stats.L, cold.stats.B, cold.stats.swaCells, cold.stats.kvBytesBefore, cold.stats.kvBytesAfter]);
    assert.equal(r.kept.length, N_GLOBAL * SHAPE.nHeadKv * BUDGET, 'kept positions of the global layers only');
    assert.deepEqual(r.kept, cold.kept, `${r.stats.cache}: the same kept positions as cold`);
    assert.equal(r.text, cold.text, `${r.stats.cache}: the same answer as cold`);
  }
  assert.ok(cold.text.length > 0);
});

test("iSWA cache store: a thread's compressed cache saved and restored continues the thread", async () => {
  const store = CacheStore.open(path.join(dir, 'store-thread'), { limits: { maxRamBytes: 0 }, onWarning: (m) => assert.fail(`unexpected cache warning: ${m}`) });
  const first = await ask({ question: 'What does part2 return?', store, threadId: 'th', followUp: 'continue' });
  assert.equal(first.stats.cache, 'miss');
  const saved = store.loadThread('th');
  assert.ok(saved, 'the thread was saved');
  // the compressed cache after the answer: B kept cells of the global layers, then every decoded token
  const decodedIntoCache = saved.snap.header.nPast - first.stats.L;
  assert.ok(decodedIntoCache > 0);
  assert.equal(saved.snap.header.cells, BUDGET + decodedIntoCache);
  assert.equal(saved.snap.header.snap?.B, BUDGET);

  const second = await ask({ question: 'And part0?', store, threadId: 'th', followUp: 'continue' });
  assert.equal(second.stats.cache, 'continue');
  assert.equal(second.stats.reusedTokens, saved.snap.header.nPast, 'the whole compressed state restored');
  assert.equal(second.kept.length, 0, 'a continued thread is not snapped again');
  // no new snap: the global layers hold the restored cells plus the new turn's prefilled tokens; the sliding layers their window
  const cells = BUDGET + second.stats.reusedTokens + second.stats.prefilledTokens - first.stats.L;
  assert.equal(second.stats.B, cells);
  assert.equal(second.stats.swaCells, SHAPE.slidingWindow);
  assert.equal(second.stats.kvBytesAfter, cells * bytesPerCell(N_GLOBAL) + SHAPE.slidingWindow * bytesPerCell(N_SWA_LAYERS));
  assert.equal(store.threadIndex('th')!.turns.length, 2);
});

test('iSWA cache store: a prefix that matches only in part is restored and cut (its sliding layers saved whole), giving the positions and the answer of a cold run', async () => {
  const repo2 = path.join(dir, 'repo-partial');
  fs.cpSync(repo, repo2, { recursive: true });
  const store = CacheStore.open(path.join(dir, 'store-partial'), { limits: { maxRamBytes: 0 }, onWarning: (m) => assert.fail(`unexpected cache warning: ${m}`) });
  // a question shorter than the window: even the full hit cuts the restored prefix at L - w
  for (const question of ['Which part adds 14?', 'Why?']) {
    const first = await ask({ repo: repo2, question, store });
    assert.ok(first.stats.cache === 'miss' || first.stats.cache === 'hit');
    const again = await ask({ repo: repo2, question, store });
    assert.equal(again.stats.cache, 'hit');
    const cold = await ask({ repo: repo2, question });
    assert.deepEqual(again.kept, cold.kept, `${question}: hit keeps a cold run's positions`);
    assert.equal(again.text, cold.text);
  }
  // the packed files' last lines change (same length): the cached prefix matches up to a checkpoint before the first change
  for (const f of ['part0.ts', 'part1.ts']) {
    const file = path.join(repo2, 'src', f);
    const text = fs.readFileSync(file, 'utf8');
    const at = text.lastIndexOf(';');
    fs.writeFileSync(file, `${text.slice(0, at - 1)}9${text.slice(at)}`);
  }
  const partial = await ask({ repo: repo2, question: 'Which part adds 14?', store });
  // the prefix was saved cuttable (every sliding-layer cell, patch 0008's state flag): restored,
  // cut at the first changed token, and the rest prefilled
  assert.equal(partial.stats.cache, 'partial');
  assert.ok(partial.stats.reusedTokens >= 64, `reused ${partial.stats.reusedTokens}`);
  assert.ok(partial.stats.reusedTokens < partial.stats.prefixTokens);
  const cold = await ask({ repo: repo2, question: 'Which part adds 14?' });
  assert.deepEqual([partial.stats.L, partial.stats.B, partial.stats.swaCells, partial.stats.kvBytesAfter], [cold.stats.L, cold.stats.B, cold.stats.swaCells, cold.stats.kvBytesAfter]);
  assert.deepEqual(partial.kept, cold.kept, 'partial: the same kept positions as cold');
  assert.equal(partial.text, cold.text, 'partial: the same answer as cold');
});

test('iSWA cache store: a prefix saved with the sliding window only (llama.cpp\'s default state) is prefilled again when it would be cut, with a cold run\'s answer', async () => {
  const repo3 = path.join(dir, 'repo-window-only');
  fs.cpSync(repo, repo3, { recursive: true });
  const store = CacheStore.open(path.join(dir, 'store-window-only'), { limits: { maxRamBytes: 0 }, onWarning: (m) => assert.fail(`unexpected cache warning: ${m}`) });
  // the prefix saved as llama.cpp's state_write does by default: the sliding layers' last n_swa positions
  const snapshot = EngineSession.prototype.snapshot;
  EngineSession.prototype.snapshot = function (this: EngineSession) {
    return snapshot.call(this, {});
  };
  try {
    assert.equal((await ask({ repo: repo3, question: 'Which part adds 14?', store })).stats.cache, 'miss');
  } finally {
    EngineSession.prototype.snapshot = snapshot;
  }
  const file = path.join(repo3, 'src', 'part1.ts');
  const text = fs.readFileSync(file, 'utf8');
  const at = text.lastIndexOf(';');
  fs.writeFileSync(file, `${text.slice(0, at - 1)}9${text.slice(at)}`);
  const again = await ask({ repo: repo3, question: 'Which part adds 14?', store });
  // truncate refused the cut (the window of the cut is gone): no partial reuse, no notice, a prefill
  assert.deepEqual([again.stats.cache, again.stats.reusedTokens, again.notices], ['miss', 0, []]);
  const cold = await ask({ repo: repo3, question: 'Which part adds 14?' });
  assert.deepEqual([again.stats.L, again.stats.B, again.stats.kvBytesAfter], [cold.stats.L, cold.stats.B, cold.stats.kvBytesAfter]);
  assert.deepEqual(again.kept, cold.kept);
  assert.equal(again.text, cold.text);
});
