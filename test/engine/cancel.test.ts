/**
 * Cancellation: an AbortSignal stops a prefill inside its ubatch (between graph nodes) and a
 * generation between tokens; the session stays usable; 50 cancel cycles leave resident memory flat.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { after, before, test } from 'node:test';
import v8 from 'node:v8';
import vm from 'node:vm';
import { AbortError } from '../../src/engine/errors';
import { loadModel, type EngineModel } from '../../src/engine/model';
import { createSession } from '../../src/engine/session';
import { checkTinyModel, STORY } from '../helpers/models';

let model: EngineModel;
let prompt: number[];

before(async () => {
  model = await loadModel(checkTinyModel());
  prompt = Array.from(model.tokenize(STORY + ' ' + STORY, { addSpecial: true }));
});
after(() => model.dispose());

test('an abort during prefill stops within one ubatch; the session stays usable', async () => {
  const batchSize = 64;
  const s = createSession(model, { contextSize: 2048, batchSize, threads: 1, snapWindow: 16 });
  try {
    const controller = new AbortController();
    let chunks = 0;
    await assert.rejects(
      s.prefill(prompt, {
        signal: controller.signal,
        onProgress: () => {
          chunks++;
          if (chunks === 2) controller.abort();
        },
      }),
      AbortError,
    );
    assert.equal(chunks, 2, 'no ubatch ran after the abort');
    assert.equal(s.position, 2 * batchSize);
    s.truncate(0);
    assert.equal(s.stats().cells, 0);
    await s.prefill(prompt);
    assert.equal(s.position, prompt.length);
    const r = await s.snap({ window: 16, budget: 128 });
    assert.equal(r.B, 128);
    let text = '';
    for await (const piece of s.generate({ maxTokens: 8 })) text += piece;
    assert.ok(text.length > 0);
  } finally {
    s.dispose();
  }
});

test('an abort while a ubatch is being decoded stops it between graph nodes; the cache keeps what came before, and the session answers as one never cancelled', async () => {
  // one chunk of 512 tokens (batch = ubatch): before, a cancel waited for the whole ubatch, and a
  // prefill whose last chunk was running finished as if never cancelled
  const head = 100;
  assert.ok(prompt.length > head + 16, `prompt of ${prompt.length} tokens`);
  const rest = prompt.slice(head);
  const s = createSession(model, { contextSize: 2048, batchSize: 512, threads: 1, snapWindow: 16 });
  const ref = createSession(model, { contextSize: 2048, batchSize: 512, threads: 1, snapWindow: 16 });
  try {
    await s.prefill(prompt.slice(0, head));
    const controller = new AbortController();
    const running = s.prefill(rest, { signal: controller.signal });
    // the decode is on the thread pool now: the abort reaches it inside the ubatch
    controller.abort();
    await assert.rejects(running, AbortError);
    // llama.cpp removed the stopped ubatch's positions: the sequence is the first prefill's
    assert.equal(s.position, head);
    assert.equal(s.tokens.length, head);
    assert.equal(s.stats().cells, head);

    // the same prompt again, in the same chunks as a session never cancelled: the same snap, the same answer
    await s.prefill(rest);
    await ref.prefill(prompt.slice(0, head));
    await ref.prefill(rest);
    assert.equal(s.position, prompt.length);
    const [a, b] = [await s.snap({ window: 16, budget: 128 }), await ref.snap({ window: 16, budget: 128 })];
    assert.equal(a.B, 128);
    assert.deepEqual(s.snapKept(), ref.snapKept(), 'the same positions kept');
    assert.equal(a.L, b.L);
    const answer = async (x: typeof s) => {
      let text = '';
      for await (const piece of x.generate({ maxTokens: 12 })) text += piece;
      return text;
    };
    const [ta, tb] = [await answer(s), await answer(ref)];
    assert.ok(ta.length > 0);
    assert.equal(ta, tb);
  } finally {
    s.dispose();
    ref.dispose();
  }
});

test("a cancelled decode prints none of llama.cpp's error lines (RepoSnap says 'cancelled' itself)", () => {
  const script = [
    `const { loadModel } = require(${JSON.stringify(path.join(__dirname, '..', '..', 'src', 'engine', 'model.ts'))});`,
    `const { createSession } = require(${JSON.stringify(path.join(__dirname, '..', '..', 'src', 'engine', 'session.ts'))});`,
    `(async () => {`,
    `  const model = await loadModel(${JSON.stringify(checkTinyModel())});`,
    `  const s = createSession(model, { contextSize: 1024, batchSize: 512, threads: 1, snapWindow: 16 });`,
    `  const c = new AbortController();`,
    `  const p = s.prefill(Array.from({ length: 500 }, (_, i) => 100 + (i % 300)), { signal: c.signal });`,
    `  c.abort();`,
    `  const r = await p.then(() => 'finished', (e) => e.name + ': ' + e.message);`,
    `  process.stdout.write(r + ' at ' + s.position);`,
    `  s.dispose(); model.dispose();`,
    `})();`,
  ].join('\n');
  const r = spawnSync(process.execPath, ['--import', 'tsx', '-e', script], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, REPOSNAP_VERBOSE: '' } });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, 'AbortError: cancelled at 0');
  assert.equal(r.stderr, '', 'nothing on stderr');
});

test('an abort during generation stops between tokens', async () => {
  const s = createSession(model, { contextSize: 2048, threads: 1, snapWindow: 16 });
  try {
    await s.prefill(prompt.slice(0, 100));
    const controller = new AbortController();
    let pieces = 0;
    const gen = s.generate({ maxTokens: 200, signal: controller.signal });
    for (;;) {
      const r = await gen.next();
      if (r.done) {
        assert.equal(r.value.reason, 'aborted');
        assert.ok(r.value.tokens <= 4, `generated ${r.value.tokens} tokens after the abort`);
        break;
      }
      if (++pieces === 3) controller.abort();
    }
    assert.ok(s.position <= 100 + 4);
  } finally {
    s.dispose();
  }
});

/**
 * V8's collector, whether or not node ran with --expose-gc (`npm test` does not): the flag set at
 * run time exposes `gc` to contexts created after it.
 */
function collector(): () => void {
  if (typeof global.gc === 'function') return global.gc;
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as unknown;
  assert.equal(typeof gc, 'function', 'no garbage collector could be exposed: the memory check would be meaningless');
  return gc as () => void;
}

test('50 cancel cycles leave resident memory flat', async () => {
  const gc = collector();
  const s = createSession(model, { contextSize: 2048, batchSize: 64, threads: 1, snapWindow: 16 });
  const cycle = async () => {
    const controller = new AbortController();
    await assert.rejects(s.prefill(prompt, { signal: controller.signal, onProgress: (p) => p.done >= 192 && controller.abort() }), AbortError);
    s.truncate(0);
  };
  try {
    for (let i = 0; i < 5; i++) await cycle(); // warm up allocators and graph caches
    gc();
    const before = process.memoryUsage().rss;
    for (let i = 0; i < 50; i++) await cycle();
    gc();
    const grown = process.memoryUsage().rss - before;
    console.log(`# rss growth over 50 cancel cycles: ${(grown / 1024).toFixed(0)} KiB`);
    assert.ok(grown < 8 * 1024 * 1024, `resident memory grew by ${(grown / 1048576).toFixed(1)} MiB`);
  } finally {
    s.dispose();
  }
});
