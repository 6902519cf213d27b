/**
 * The ranked packing's parse pass runs with progress and stops promptly when cancelled
 * (issue 15, "Speed"): no file is parsed after the abort, and a parse in flight is not waited for.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TagsCache } from '../../src/context/map/cache';
import { createTagsParser, type TagsParser } from '../../src/context/map/tags';
import { packRepository } from '../../src/context/pack';
import { makeRepo, quarterChars } from './fixtures';

const parser = createTagsParser();

/** Ten TypeScript files, each defining one function and calling the one before. */
function tenFiles(): Record<string, string> {
  const files: Record<string, string> = {};
  for (let i = 0; i < 10; i++) files[`src/f${i}.ts`] = `export function step${i}(): number {\n  return ${i === 0 ? '0' : `step${i - 1}()`};\n}\n`;
  return files;
}

test('the read-and-parse pass reports progress per file, and an abort stops it before the next parse', async (t) => {
  const root = await makeRepo(t, tenFiles());
  const parsed: string[] = [];
  const counting: TagsParser = { parse: (text, grammar) => (parsed.push(text.split('\n')[0]!), parser.parse(text, grammar)) };
  const controller = new AbortController();
  const reads: number[] = [];
  const packing = packRepository(root, {
    tokenBudget: 10_000,
    countTokens: quarterChars,
    packing: 'ranked',
    tagsCache: new TagsCache({ parser: counting }),
    signal: controller.signal,
    onProgress: (p) => {
      if (p.phase !== 'read') return;
      reads.push(p.done);
      assert.equal(p.total, 10);
      if (p.done === 3) controller.abort();
    },
  });
  await assert.rejects(packing, { name: 'AbortError' });
  assert.deepEqual(reads, [1, 2, 3]);
  // files are read and parsed in path order: f0, f1, f2, and nothing after the abort
  assert.deepEqual(parsed, ['export function step0(): number {', 'export function step1(): number {', 'export function step2(): number {']);
});

test('an abort while a parse is in flight rejects at once, without waiting for the parse', async (t) => {
  const root = await makeRepo(t, tenFiles());
  const controller = new AbortController();
  let release: () => void = () => undefined;
  let started = 0;
  // the third parse never finishes until released: the pack must not wait for it
  const stuck: TagsParser = {
    parse: (text, grammar) => {
      started++;
      if (started < 3) return parser.parse(text, grammar);
      return new Promise((resolve) => {
        release = () => resolve(parser.parse(text, grammar));
        controller.abort();
      });
    },
  };
  const packing = packRepository(root, { tokenBudget: 10_000, countTokens: quarterChars, packing: 'ranked', tagsCache: new TagsCache({ parser: stuck }), signal: controller.signal });
  await assert.rejects(packing, { name: 'AbortError' });
  assert.equal(started, 3);
  release();
});

test('fitting a map of many blocks turns the event loop, so an abort from another task stops it part way', async (t) => {
  // 120 files of one function each: none fits in full (shares 0), all compete for the map
  const files: Record<string, string> = {};
  for (let i = 0; i < 120; i++) files[`src/m${String(i).padStart(3, '0')}.ts`] = `export function part${i}(): number {\n  return ${i};\n}\n`;
  const root = await makeRepo(t, files);
  const controller = new AbortController();
  let mapStarted = false;
  let blocksAfterAbortRequest = 0;
  let abortRequested = false;
  // a slow tokenizer (2 ms a call, busy): without turns of the event loop the abort would wait for all 120 blocks
  const countTokens = (text: string): number => {
    const until = performance.now() + 2;
    while (performance.now() < until);
    if (!mapStarted && text.startsWith('Repository map')) {
      mapStarted = true;
      setImmediate(() => controller.abort());
      abortRequested = true;
    } else if (abortRequested && /^src\/m\d+\.ts:\n/.test(text)) blocksAfterAbortRequest++;
    return quarterChars(text);
  };
  const packing = packRepository(root, {
    tokenBudget: 100_000,
    countTokens,
    packing: 'ranked',
    rankedShares: { tree: 0, full: 0 },
    tagsCache: new TagsCache({ parser }),
    signal: controller.signal,
  });
  await assert.rejects(packing, { name: 'AbortError' });
  assert.ok(mapStarted);
  // the fit yields at least every 10 ms, 5 blocks here; far fewer than the 120
  assert.ok(blocksAfterAbortRequest < 60, `${blocksAfterAbortRequest} blocks counted after the abort was requested`);
});
