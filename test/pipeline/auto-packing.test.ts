/**
 * The `auto` packing through the question pipeline, on the tiny model with a 2,048-token context:
 * a repository that fits is asked exactly as smallest-first asks it (same prefix, no retrieval
 * section); one that does not is asked exactly as ranked with the retrieval share asks it, the
 * retrieval room (floor(2048 × share) tokens) taken out of the files' budget before packing; a
 * second question finds the whole prefix in the cache.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { CacheStore } from '../../src/cache/store';
import { TagsCache } from '../../src/context/map/cache';
import type { PackingOption, PackResult } from '../../src/context/pack';
import { loadModel, type EngineModel } from '../../src/engine/model';
import { askRepository, DEFAULT_SNAP, type AskStats } from '../../src/pipeline/ask';
import { checkTinyModel } from '../helpers/models';

let model: EngineModel;
let tmp: string;
let small: string;
let large: string;
const tagsCache = new TagsCache();

before(async () => {
  model = await loadModel(checkTinyModel());
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-auto-ask-'));
  small = path.join(tmp, 'small');
  fs.mkdirSync(path.join(small, 'src'), { recursive: true });
  fs.writeFileSync(path.join(small, 'src', 'core.ts'), 'export function coreTotal(xs: number[]): number {\n  return xs.reduce((a, b) => a + b, 0);\n}\n');
  fs.writeFileSync(path.join(small, 'src', 'use.ts'), "import { coreTotal } from './core';\nexport const total = coreTotal([1, 2]);\n");
  large = path.join(tmp, 'large');
  fs.mkdirSync(path.join(large, 'src'), { recursive: true });
  fs.writeFileSync(path.join(large, 'src', 'core.ts'), `export function coreTotal(xs: number[]): number {\n  return xs.reduce((a, b) => a + b, 0);\n}\n${'// core notes\n'.repeat(60)}`);
  for (let i = 0; i < 40; i++) {
    fs.writeFileSync(path.join(large, 'src', `use${i}.ts`), `import { coreTotal } from './core';\nexport function use${i}(): number {\n  return coreTotal([${i}, ${i + 1}]);\n}\n`);
  }
});
after(() => {
  model.dispose();
  fs.rmSync(tmp, { recursive: true, force: true });
});

interface Asked {
  stats: AskStats;
  pack: PackResult;
  promptTokens: number;
}

async function ask(repo: string, packing: PackingOption, retrievalShare: number, question = 'What does use39 return?', store?: CacheStore): Promise<Asked> {
  let pack: PackResult | undefined;
  let promptTokens = 0;
  const stats = await askRepository(
    { repo, model, question, snap: DEFAULT_SNAP, contextSize: 2048, maxTokens: 4, session: { threads: 2 }, pack: { packing, tagsCache }, retrievalShare, ...(store ? { store } : {}) },
    (e) => {
      if (e.kind === 'packed') [pack, promptTokens] = [e.pack, e.promptTokens];
    },
  );
  return { stats, pack: pack!, promptTokens };
}

const promptText = (p: PackResult) => p.sections.map((s) => s.text).join('');

test('a repository that fits: auto asks exactly what smallest-first asks (same budget, prefix and prompt), with no retrieval section', async () => {
  const auto = await ask(small, 'auto', 0.15);
  const smallest = await ask(small, 'smallest-first', 0);
  assert.deepEqual([auto.pack.packing, auto.pack.auto], ['smallest-first', true]);
  assert.deepEqual(auto.pack.files.map((f) => f.path).sort(), ['src/core.ts', 'src/use.ts']);
  assert.equal(promptText(auto.pack), promptText(smallest.pack));
  assert.equal(auto.pack.tokenBudget, smallest.pack.tokenBudget, 'no retrieval room is kept out of the budget');
  assert.deepEqual([auto.stats.prefixTokens, auto.promptTokens, auto.stats.L], [smallest.stats.prefixTokens, smallest.promptTokens, smallest.stats.L]);
  assert.deepEqual(auto.stats.context!.sections, []);
  assert.deepEqual([auto.stats.context!.summary.packing, auto.stats.context!.summary.packingAuto, smallest.stats.context!.summary.packingAuto], ['smallest-first', true, undefined]);
  assert.deepEqual(auto.stats.context!.files, smallest.stats.context!.files);
});

test('a repository that does not fit: auto asks exactly what ranked asks with the retrieval share, its room taken from the budget', async () => {
  const smallest = await ask(large, 'smallest-first', 0);
  assert.ok(smallest.pack.skipped.some((s) => s.reason === 'over-budget'), 'smallest-first leaves files out');
  const auto = await ask(large, 'auto', 0.15);
  const ranked = await ask(large, 'ranked', 0.15);
  assert.deepEqual([auto.pack.packing, auto.pack.auto, ranked.pack.auto], ['ranked', true, false]);
  // floor(2048 × 0.15) = 307 tokens kept for the retrieval section
  assert.equal(auto.pack.tokenBudget, smallest.pack.tokenBudget - 307);
  assert.equal(ranked.pack.tokenBudget, auto.pack.tokenBudget);
  assert.equal(promptText(auto.pack), promptText(ranked.pack));
  assert.deepEqual([auto.stats.prefixTokens, auto.promptTokens, auto.stats.L], [ranked.stats.prefixTokens, ranked.promptTokens, ranked.stats.L]);
  assert.deepEqual(auto.stats.context!.sections, ranked.stats.context!.sections);
  assert.deepEqual(auto.stats.context!.sections.map((s) => s.kind), ['tree', 'map', 'retrieval']);
  const retrieval = auto.stats.context!.sections.find((s) => s.kind === 'retrieval')!;
  assert.ok(retrieval.tokens > 0 && retrieval.tokens <= 307, `${retrieval.tokens} tokens`);
  assert.deepEqual(auto.stats.context!.files, ranked.stats.context!.files);
  assert.deepEqual([auto.stats.context!.summary.packing, auto.stats.context!.summary.packingAuto], ['ranked', true]);
  // an explicit share still applies: floor(2048 × 0.3) = 614
  const wider = await ask(large, 'auto', 0.3);
  assert.equal(wider.pack.tokenBudget, smallest.pack.tokenBudget - 614);
});

test('auto is question-independent: a second, different question restores the whole prefix from the cache', async () => {
  const store = CacheStore.open(path.join(tmp, 'cache'), { onWarning: (m) => assert.fail(`unexpected cache warning: ${m}`) });
  const first = await ask(large, 'auto', 0.15, 'What does coreTotal return?', store);
  const second = await ask(large, 'auto', 0.15, 'Which files call use7?', store);
  assert.equal(promptText(second.pack), promptText(first.pack));
  assert.equal(second.stats.prefixTokens, first.stats.prefixTokens);
  assert.deepEqual([first.stats.cache, second.stats.cache], ['miss', 'hit']);
  assert.ok(second.stats.reusedTokens >= first.stats.prefixTokens - DEFAULT_SNAP.window, `${second.stats.reusedTokens} of ${first.stats.prefixTokens}`);
});
