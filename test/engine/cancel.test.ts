/**
 * Cancellation: an AbortSignal stops a prefill between ubatches and a generation between
 * tokens; the session stays usable; 50 cancel cycles leave resident memory flat.
 */
import assert from 'node:assert/strict';
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
