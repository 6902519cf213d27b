/**
 * Thread defaults: prefill on every core, decode on one core fewer (Node keeps one), and decode
 * over a long cache (attention-bound, like prefill) on every core: the crossover measured by
 * bench/engine lies between 2,048 and 8,192 attended cells.
 */
import assert from 'node:assert/strict';
import os from 'node:os';
import { test } from 'node:test';
import { decodeThreadsFor, defaultThreads, LONG_KV_CELLS } from '../../src/engine/threads';

test('defaults: prefill on every core, decode on one fewer (at least 1, at most 8); REPOSNAP_THREADS overrides', () => {
  const cores = os.availableParallelism();
  const saved = process.env.REPOSNAP_THREADS;
  try {
    delete process.env.REPOSNAP_THREADS;
    assert.deepEqual(defaultThreads(), { threads: Math.min(8, Math.max(1, cores - 1)), threadsBatch: cores });
    process.env.REPOSNAP_THREADS = '3';
    assert.deepEqual(defaultThreads(), { threads: 3, threadsBatch: 3 });
  } finally {
    if (saved === undefined) delete process.env.REPOSNAP_THREADS;
    else process.env.REPOSNAP_THREADS = saved;
  }
});

test('decode threads follow the attended cells: short caches (SnapKV budgets) on `threads`, long ones on `threadsBatch`', () => {
  const counts = { threads: 1, threadsBatch: 2 };
  assert.ok(LONG_KV_CELLS > 2048 && LONG_KV_CELLS <= 8192);
  assert.equal(decodeThreadsFor(1024, counts), 1);
  assert.equal(decodeThreadsFor(LONG_KV_CELLS - 1, counts), 1);
  assert.equal(decodeThreadsFor(LONG_KV_CELLS, counts), 2);
  assert.equal(decodeThreadsFor(16384, counts), 2);
  assert.equal(decodeThreadsFor(16384, { threads: 4, threadsBatch: 2 }), 4, 'never fewer than the decode count');
});
