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
