/**
 * The ranking in steps (issue 15, "Speed"): `rankFilesPaced` turns the event loop while it builds
 * the reference graph of a large repository, gives the same ranks as `rankFiles`, and stops at
 * an abort.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FileTags } from '../../src/context/map/tags';
import { buildReferenceGraph, referenceGraphSteps } from '../../src/context/rank/graph';
import { rankFiles, rankFilesPaced } from '../../src/context/rank/rank';

/** 1,500 files: file i defines `worker${i}` and calls `worker${i % 7}` and `worker${(i * 13) % 1500}`. */
function files(): Array<{ path: string; tags: FileTags }> {
  return Array.from({ length: 1500 }, (_, i) => ({
    path: `src/f${i}.ts`,
    tags: {
      grammar: 'typescript' as const,
      definitions: [{ kind: 'function' as const, name: `worker${i}`, line: 1, endLine: 3, signature: `function worker${i}() {` }],
      references: [...new Set([`worker${i % 7}`, `worker${(i * 13) % 1500}`])].sort().map((n) => [n, 1] as [string, number]),
    },
  }));
}

test('the stepped graph is the same edges in the same order, with pauses every 512 files or names', () => {
  const f = files();
  const steps = referenceGraphSteps(f);
  let pauses = 0;
  let step = steps.next();
  while (step.done !== true) {
    pauses++;
    step = steps.next();
  }
  assert.deepEqual(step.value, buildReferenceGraph(f));
  // 1,500 files twice (2 pauses each: after files 512 and 1,024) and 1,500 names (2 pauses)
  assert.equal(pauses, 6);
});

test('rankFilesPaced gives rankFiles ranks, awaiting the yielder between steps', async () => {
  const f = files();
  let asked = 0;
  const ranks = await rankFilesPaced(f, ['src/f3.ts'], () => {
    asked++;
    return new Promise<void>((resolve) => setImmediate(resolve));
  });
  assert.deepEqual([...ranks], [...rankFiles(f, ['src/f3.ts'])]);
  assert.equal(asked, 6);
});

test('an abort while the graph is built rejects with an AbortError', async () => {
  const controller = new AbortController();
  let asked = 0;
  const paced = rankFilesPaced(files(), [], () => {
    if (++asked === 2) controller.abort();
    return undefined;
  }, controller.signal);
  await assert.rejects(paced, { name: 'AbortError' });
  assert.equal(asked, 2);
});
