/**
 * The pipeline tokenizes the question once (issue 16): the thread's fit, the prompt and a
 * continued thread's new turn all use that one tokenization, and an earlier turn's question is
 * tokenized once too. Counted on the tiny model by wrapping its tokenizer; the prompt it builds
 * is checked against `threadTokens` (prompt/prompt.ts), which tokenizes on its own.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { CacheStore } from '../../src/cache/store';
import { loadModel, type EngineModel } from '../../src/engine/model';
import { askRepository, DEFAULT_SNAP, type AskRequest } from '../../src/pipeline/ask';
import { promptLayout, threadTokens, tokenizeLayout } from '../../src/prompt/prompt';
import { checkTinyModel } from '../helpers/models';

let model: EngineModel;
let tmp: string;
let repo: string;
/** Tokenizer calls per text, while counting. */
const calls = new Map<string, number>();

before(async () => {
  model = await loadModel(checkTinyModel());
  const tokenize = model.tokenize.bind(model);
  model.tokenize = (text: string, opts?: { addSpecial?: boolean; parseSpecial?: boolean }) => {
    calls.set(text, (calls.get(text) ?? 0) + 1);
    return tokenize(text, opts);
  };
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-tokenize-once-'));
  repo = path.join(tmp, 'repo');
  fs.mkdirSync(repo);
  for (let i = 0; i < 12; i++) fs.writeFileSync(path.join(repo, `part${i}.ts`), `export const part${i} = ${i * 7}; // part ${i} of the walk\n`);
});
after(() => {
  model.dispose();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** Asks; returns the prompt's tokens as SnapKV saw them (none without a snap) and how the cache served it. */
async function ask(question: string, over: Partial<AskRequest>): Promise<{ tokens: number[]; cache: string }> {
  let tokens: number[] = [];
  const stats = await askRepository(
    {
      repo,
      question,
      model,
      snap: { ...DEFAULT_SNAP, window: 8, budget: 64 },
      contextSize: 1024,
      maxTokens: 6,
      session: { threads: 1 },
      afterSnap: (s) => {
        tokens = [...s.tokens];
      },
      ...over,
    },
    () => {},
  );
  await over.store?.flush();
  return { tokens, cache: stats.cache };
}

test('a first question, a re-snapped follow-up and a continued follow-up each tokenize their question once', async () => {
  const store = CacheStore.open(path.join(tmp, 'cache'), { onWarning: (m) => assert.fail(`unexpected cache warning: ${m}`) });
  const q1 = 'Which part holds forty-two?';
  const q2 = 'And which one holds seventy?';
  const q3 = 'Is there a part zero?';

  calls.clear();
  await ask(q1, { store, threadId: 't' });
  assert.equal(calls.get(q1), 1, 'first question');

  calls.clear();
  const { tokens: prompt2 } = await ask(q2, { store, threadId: 't', followUp: 'resnap' });
  assert.equal(calls.get(q2), 1, 'follow-up, re-snapped');
  assert.equal(calls.get(q1), 1, "the earlier turn's question, once");
  // the question part is what threadTokens (which tokenizes each question itself) makes of the thread
  const turns = store.threadIndex('t')!.turns;
  const layout = tokenizeLayout(model, promptLayout(model));
  const expected = Array.from(threadTokens(model, layout, [{ question: q1, answerTokens: turns[0]!.answerTokens }, { question: q2 }]));
  assert.ok(prompt2.length > expected.length);
  assert.deepEqual(prompt2.slice(prompt2.length - expected.length), expected);

  calls.clear();
  const third = await ask(q3, { store, threadId: 't', followUp: 'continue', afterSnap: undefined });
  assert.equal(third.cache, 'continue');
  assert.equal(store.threadIndex('t')!.turns.length, 3);
  assert.equal(calls.get(q3), 1, 'follow-up, continued');
});
