/**
 * A long section is tokenized no further than decides whether it fits (`countUpTo`): the first
 * file of a pack too, before any token density is known; and the margin holds with real
 * tokenizers (a prefix cut at a line end never counts more than the whole text's tokens plus it).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { loadModel } from '../../src/engine/model';
import { countUpTo, PREFIX_CHARS_PER_TOKEN, PREFIX_MARGIN_TOKENS, YIELD_EVERY_MS } from '../../src/context/prefix-count';
import { checkRealModel, checkTinyModel } from '../helpers/models';
import { detailOf, makeRepo, manifest, pack, quarterChars } from './fixtures';

/** 2,000,000 characters of code-like lines (40 characters each, the line end included). */
const BIG = 'export const value = compute(a, b, cd);\n'.repeat(50_000);
/** Its section: the header "big.ts\n```\n" (11 characters), BIG, the closing "```\n" (4). */
const SECTION_CHARS = 11 + BIG.length + 4;

test('the first file of a pack, however large, is tokenized only as far as a prefix sized from the budget', async (t) => {
  const root = await makeRepo(t, { 'big.ts': BIG, 'small.ts': 'export const s = 1;\n' });
  const lengths: number[] = [];
  const countTokens = (text: string): number => {
    lengths.push(text.length);
    return quarterChars(text);
  };
  const progress: Array<{ path: string; chars: number; of: number }> = [];
  // big.ts is the only file: no density is known when it comes
  const only = await pack(root, { maxFileBytes: 10_000_000, include: ['big.ts'], tokenBudget: 100, countTokens, onProgress: (p) => p.section && progress.push(p.section) });
  const first = (100 + PREFIX_MARGIN_TOKENS + 1) * PREFIX_CHARS_PER_TOKEN; // 1,872 characters
  assert.deepEqual(manifest(only).skipped, [['big.ts', 'over-budget']]);
  // cut after the last line end before 1,872 characters: the header and 46 lines of 40
  const prefixChars = 11 + 46 * 40;
  assert.equal(BIG.length, 2_000_000);
  assert.deepEqual(lengths, [prefixChars]);
  assert.ok(prefixChars <= first);
  assert.equal(detailOf(only, 'big.ts'), `not tokenized in full: its first ${prefixChars} of ${SECTION_CHARS} characters alone need ${Math.ceil(prefixChars / 4)} tokens, 100 of 100 left (larger files are dropped first)`);
  assert.deepEqual(progress, [{ path: 'big.ts', chars: prefixChars, of: SECTION_CHARS }]);

  // with room for it (2,000,015 characters are 500,004 quarter-character tokens), the file is counted whole, once, and kept
  lengths.length = 0;
  const whole = await pack(root, { maxFileBytes: 10_000_000, include: ['big.ts'], tokenBudget: 600_000, countTokens });
  assert.deepEqual(manifest(whole).files, ['big.ts']);
  assert.equal(whole.totalTokens, 500_004);
  assert.deepEqual(lengths, [SECTION_CHARS]);
});

test('countUpTo: a short text is counted whole; one with no line end to cut at, or denser than the bound, falls back to the whole', async () => {
  const calls: number[] = [];
  const count = (s: string): number => (calls.push(s.length), quarterChars(s));
  assert.deepEqual(await countUpTo('abc\n', 0, count), { kind: 'counted', tokens: 1 });
  // one line of 10,000 characters: nothing to cut at, counted whole (and found over by the caller)
  calls.length = 0;
  assert.deepEqual(await countUpTo('x'.repeat(10_000), 10, count), { kind: 'counted', tokens: 2_500 });
  assert.deepEqual(calls, [10_000]);
  // a tokenizer with 100 characters per token: the prefixes cannot decide, the whole is counted
  // (990 left: prefixes of 16,100 and 64,400 characters, the last line ends before 1,007 × 16 and 4 × that, need 161 and 644)
  calls.length = 0;
  const sparse = (s: string): number => (calls.push(s.length), Math.ceil(s.length / 100));
  const text = 'y'.repeat(99) + '\n';
  assert.deepEqual(await countUpTo(text.repeat(1000), 990, sparse), { kind: 'counted', tokens: 1000 });
  assert.deepEqual(calls, [16_100, 64_400, 100_000]);
  // the same text with 50 left: the third prefix (17,100 characters, 171 tokens > 50 + 16) decides
  assert.deepEqual(await countUpTo(text.repeat(1000), 50, sparse), { kind: 'over', prefixChars: 17_100, prefixTokens: 171 });
  await assert.rejects(countUpTo('a', -1, count), RangeError);
  await assert.rejects(countUpTo('a\n'.repeat(10_000), 0, () => Number.NaN), TypeError);
});

test('countUpTo: an abort that comes while a sync tokenizer runs (a Ctrl+C) stops the section before its next prefix', async () => {
  // the text of the sparse case above: with 990 tokens left, prefixes of 16,100 and 64,400 characters, then the whole
  const text = ('y'.repeat(99) + '\n').repeat(1000);
  const controller = new AbortController();
  const calls: number[] = [];
  const slowSparse = (s: string): number => {
    calls.push(s.length);
    // the signal handler's abort is queued behind this call, as a SIGINT that arrives while a
    // native tokenizer runs is; the call takes longer than the yield interval (a large section's)
    if (calls.length === 1) setImmediate(() => controller.abort());
    const end = performance.now() + 2 * YIELD_EVERY_MS;
    while (performance.now() < end);
    return Math.ceil(s.length / 100);
  };
  await assert.rejects(countUpTo(text, 990, slowSparse, { signal: controller.signal }), { name: 'AbortError' });
  assert.deepEqual(calls, [16_100]);
  // without a signal nothing yields: the three counts of the case above
  calls.length = 0;
  assert.deepEqual(await countUpTo(text, 990, slowSparse), { kind: 'counted', tokens: 1000 });
  assert.deepEqual(calls, [16_100, 64_400, 100_000]);
});

test('with real tokenizers a prefix cut after a line end never needs more than PREFIX_MARGIN_TOKENS tokens beyond the whole text', async () => {
  const repo = path.resolve(__dirname, '..', '..');
  const sources = ['src/context/pack.ts', 'README.md', 'native/patches/' + fs.readdirSync(path.join(repo, 'native/patches')).sort()[0]].map((p) => path.join(repo, p));
  for (const modelPath of [checkTinyModel(), checkRealModel()]) {
    const model = await loadModel(modelPath);
    try {
      for (const file of sources) {
        const text = fs.readFileSync(file, 'utf8');
        const whole = model.tokenize(text).length;
        for (let at = 500; at < text.length; at += 4999) {
          const cut = text.lastIndexOf('\n', at) + 1;
          if (cut === 0) continue;
          // cut and rest tokenized apart count the whole's tokens to within the margin: the cut changes only the pieces beside it
          const prefix = model.tokenize(text.slice(0, cut)).length;
          const rest = model.tokenize(text.slice(cut)).length;
          assert.ok(Math.abs(prefix + rest - whole) <= PREFIX_MARGIN_TOKENS, `${path.basename(modelPath)} ${file}@${cut}: ${prefix} + ${rest} vs ${whole}`);
          assert.ok(prefix <= whole + PREFIX_MARGIN_TOKENS);
        }
      }
    } finally {
      model.dispose();
    }
  }
});
