/**
 * The question pipeline with a cache store, in process, on the tiny model: SnapKV stays on for a
 * short question on a cache hit, long threads trim their oldest turns instead of squeezing the
 * repository out, a thread forked from another carries its turns, and a question longer than
 * its room is refused with a clear error.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { CacheStore } from '../../src/cache/store';
import { loadModel, type EngineModel } from '../../src/engine/model';
import { AnswerRoomError, askRepository, defaultAnswerRoom, DEFAULT_SNAP, QuestionTooLongError, REPOSITORY_SHARE, type AskEvent, type AskRequest, type AskStats } from '../../src/pipeline/ask';
import { checkRealModel, checkTinyModel } from '../helpers/models';

let model: EngineModel;
let tmp: string;
/** A repository of 60 small files (~80 tokens each): more than a 2,048-token context holds, in fine steps. */
let REPO: string;

before(async () => {
  model = await loadModel(checkTinyModel());
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-pipeline-'));
  REPO = path.join(tmp, 'repo');
  fs.mkdirSync(path.join(REPO, 'src'), { recursive: true });
  for (let i = 0; i < 60; i++) {
    fs.writeFileSync(path.join(REPO, 'src', `part${i}.ts`), `/** Part ${i} of the walk. */\nexport function part${i}(x: number): number {\n  return x * ${i} + ${i * 7};\n}\n`);
  }
});
after(() => {
  model.dispose();
  fs.rmSync(tmp, { recursive: true, force: true });
});

function openStore(name: string): CacheStore {
  return CacheStore.open(path.join(tmp, name), { onWarning: (m) => assert.fail(`unexpected cache warning: ${m}`) });
}

/** Asks and returns the stats, the notices and the kept positions of the snap (empty without one). */
async function ask(req: Partial<AskRequest> & { question: string }) {
  const notices: string[] = [];
  let kept: Int32Array = new Int32Array(0);
  const stats: AskStats = await askRepository(
    {
      repo: REPO,
      model,
      snap: DEFAULT_SNAP,
      contextSize: 2048,
      maxTokens: 16,
      session: { threads: 2 },
      afterSnap: (s) => {
        kept = s.snapKept();
      },
      ...req,
    },
    (e) => {
      if (e.kind === 'notice') notices.push(e.message);
    },
  );
  await req.store?.flush();
  return { stats, notices, kept };
}

test('a cache hit with a question shorter than the window is still compressed, keeping what a cold run keeps', async () => {
  const question = 'What is here?';
  const cold = await ask({ question });
  assert.ok(cold.stats.B < cold.stats.L, `cold: B ${cold.stats.B} < L ${cold.stats.L}`);
  assert.ok(model.tokenize(question).length < DEFAULT_SNAP.window, 'the question is shorter than the observation window');

  const store = openStore('hit');
  const first = await ask({ question, store });
  assert.equal(first.stats.cache, 'miss');
  const second = await ask({ question, store });
  assert.equal(second.stats.cache, 'hit');
  assert.equal(second.stats.L, cold.stats.L);
  assert.ok(second.stats.B < second.stats.L, `the hit is compressed: B ${second.stats.B} < L ${second.stats.L}`);
  assert.deepEqual(second.notices.filter((n) => /SnapKV refused/.test(n)), []);
  // the window's tokens are prefilled again (not restored) so that their queries exist
  assert.equal(second.stats.reusedTokens, second.stats.L - DEFAULT_SNAP.window);
  assert.equal(second.kept.length, cold.kept.length);
  let differ = 0;
  for (let i = 0; i < cold.kept.length; i++) if (cold.kept[i] !== second.kept[i]) differ++;
  assert.equal(differ, 0, `${differ} of ${cold.kept.length} kept positions differ from the cold run's`);
});

test('a long thread drops its oldest turns, keeps the repository at least half of the prompt, and never fails', async () => {
  const store = openStore('long-thread');
  const contextSize = 2048;
  let firstFiles = 0;
  let lastDropped = 0;
  const turns = 14;
  for (let i = 0; i < turns; i++) {
    const r = await ask({ question: `Question number ${i}: what does the packer do with file ${i}?`, store, threadId: 'long', maxTokens: 48, contextSize });
    const s = r.stats;
    if (i === 0) firstFiles = s.files;
    assert.ok(s.files > 0, `turn ${i}: the repository is still packed`);
    // the prompt is the repository prefix, then the thread: the thread's part is at most the rest
    const threadPart = s.L - s.prefixTokens;
    // (less one file: the packer stops before a file that would not fit; these are ~80 tokens);
    // the prompt is the context less the answer room (256 here), whatever the question's maxTokens
    assert.ok(s.prefixTokens >= Math.ceil((contextSize - defaultAnswerRoom(contextSize)) * REPOSITORY_SHARE) - 100, `turn ${i}: the repository prefix keeps its share (${s.prefixTokens} tokens, thread ${threadPart})`);
    assert.ok(s.droppedTurns >= lastDropped, `turn ${i}: dropped turns never come back`);
    if (s.droppedTurns > 0) assert.ok(r.notices.some((n) => /oldest turn/.test(n)), `turn ${i}: the trim is announced`);
    lastDropped = s.droppedTurns;
  }
  assert.ok(lastDropped > 0, 'the thread outgrew its room and was trimmed');
  assert.equal(store.threadIndex('long')!.turns.length, turns, 'the transcript keeps every turn');
  assert.ok(firstFiles > 0);
});

test('a thread forked from an explanation starts from its turns', async () => {
  const store = openStore('fork');
  const explain = await ask({ question: 'Explain the walk.', store, threadId: 'explain:src/context/walk.ts:1-20' });
  const chat = await ask({ question: 'And the filter?', store, threadId: 'chat-1', forkFrom: 'explain:src/context/walk.ts:1-20' });
  const plain = await ask({ question: 'And the filter?', store, threadId: 'chat-2' });
  assert.ok(chat.stats.L > plain.stats.L, `the forked thread's prompt holds the explanation (L ${chat.stats.L} vs ${plain.stats.L})`);
  const turns = store.threadIndex('chat-1')!.turns;
  assert.deepEqual(
    turns.map((t) => t.question),
    ['Explain the walk.', 'And the filter?'],
  );
  assert.equal(explain.stats.cache, 'miss');
  // once the chat thread has turns of its own, the fork source is not read again
  const next = await ask({ question: 'Thanks.', store, threadId: 'chat-1', forkFrom: 'explain:gone' });
  assert.equal(store.threadIndex('chat-1')!.turns.length, 3);
  assert.ok(next.stats.L > chat.stats.L);
});

test('a question longer than its room is refused with a clear error, not a stack overflow', async () => {
  const question = 'why '.repeat(32_500); // ~130 KB, as a user pasting a log
  await assert.rejects(ask({ question }), (e: Error) => {
    assert.ok(e instanceof QuestionTooLongError, `${e.name}: ${e.message}`);
    assert.match(e.message, /the question takes \d+ tokens but the room for a question is \d+ tokens/);
    assert.match(e.message, /--context-size/);
    return true;
  });
  await assert.rejects(ask({ question, optionNames: { contextSize: 'the reposnap.contextSize setting', maxTokens: 'the reposnap.maxTokens setting', answerRoom: 'the reposnap.maxTokens setting' } }), (e: Error) => {
    assert.doesNotMatch(e.message, /--/, 'the extension names settings, never CLI flags');
    assert.match(e.message, /reposnap\.contextSize/);
    return true;
  });
});

test("a thread written with another model keeps its text: the answers are tokenized again with this model's tokenizer", async () => {
  const store = openStore('other-model');
  const first = await ask({ question: 'What is part 3?', store, threadId: 'switch' });
  const answer = store.threadIndex('switch')!.turns[0]!.answer;
  assert.ok(answer.trim().length > 8, 'the tiny model answered');
  assert.equal(first.stats.cache, 'miss');
  const real = await loadModel(checkRealModel());
  try {
    let prompt = '';
    await ask({
      question: 'And part 4?',
      store,
      threadId: 'switch',
      model: real,
      maxTokens: 4,
      afterSnap: (s) => {
        prompt = real.detokenize(s.tokens);
      },
    });
    assert.ok(prompt.includes(answer.trim().slice(0, 24)), `the first answer's text is in the new model's prompt:\n${prompt.slice(-600)}`);
    assert.equal(store.threadIndex('switch')!.turns.length, 2);
  } finally {
    real.dispose();
  }
});

test('two questions that differ only in maxTokens pack the same files and share one cached prefix; a maxTokens that cannot fit is refused before the prefill', async () => {
  const store = openStore('max-tokens');
  const question = 'Which part adds seven?';
  const contextSize = 2048;
  // the shorter answer first packs the same as the longer one (before, it packed 256 tokens' worth of files more)
  const long = await ask({ question, store, contextSize, maxTokens: 400 });
  assert.equal(long.stats.cache, 'miss');
  assert.ok(long.stats.skipped > 0, 'the 60 files are more than the context holds: the budget decides what is packed');
  const short = await ask({ question, store, contextSize, maxTokens: 200 });
  assert.equal(short.stats.prefixTokens, long.stats.prefixTokens, 'the same repository prefix');
  assert.equal(short.stats.files, long.stats.files);
  assert.equal(short.stats.L, long.stats.L);
  assert.equal(short.stats.cache, 'hit', 'the second question restores the first one\'s prefix');
  // nothing of the repository is prefilled again: the whole prefix is restored (less SnapKV's
  // window where it reaches into the prefix), and only the question part is prefilled
  assert.equal(short.stats.reusedTokens, Math.min(short.stats.prefixTokens, short.stats.L - DEFAULT_SNAP.window));
  assert.equal(short.stats.prefilledTokens, short.stats.L - short.stats.reusedTokens);
  assert.ok(short.stats.prefilledTokens < 100, `prefilled ${short.stats.prefilledTokens} tokens of ${short.stats.L}`);
  const counters = store.stats().counters;
  assert.deepEqual([counters.misses, counters.fullHits, counters.partialHits], [1, 1, 0]);

  // the room kept for the answer: 256 (an eighth of 2,048), plus what the question's reserve left free
  const free = contextSize - long.stats.L;
  assert.ok(free >= defaultAnswerRoom(contextSize), `free ${free}`);
  // one token more than the prompt leaves: refused, with the number that fits, and nothing prefilled
  const events: AskEvent['kind'][] = [];
  await assert.rejects(
    askRepository({ repo: REPO, model, snap: DEFAULT_SNAP, contextSize, maxTokens: free + 1, question, store, session: { threads: 2 } }, (e) => events.push(e.kind)),
    (e: Error) => {
      assert.ok(e instanceof AnswerRoomError, `${e.name}: ${e.message}`);
      assert.equal(e.name, 'ContextOverflowError', "the CLI's code context_overflow, the chat's card");
      assert.equal(e.fits, free);
      assert.match(e.message, new RegExp(`^--max-tokens ${free + 1} does not fit: the prompt takes ${long.stats.L} of the context's ${contextSize} tokens, which leaves ${free} for the answer\\. Ask for ${free} or fewer, or raise --answer-room \\(256 now`));
      return true;
    },
  );
  assert.deepEqual(events.filter((k) => k === 'prefill' || k === 'cache' || k === 'token'), [], 'refused before the cache was read or anything prefilled');
  // exactly what fits is served, from the same prefix, and never cut at the context's end
  const all = await ask({ question, store, contextSize, maxTokens: free });
  assert.equal(all.stats.cache, 'hit');
  assert.notEqual(all.stats.stopReason, 'contextFull');
  assert.ok(all.stats.decodeTokens <= free);
});

test('a question cancelled during its first prefill leaves no cache folder behind', async () => {
  const dir = path.join(tmp, 'cancelled-store');
  const store = CacheStore.open(dir, { onWarning: (m) => assert.fail(`unexpected cache warning: ${m}`) });
  assert.ok(fs.existsSync(path.join(dir, 'prefix')), 'open() makes the folder');
  const controller = new AbortController();
  await assert.rejects(
    askRepository({ repo: REPO, model, snap: DEFAULT_SNAP, contextSize: 2048, maxTokens: 8, question: 'What is here?', store, threadId: 'gone', signal: controller.signal, session: { threads: 2 } }, (e) => {
      if (e.kind === 'prefill') controller.abort();
    }),
    (e: Error) => e.name === 'AbortError',
  );
  assert.equal(await store.removeIfEmpty(), true);
  assert.equal(fs.existsSync(dir), false, 'the folder is gone');
  assert.deepEqual(fs.readdirSync(tmp).filter((n) => n.startsWith('cancelled-store')), [], 'and its lock file');
  // the store writes again after that: the next question makes the folder anew
  const next = await ask({ question: 'What is here?', store, maxTokens: 4 });
  assert.equal(next.stats.cache, 'miss');
  assert.equal(store.stats().entries.length, 1);
  assert.equal(await store.removeIfEmpty(), false, 'a folder with an entry stays');
  assert.ok(fs.existsSync(path.join(dir, 'stats.json')));
});
