/**
 * After an edit (pipeline/after-edit.ts, issue 30), on the tiny model: `exact` runs on a prompt
 * equal, byte for byte, to a cold pack's of the edited repository; `erratum` restores the earlier
 * prefix whole and prefills only the erratum (holding the new text) and the question.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { CacheStore } from '../../src/cache/store';
import type { PackResult } from '../../src/context/pack';
import { formatFileSection } from '../../src/context/section';
import { loadModel, type EngineModel } from '../../src/engine/model';
import { askRepository, DEFAULT_SNAP, type AskRequest, type AskStats } from '../../src/pipeline/ask';
import { checkTinyModel } from '../helpers/models';

let model: EngineModel;
let tmp: string;

before(async () => {
  model = await loadModel(checkTinyModel());
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-after-edit-'));
});
after(() => {
  model.dispose();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** A repository of three files, `first.ts` the least recently modified (first in the prompt). */
function makeRepo(name: string): string {
  const repo = path.join(tmp, name);
  fs.mkdirSync(repo, { recursive: true });
  const files: [string, string, number][] = [
    ['first.ts', 'export const LIMIT = 3;\nexport function limit() { return LIMIT; }\n', 1000],
    ['middle.ts', Array.from({ length: 30 }, (_, i) => `export const m${i} = ${i};\n`).join(''), 2000],
    ['last.ts', 'export function last() { return 1; }\n', 3000],
  ];
  for (const [p, text, t] of files) {
    fs.writeFileSync(path.join(repo, p), text);
    fs.utimesSync(path.join(repo, p), t, t);
  }
  return repo;
}

interface Asked {
  stats: AskStats;
  pack: PackResult;
  promptTokens: number;
  erratum?: string;
}

async function ask(repo: string, store: CacheStore | undefined, extra: Partial<AskRequest> = {}): Promise<Asked> {
  let packed: { pack: PackResult; promptTokens: number; erratum?: string } | undefined;
  const stats = await askRepository(
    { repo, model, question: 'What does limit return?', snap: DEFAULT_SNAP, contextSize: 2048, maxTokens: 2, session: { threads: 2 }, ...(store ? { store } : {}), ...extra },
    (e) => {
      if (e.kind === 'packed') packed = e;
    },
  );
  await store?.flush();
  assert.ok(packed);
  return { stats, ...packed };
}

const promptText = (p: PackResult): string => p.sections.map((s) => s.text).join('');

test("exact after an edit: the prompt is a cold pack's, byte for byte; the cache restores what comes before the edit", async () => {
  const repo = makeRepo('exact');
  const store = CacheStore.open(path.join(tmp, 'cache-exact'));
  const first = await ask(repo, store);
  assert.deepEqual(first.pack.files.map((f) => f.path), ['first.ts', 'middle.ts', 'last.ts']);
  fs.writeFileSync(path.join(repo, 'first.ts'), 'export const LIMIT = 8;\nexport function limit() { return LIMIT; }\n');
  fs.utimesSync(path.join(repo, 'first.ts'), 4000, 4000);
  const edited = await ask(repo, store, { afterEdit: 'exact', editBase: first.pack });
  const cold = await ask(repo, undefined);
  assert.equal(promptText(edited.pack), promptText(cold.pack));
  assert.ok(promptText(edited.pack).includes('LIMIT = 8'));
  assert.equal(edited.promptTokens, cold.promptTokens);
  assert.equal(edited.erratum, undefined);
  assert.deepEqual(edited.stats.edits, { asked: 'exact', used: 'exact', changes: [{ path: 'first.ts', kind: 'changed' }], erratumTokens: 0, reason: '' });
  assert.equal(edited.stats.cache, 'partial');
  assert.ok(edited.stats.prefilledTokens > 0 && edited.stats.prefilledTokens < cold.stats.prefilledTokens);
});

test('erratum after an edit of the first file: the earlier prefix is restored whole, only the erratum (the new text) and the question are prefilled', async () => {
  const repo = makeRepo('erratum');
  const store = CacheStore.open(path.join(tmp, 'cache-erratum'));
  const first = await ask(repo, store);
  const newFirst = 'export const LIMIT = 8;\nexport function limit() { return LIMIT; }\n';
  fs.writeFileSync(path.join(repo, 'first.ts'), newFirst);
  fs.utimesSync(path.join(repo, 'first.ts'), 4000, 4000);
  const edited = await ask(repo, store, { afterEdit: 'erratum', editBase: first.pack });
  assert.equal(edited.stats.edits?.used, 'erratum');
  assert.deepEqual(edited.stats.edits?.changes, [{ path: 'first.ts', kind: 'changed' }]);
  assert.ok(edited.erratum?.includes(`first.ts was edited; this replaces its earlier text above:\n${formatFileSection('first.ts', newFirst)}`));
  // the prompt's repository part is the earlier one, so the cache holds all of it
  assert.equal(promptText(edited.pack), promptText(first.pack));
  assert.equal(edited.stats.cache, 'hit');
  const erratumTokens = model.tokenize(edited.erratum!).length;
  assert.equal(edited.stats.edits?.erratumTokens, erratumTokens);
  assert.equal(edited.stats.L, first.stats.L + erratumTokens);
  // prefilled: the erratum, the question part and SnapKV's window given back by the restore
  assert.equal(edited.stats.prefilledTokens, first.stats.prefilledTokens - first.stats.prefixTokens + (first.stats.prefixTokens - edited.stats.reusedTokens) + erratumTokens);
  assert.ok(edited.stats.prefilledTokens < first.stats.L / 2);

  // nothing changed since the base: exact, with the reason
  const again = await ask(repo, store, { afterEdit: 'erratum', editBase: edited.pack });
  assert.equal(again.stats.edits?.used, 'erratum', 'the base is still the first prefix, first.ts still differs from it');
  const fresh = await ask(repo, store, { afterEdit: 'erratum', editBase: (await ask(repo, store)).pack });
  assert.equal(fresh.stats.edits?.used, 'exact');
  assert.equal(fresh.stats.edits?.reason, 'no file changed');
});

test('erratum without the cache, or when exact is cheaper (an edit of the last file), falls back to exact', async () => {
  const repo = makeRepo('fallback');
  const store = CacheStore.open(path.join(tmp, 'cache-fallback'));
  const first = await ask(repo, store);
  fs.appendFileSync(path.join(repo, 'last.ts'), 'export const added = 1;\n');
  fs.utimesSync(path.join(repo, 'last.ts'), 5000, 5000);
  const noStore = await ask(repo, undefined, { afterEdit: 'erratum', editBase: first.pack });
  assert.deepEqual([noStore.stats.edits?.used, noStore.stats.edits?.reason], ['exact', 'no cache']);
  const last = await ask(repo, store, { afterEdit: 'erratum', editBase: first.pack });
  assert.equal(last.stats.edits?.used, 'exact');
  assert.match(last.stats.edits?.reason ?? '', /^exact prefills fewer tokens \(\d+ against \d+\)$/);
});
