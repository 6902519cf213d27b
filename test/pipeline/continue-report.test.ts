/**
 * A follow-up that continues a thread's compressed cache with the ranked packing and retrieval,
 * on the tiny model: the prompt is the thread's cache (prefix, the retrieval section of the
 * question that snapped it, its turns) and the new question, never this question's retrieval
 * section. The context report names the retrieval the cache holds, the thread keeps every turn.
 * (Before: the report placed this question's retrieval section after the prefix; a long one ran
 * past L, the question failed after its answer and its turn was lost; a short one was reported
 * as read.)
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

let model: EngineModel;
let tmp: string;
let repo: string;

before(async () => {
  model = await loadModel(checkTinyModel());
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-continue-report-'));
  repo = path.join(tmp, 'repo');
  writeCoreUsersRepo(repo);
});
after(() => {
  model.dispose();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** A question of a thread, ranked packing with 15 % retrieval, 2,048-token context. */
async function ask(store: CacheStore, threadId: string, question: string, followUp: 'continue' | 'resnap'): Promise<AskStats> {
  const stats = await askRepository(
    { repo, model, store, question, threadId, followUp, snap: DEFAULT_SNAP, contextSize: 2048, maxTokens: 2, session: { threads: 2 }, pack: { packing: 'ranked' }, retrievalShare: 0.15 },
    () => {},
  );
  await store.flush();
  return stats;
}

const retrievalSection = (s: AskStats) => s.context!.sections.find((x) => x.kind === 'retrieval');
const retrieved = (s: AskStats) => s.context!.files.filter((f) => f.status === 'retrieved').map((f) => [f.path, f.tokens]);
// a question that names twenty functions: BM25 fills the retrieval room with their chunks
const MANY = `What do ${Array.from({ length: 20 }, (_, i) => `use${i + 1}`).join(' ')} return?`;

test('a continued follow-up whose own retrieval is longer than the prompt it adds: answered, reported without it, turn saved', async () => {
  const store = CacheStore.open(path.join(tmp, 'cache-long'), { onWarning: (m) => assert.fail(`unexpected cache warning: ${m}`) });
  const first = await ask(store, 't', 'Hello?', 'resnap');
  assert.equal(retrievalSection(first), undefined, 'no chunk matches "Hello?"');
  const second = await ask(store, 't', MANY, 'continue');
  assert.equal(second.cache, 'continue');
  assert.equal(second.context!.summary.attention, 'continued');
  assert.equal(second.context!.summary.promptTokens, second.L);
  // the continued prompt holds no retrieval section: this question's chunks are not in it
  assert.equal(retrievalSection(second), undefined);
  assert.deepEqual(retrieved(second), []);
  // the same files as the first answer's report, in the same sections
  assert.deepEqual(second.context!.sections.map((x) => [x.kind, x.tokens]), first.context!.sections.map((x) => [x.kind, x.tokens]));
  assert.deepEqual(store.loadThread('t')!.index.turns.map((t) => t.question), ['Hello?', MANY]);
  assert.equal(store.loadThread('t')!.index.retrieval, undefined);
});

test("a continued follow-up reports the retrieval section the thread's cache holds (the snapping question's), not its own", async () => {
  const store = CacheStore.open(path.join(tmp, 'cache-short'), { onWarning: (m) => assert.fail(`unexpected cache warning: ${m}`) });
  const first = await ask(store, 't', 'What does use39 return?', 'resnap');
  const section = retrievalSection(first);
  assert.ok(section !== undefined && section.tokens > 0, 'the first question retrieves use39');
  assert.ok(retrieved(first).some(([p]) => p === 'src/use39.ts'), JSON.stringify(retrieved(first)));
  const saved = store.loadThread('t')!.index.retrieval;
  assert.equal(saved?.tokens, section.tokens);
  const second = await ask(store, 't', 'What does use7 return?', 'continue');
  assert.equal(second.cache, 'continue');
  // this question's own retrieval (use7) is not in the prompt; the first question's is
  assert.deepEqual(retrievalSection(second), { kind: 'retrieval', tokens: section.tokens, keptShare: null });
  assert.deepEqual(retrieved(second), retrieved(first));
  assert.ok(!retrieved(second).some(([p]) => p === 'src/use7.ts'));
  // a third, continued again: the retrieval the cache holds is carried with the thread
  const third = await ask(store, 't', MANY, 'continue');
  assert.deepEqual(retrieved(third), retrieved(first));
  assert.deepEqual(store.loadThread('t')!.index.retrieval, saved);
  assert.equal(store.loadThread('t')!.index.turns.length, 3);
  // a re-snapped follow-up reads its own retrieval section again, and the thread records it
  const fourth = await ask(store, 't', 'What does use7 return?', 'resnap');
  assert.ok(retrieved(fourth).some(([p]) => p === 'src/use7.ts'), JSON.stringify(retrieved(fourth)));
  assert.equal(store.loadThread('t')!.index.retrieval?.tokens, retrievalSection(fourth)!.tokens);
});
