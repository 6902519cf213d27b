/**
 * Prepare-only requests (what the extension's file watcher sends): the cached repository prefix
 * is brought up to date after an edit, so the next question prefills only itself.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { CacheStore } from '../../src/cache/store';
import { loadModel, type EngineModel } from '../../src/engine/model';
import { askRepository, DEFAULT_SNAP } from '../../src/pipeline/ask';
import { checkTinyModel, STORY } from '../helpers/models';

let model: EngineModel;
let tmp: string;
before(async () => {
  model = await loadModel(checkTinyModel());
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-prepare-'));
});
after(() => {
  model.dispose();
  fs.rmSync(tmp, { recursive: true, force: true });
});

test('after an edit, a prepare-only request refreshes the prefix and the next question is a hit', async () => {
  const repo = path.join(tmp, 'repo');
  fs.mkdirSync(repo);
  const sentences = STORY.split('. ');
  ['a', 'b', 'c'].forEach((n, i) => {
    const f = path.join(repo, `${n}.txt`);
    fs.writeFileSync(f, sentences.slice(i * 3, i * 3 + 5).join('. ') + '.\n');
    const t = new Date(Date.UTC(2026, 0, 1 + i));
    fs.utimesSync(f, t, t);
  });
  const store = CacheStore.open(path.join(tmp, 'cache'));
  const base = { repo, model, store, contextSize: 1024, maxTokens: 4, snap: { ...DEFAULT_SNAP, window: 16, budget: 64 }, session: { threads: 1 } };
  const ask = async (question: string, prepareOnly = false) => {
    const s = await askRepository({ ...base, question, prepareOnly }, () => {});
    await store.flush();
    return s;
  };

  const first = await ask('', true);
  assert.equal(first.cache, 'miss');
  assert.equal(first.decodeTokens, 0, 'nothing decoded');
  assert.equal(first.prefilledTokens, first.L, 'the whole prefix was prefilled');

  fs.appendFileSync(path.join(repo, 'c.txt'), 'Then they went home.\n');
  const refresh = await ask('', true);
  assert.equal(refresh.cache, 'partial');
  assert.ok(refresh.prefilledTokens < first.L / 2, `refresh prefilled ${refresh.prefilledTokens} of ${refresh.L}`);

  const q = await ask('Who found the dog?');
  assert.equal(q.cache, 'hit');
  assert.equal(q.reusedTokens, refresh.L);
  assert.equal(q.prefilledTokens, q.L - refresh.L, 'only the question was prefilled');
});
