/** The file watcher's debouncer: one refresh after the last change, one more for changes during a refresh. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Debouncer } from '../../src/host/debounce';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('a burst of changes gives one refresh, after the last change', async () => {
  const runs: number[] = [];
  const t0 = Date.now();
  const d = new Debouncer(40, async () => {
    runs.push(Date.now() - t0);
  });
  for (let i = 0; i < 5; i++) {
    d.poke();
    await sleep(10);
  }
  await sleep(80);
  assert.equal(runs.length, 1);
  assert.ok(runs[0]! >= 40 + 40, `ran at ${runs[0]} ms, before the burst ended + the delay`);
  d.dispose();
});

test('changes during a refresh schedule exactly one more; a failing refresh is not fatal', async () => {
  let runs = 0;
  let release: () => void = () => {};
  const d = new Debouncer(10, async () => {
    runs++;
    if (runs === 1) {
      await new Promise<void>((r) => (release = r));
      throw new Error('engine busy');
    }
  });
  d.poke();
  await sleep(30);
  assert.equal(runs, 1);
  d.poke();
  d.poke();
  release();
  await sleep(50);
  assert.equal(runs, 2);
  await sleep(30);
  assert.equal(runs, 2);
  d.dispose();
});
