/**
 * The ranked packing through the question pipeline (issue 15), on the tiny model: the prompt is
 * the ranked sections (tree, files, map), and a second, different question finds the whole
 * question-independent prefix in the cache.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { CacheStore } from '../../src/cache/store';
import { loadModel, type EngineModel } from '../../src/engine/model';
import { TagsCache } from '../../src/context/map/cache';
import type { PackResult } from '../../src/context/pack';
import { rankChunks } from '../../src/context/retrieve/bm25';
import { retrieveChunks } from '../../src/context/retrieve/retrieve';
import { askRepository, DEFAULT_SNAP, type AskStats } from '../../src/pipeline/ask';
import { writeCoreUsersRepo } from '../helpers/core-users-repo';
import { checkTinyModel } from '../helpers/models';
import { randomChars } from './fake-secrets';

let model: EngineModel;
let tmp: string;
let repo: string;

before(async () => {
  model = await loadModel(checkTinyModel());
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-ranked-ask-'));
  repo = path.join(tmp, 'repo');
  writeCoreUsersRepo(repo);
});
after(() => {
  model.dispose();
  fs.rmSync(tmp, { recursive: true, force: true });
});

test('two different questions pack the same ranked prefix, and the second restores all of it from the cache', async () => {
  const store = CacheStore.open(path.join(tmp, 'cache'), { onWarning: (m) => assert.fail(`unexpected cache warning: ${m}`) });
  const tagsCache = new TagsCache();
  const packs: PackResult[] = [];
  const ask = (question: string, packing: 'ranked' | 'smallest-first' = 'ranked'): Promise<AskStats> =>
    askRepository(
      { repo, model, store, question, snap: DEFAULT_SNAP, contextSize: 2048, maxTokens: 4, session: { threads: 2 }, pack: { packing, tagsCache } },
      (e) => {
        if (e.kind === 'packed') packs.push(e.pack);
      },
    );
  const first = await ask('What does coreTotal return?');
  const second = await ask('Which files call use7, and why would anyone do that?');
  assert.equal(packs.length, 2);
  assert.equal(packs[0]!.packing, 'ranked');
  assert.deepEqual(packs[0]!.sections.map((s) => s.kind).filter((k, i, a) => a.indexOf(k) === i), ['tree', 'file', 'map']);
  assert.ok(packs[0]!.files.some((f) => f.path === 'src/core.ts'), 'the file every other file uses is in full');
  assert.ok(packs[0]!.mapped.length > 0, 'the repository does not fit: some files are in the map only');
  assert.equal(packs[1]!.sections.map((s) => s.text).join(''), packs[0]!.sections.map((s) => s.text).join(''));
  assert.equal(second.prefixTokens, first.prefixTokens);
  assert.equal(first.cache, 'miss');
  assert.equal(second.cache, 'hit');
  // a hit restores the prefix but the last window of the prompt, which is prefilled again for SnapKV
  assert.ok(second.reusedTokens >= first.prefixTokens - DEFAULT_SNAP.window, `${second.reusedTokens} of ${first.prefixTokens}`);
  // the prompt's prefix is the chat head and every section: the head's length, read off a
  // smallest-first question (prefix = head + files), plus the ranked sections' tokens
  const smallest = await ask('What does coreTotal return?', 'smallest-first');
  const sum = (p: PackResult) => p.sections.reduce((n, s) => n + s.tokens, 0);
  const head = smallest.prefixTokens - sum(packs[2]!);
  assert.equal(first.prefixTokens, head + sum(packs[0]!));
});

test('with a retrieval share, the chunks BM25 finds for the question follow the cached prefix in the prompt', async () => {
  const question = 'What does use39 return?';
  const run = async (retrievalShare: number) => {
    let pack: PackResult | undefined;
    let promptTokens = 0;
    const stats = await askRepository(
      { repo, model, question, snap: DEFAULT_SNAP, contextSize: 2048, maxTokens: 4, session: { threads: 2 }, pack: { packing: 'ranked' }, retrievalShare },
      (e) => {
        if (e.kind === 'packed') [pack, promptTokens] = [e.pack, e.promptTokens];
      },
    );
    return { stats, pack: pack!, promptTokens };
  };
  const withRetrieval = await run(0.15);
  const without = await run(0);
  assert.ok(!withRetrieval.pack.files.some((f) => f.path === 'src/use39.ts'), 'use39.ts is not in full text');
  const expected = await retrieveChunks(withRetrieval.pack.retrievable, question, { budget: Math.floor(2048 * 0.15), countTokens: (t) => model.tokenize(t).length, secrets: withRetrieval.pack.secrets });
  assert.equal(expected.chunks[0]?.name, 'use39');
  assert.ok(expected.tokens > 0 && expected.tokens <= 307);
  // the prompt is prefix + retrieval + question; the question part alone is what the run without retrieval has after its prefix
  assert.equal(withRetrieval.promptTokens - withRetrieval.stats.prefixTokens - model.tokenize(expected.text).length, without.promptTokens - without.stats.prefixTokens);
  assert.equal(withRetrieval.stats.L, withRetrieval.promptTokens);
  // the room kept for retrieval comes out of the repository's budget
  assert.ok(withRetrieval.pack.tokenBudget === without.pack.tokenBudget - Math.floor(2048 * 0.15));
  // the context report: each retrieved file's tokens are its chunks' blocks in the section
  // (Retrieved.spans), and it has a kept share over them
  const retrieved = withRetrieval.stats.context!.files.filter((f) => f.status === 'retrieved');
  assert.deepEqual(retrieved.map((f) => f.path).sort(), [...new Set(expected.spans.map((sp) => sp.path))].sort());
  // (Retrieved.spans); a file whose definitions are also in the repository map keeps its map
  // block too (ContextFile.parts: map, then retrieval), and its tokens are the two parts' sum
  for (const f of retrieved) {
    const spanTokens = expected.spans.filter((sp) => sp.path === f.path).reduce((n, sp) => n + sp.tokens, 0);
    const mapped = withRetrieval.pack.mapped.find((m) => m.path === f.path);
    if (mapped === undefined) {
      assert.equal(f.parts, undefined, f.path);
      assert.equal(f.tokens, spanTokens, f.path);
    } else {
      assert.deepEqual(f.parts?.map((p) => [p.section, p.tokens]), [['map', mapped.tokens], ['retrieval', spanTokens]], f.path);
      assert.equal(f.tokens, mapped.tokens + spanTokens, f.path);
    }
    assert.ok(f.keptShare !== null && f.keptShare >= 0 && f.keptShare <= 1, `${f.path}: ${f.keptShare}`);
  }
});

test('a function the question names, in a file with a secret at its bottom, is never retrieved; the file is reported as a secret as the packer reports one', async () => {
  const vaultRepo = path.join(tmp, 'vault-repo');
  fs.mkdirSync(path.join(vaultRepo, 'src', 'zz'), { recursive: true });
  fs.writeFileSync(path.join(vaultRepo, 'src', 'core.ts'), `export function coreTotal(xs: number[]): number {\n  return xs.reduce((a, b) => a + b, 0);\n}\n${'// core notes\n'.repeat(60)}`);
  for (let i = 0; i < 40; i++) {
    fs.writeFileSync(path.join(vaultRepo, 'src', `use${i}.ts`), `import { coreTotal } from './core';\nexport function use${i}(): number {\n  return coreTotal([${i}, ${i + 1}]);\n}\n`);
  }
  // the function on lines 1-3, a generic credential (no token format: only content detection of
  // the assignment finds it) on line 30, column 22
  const password = `hunter2-${randomChars(41, 12)}`;
  const vault = `export function vaultUnlock(): string {\n  return 'unlocked';\n}\n${'// vault notes\n'.repeat(26)}const DB_PASSWORD = "${password}";\n`;
  fs.writeFileSync(path.join(vaultRepo, 'src', 'zz', 'vault.ts'), vault);
  const packs: PackResult[] = [];
  const ask = (prepareOnly: boolean) =>
    askRepository(
      { repo: vaultRepo, model, question: 'What does vaultUnlock return?', snap: DEFAULT_SNAP, contextSize: 2048, maxTokens: 4, session: { threads: 2 }, pack: { packing: 'ranked' }, retrievalShare: 0.15, prepareOnly },
      (e) => {
        if (e.kind === 'packed') packs.push(e.pack);
      },
    );
  await ask(true);
  const stats = await ask(false);
  const [packerOnly, withRetrieval] = packs;
  // the packer alone never scanned it: it is neither in full nor in the map, and its chunk is retrievable
  assert.deepEqual(packerOnly!.skipped.find((s) => s.path === 'src/zz/vault.ts'), { path: 'src/zz/vault.ts', reason: 'over-budget', detail: 'neither in full nor in the repository map (files are chosen by rank)' });
  assert.ok(packerOnly!.retrievable.some((c) => c.name === 'vaultUnlock'));
  // BM25 ranks its chunk first for this question: without the file's verdict it would be quoted
  assert.equal(rankChunks(packerOnly!.retrievable, 'What does vaultUnlock return?')[0]?.chunk.name, 'vaultUnlock');
  const entry = { path: 'src/zz/vault.ts', reason: 'secret', detail: 'generic-credential secret at line 30, column 22 (generic credential assignment)' };
  assert.deepEqual(withRetrieval!.skipped.find((s) => s.path === 'src/zz/vault.ts'), entry);
  assert.equal(withRetrieval!.skipped.length, packerOnly!.skipped.length);
  assert.deepEqual(
    stats.context?.files.filter((f) => f.path === 'src/zz/vault.ts'),
    [{ path: 'src/zz/vault.ts', status: 'left-out', tokens: 0, keptShare: null, reason: 'secret', detail: entry.detail }],
  );
  assert.ok(!stats.context!.files.some((f) => f.status === 'retrieved' && f.path === 'src/zz/vault.ts'));
});
