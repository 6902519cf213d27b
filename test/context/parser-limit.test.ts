/**
 * A file too large for the parser is never parsed (issue 29, item 8): tree-sitter's WebAssembly
 * memory aborted the process on a 50 MB file kept with `--keep-generated`. The ranked packing
 * leaves it out as `'too-large'` with the reason, and packs the rest.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_PARSE_CHARS, parserLimitDetail, TagsCache } from '../../src/context/map/cache';
import { makeRepo, manifest, pack } from './fixtures';

/** TypeScript source of just over `MAX_PARSE_CHARS` characters: numbered one-line constants. */
function hugeSource(): string {
  const lines: string[] = [];
  let chars = 0;
  for (let i = 0; chars <= MAX_PARSE_CHARS; i++) {
    const line = `export const value${i} = ${i};\n`;
    lines.push(line);
    chars += line.length;
  }
  return lines.join('');
}

test('a file over the parser limit is left out of the map with the reason; the rest is packed', async (t) => {
  const big = hugeSource();
  const root = await makeRepo(t, { 'src/huge.ts': big, 'src/app.ts': 'export function app(): number {\n  return 1;\n}\n' });
  const result = await pack(root, { packing: 'ranked', tokenBudget: 4000, maxFileBytes: 64 * 1024 * 1024, skipGenerated: false });
  assert.deepEqual(manifest(result).files, ['src/app.ts']);
  assert.deepEqual(result.skipped.filter((s) => s.path === 'src/huge.ts'), [{ path: 'src/huge.ts', reason: 'too-large', detail: parserLimitDetail(big.length) }]);
});

test('the tags cache never hands such a text to the parser', async () => {
  let parsed = 0;
  const cache = new TagsCache({ parser: { parse: async (_text, grammar) => (parsed++, { grammar, definitions: [], references: [] }) } });
  assert.deepEqual(await cache.tags('x'.repeat(MAX_PARSE_CHARS + 1), 'typescript'), { grammar: 'typescript', definitions: [], references: [] });
  assert.equal(parsed, 0);
  await cache.tags('const x = 1;\n', 'typescript');
  assert.equal(parsed, 1);
});
