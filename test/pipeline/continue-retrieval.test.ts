/**
 * A follow-up that continues a thread's compressed cache with the ranked packing computes no
 * retrieval section of its own (its prompt is the thread's cache and the new turn), on the tiny
 * model: the answer's room is checked against that prompt, and no secret its retrieval would have
 * found is reported. (Before: the room check before the prefill counted this question's unused
 * retrieval section and refused a follow-up that fits; a file that retrieval found holding a
 * secret was reported as left out for it; the BM25 work was wasted.) A re-snapped follow-up still
 * reads its own retrieval section, with the same prompt as before.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { CacheStore } from '../../src/cache/store';
import { loadModel, type EngineModel } from '../../src/engine/model';
import { AnswerRoomError, askRepository, DEFAULT_SNAP, type AskStats } from '../../src/pipeline/ask';
import { randomChars } from '../context/fake-secrets';
import { writeCoreUsersRepo } from '../helpers/core-users-repo';
import { checkTinyModel } from '../helpers/models';

const CONTEXT = 2048;
// a question that names twenty functions: BM25 fills the retrieval room with their chunks
const MANY = `What do ${Array.from({ length: 20 }, (_, i) => `use${i + 1}`).join(' ')} return?`;
const VAULT = 'src/zz/vault.ts';

let model: EngineModel;
let tmp: string;
let repo: string;

before(async () => {
  model = await loadModel(checkTinyModel());
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-continue-retrieval-'));
  repo = path.join(tmp, 'repo');
  // the ranked fixture, and a file whose function a question can name, with a generic credential
  // (found only by content detection of the assignment) on line 30, column 22
  writeCoreUsersRepo(repo);
  fs.mkdirSync(path.join(repo, 'src', 'zz'), { recursive: true });
  const password = `hunter2-${randomChars(41, 12)}`;
  fs.writeFileSync(path.join(repo, VAULT), `export function vaultUnlock(): string {\n  return 'unlocked';\n}\n${'// vault notes\n'.repeat(26)}const DB_PASSWORD = "${password}";\n`);
});
after(() => {
  model.dispose();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** A question of a thread: ranked packing with 15 % retrieval, 2,048-token context, 64 tokens kept for the answer. */
async function ask(store: CacheStore, threadId: string, question: string, followUp: 'continue' | 'resnap', maxTokens: number): Promise<AskStats> {
  const stats = await askRepository(
    { repo, model, store, question, threadId, followUp, snap: DEFAULT_SNAP, contextSize: CONTEXT, maxTokens, answerRoom: 64, session: { threads: 2 }, pack: { packing: 'ranked' }, retrievalShare: 0.15 },
    () => {},
  );
  await store.flush();
  return stats;
}

const retrievalTokens = (s: AskStats) => s.context!.sections.find((x) => x.kind === 'retrieval')?.tokens ?? 0;
const vaultEntry = (s: AskStats) => s.context!.files.filter((f) => f.path === VAULT).map((f) => [f.status, f.reason]);

test('a continued follow-up whose own retrieval section would leave too little room for its answer is answered from its real prompt', async () => {
  const store = CacheStore.open(path.join(tmp, 'cache-room'), { onWarning: (m) => assert.fail(`unexpected cache warning: ${m}`) });
  // two threads with the same first turn ("Hello?" retrieves nothing: the cache holds no retrieval section)
  const firstC = await ask(store, 'c', 'Hello?', 'resnap', 2);
  const firstR = await ask(store, 'r', 'Hello?', 'resnap', 2);
  assert.equal(retrievalTokens(firstC), 0);
  assert.equal(firstR.L, firstC.L);
  // re-snapped, MANY's prompt is the prefix, its retrieval section, the first turn and MANY: the
  // prompt the room check counted for a continued MANY too; an answer longer than it leaves is refused
  const refused = await ask(store, 'r', MANY, 'resnap', 1000).then(
    () => assert.fail('a re-snapped follow-up with 1,000 answer tokens fits'),
    (e: unknown) => e,
  );
  assert.ok(refused instanceof AnswerRoomError, String(refused));
  const resnapped = await ask(store, 'r', MANY, 'resnap', 2);
  const withRetrieval = resnapped.L;
  assert.equal(refused.fits, CONTEXT - withRetrieval);
  const R = retrievalTokens(resnapped);
  assert.ok(R > 0, 'MANY retrieves chunks of use1 … use20');
  // continued, the same follow-up's prompt lacks that section, and its room is checked against
  // that prompt: one token more than it leaves is refused before the prefill, no turn saved
  const tooLong = await ask(store, 'c', MANY, 'continue', CONTEXT - (withRetrieval - R) + 1).then(
    () => assert.fail('a continued follow-up with more answer tokens than its prompt leaves fits'),
    (e: unknown) => e,
  );
  assert.ok(tooLong instanceof AnswerRoomError, String(tooLong));
  assert.equal(tooLong.fits, CONTEXT - (withRetrieval - R));
  assert.equal(store.loadThread('c')!.index.turns.length, 1);
  // one token more than the re-snapped prompt leaves fits: answered (the old check refused it,
  // "the prompt takes <withRetrieval> of the context's 2048 tokens")
  const maxTokens = refused.fits + 1;
  const continued = await ask(store, 'c', MANY, 'continue', maxTokens);
  assert.equal(continued.cache, 'continue');
  assert.equal(continued.L, withRetrieval - R);
  assert.ok(continued.L + maxTokens <= CONTEXT, `${continued.L} + ${maxTokens}`);
  assert.equal(retrievalTokens(continued), 0);
  assert.deepEqual(store.loadThread('c')!.index.turns.map((t) => t.question), ['Hello?', MANY]);
});

test('a continued follow-up reports no file as a secret that only its own (unused) retrieval would have read', async () => {
  const store = CacheStore.open(path.join(tmp, 'cache-secret'), { onWarning: (m) => assert.fail(`unexpected cache warning: ${m}`) });
  const first = await ask(store, 'c', 'Hello?', 'resnap', 2);
  // the packer alone never scans the vault: left out by the budget
  assert.deepEqual(vaultEntry(first), [['left-out', 'over-budget']]);
  await ask(store, 'r', 'Hello?', 'resnap', 2);
  // re-snapped, retrieval ranks vaultUnlock's chunk, finds the file's secret, and reports it
  const resnapped = await ask(store, 'r', 'What does vaultUnlock return?', 'resnap', 2);
  assert.deepEqual(vaultEntry(resnapped), [['left-out', 'secret']]);
  // continued: no retrieval ran, so the report is the pack's
  const continued = await ask(store, 'c', 'What does vaultUnlock return?', 'continue', 2);
  assert.equal(continued.cache, 'continue');
  assert.deepEqual(vaultEntry(continued), [['left-out', 'over-budget']]);
  assert.equal(continued.skipped, first.skipped);
  const statuses = (s: AskStats) => s.context!.files.map((f) => [f.path, f.status, f.reason]);
  assert.deepEqual(statuses(continued), statuses(first));
});
