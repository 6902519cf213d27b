/**
 * Where each map-only file's block and each retrieved chunk lies in its section (issue 15): the
 * tokens and offsets the context report needs for those files' kept shares. Worked by hand with
 * the quarter-characters tokenizer (⌈characters / 4⌉).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TagsCache } from '../../src/context/map/cache';
import { createTagsParser } from '../../src/context/map/tags';
import { packRepository } from '../../src/context/pack';
import { retrieveChunks } from '../../src/context/retrieve/retrieve';
import { FileSecretVerdicts } from '../../src/context/secrets';
import { makeRepo, quarterChars } from './fixtures';

const parser = createTagsParser();

test('each map-only file carries its map block tokens and its offset in the map section', async (t) => {
  const root = await makeRepo(t, {
    'big.ts': `export function keepMe(): number {\n  return 1;\n}\n${'// filler line to make this file large enough\n'.repeat(20)}`,
    'b.py': `def beta_fn(x):\n    return x\n${'# pad\n'.repeat(60)}`,
    'a.py': `def alpha_fn(y):\n    return y\n${'# pad\n'.repeat(60)}`,
  });
  const r = await packRepository(root, { tokenBudget: 60, countTokens: quarterChars, packing: 'ranked', tagsCache: new TagsCache({ parser }), rankedShares: { tree: 0, full: 0 } });
  // 60 tokens: the map (48) and no file in full (each is over 100); no tree (share 0)
  assert.deepEqual(r.sections.map((s) => s.kind), ['map']);
  const map = r.sections.find((s) => s.kind === 'map')!;
  // the map section, by hand:
  //   "Repository map (files not shown in full, each definition after its line number)\n```\n"
  //                                                                         80 + 4 = 84 chars → 21 tokens
  //   "a.py:\n  1: def alpha_fn(y):\n"                                     6 + 22 = 28 chars → 7 tokens
  //   "b.py:\n  1: def beta_fn(x):\n"                                      6 + 21 = 27 chars → 7 tokens
  //   "big.ts:\n  1: export function keepMe(): number {\n"                 8 + 40 = 48 chars → 12 tokens
  //   "```\n"
  assert.equal(
    map.text,
    'Repository map (files not shown in full, each definition after its line number)\n```\na.py:\n  1: def alpha_fn(y):\nb.py:\n  1: def beta_fn(x):\nbig.ts:\n  1: export function keepMe(): number {\n```\n',
  );
  assert.ok(!map.text.includes('line:'), 'no `line:` for the model to copy into a citation');
  const byPath = Object.fromEntries(r.mapped.map((m) => [m.path, [m.offset, m.tokens]]));
  assert.deepEqual(byPath, { 'a.py': [21, 7], 'b.py': [28, 7], 'big.ts': [35, 12] });
});

test('each retrieved chunk carries its block tokens and its offset in the retrieval section', async () => {
  const chunks = [
    { path: 'src/x.ts', name: 'parseConfig', startLine: 3, endLine: 4, text: 'function parseConfig() {\n}' },
    { path: 'src/y.ts', name: 'loadConfig', startLine: 10, endLine: 10, text: 'const loadConfig = () => parseConfig();' },
  ];
  const r = await retrieveChunks(chunks, 'how is the config parsed? parseConfig', { budget: Infinity, countTokens: quarterChars, secrets: new FileSecretVerdicts(false) });
  // by hand: "Code retrieved for the question (path:first-last line)\n" 55 chars → 14 tokens;
  // "src/x.ts:3-4\n```\nfunction parseConfig() {\n}\n```\n" 13 + 4 + 27 + 4 = 48 chars → 12 tokens;
  // "src/y.ts:10-10\n```\nconst loadConfig = () => parseConfig();\n```\n" 15 + 4 + 40 + 4 = 63 chars → 16 tokens
  assert.deepEqual(r.chunks.map((c) => c.name), ['parseConfig', 'loadConfig']);
  assert.deepEqual(r.spans, [
    { path: 'src/x.ts', tokens: 12, offset: 14 },
    { path: 'src/y.ts', tokens: 16, offset: 26 },
  ]);
  assert.equal(r.tokens, quarterChars(r.text));
  assert.equal(r.text.length, 55 + 48 + 63);
});
