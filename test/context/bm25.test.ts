/**
 * Retrieval for a question (issue 15): code-aware terms, chunks from the parse, and BM25F
 * ordering with the scores recomputed here from the formula.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createTagsParser } from '../../src/context/map/tags';
import { chunkSetKey, namedIdentifiers, rankChunks, resetChunkIndex } from '../../src/context/retrieve/bm25';
import { chunksOf, type Chunk } from '../../src/context/retrieve/chunks';
import { retrieveChunks } from '../../src/context/retrieve/retrieve';
import { formatRetrievalSection } from '../../src/context/retrieve/section';
import { FileSecretVerdicts } from '../../src/context/secrets';
import { fakeSecrets } from './fake-secrets';
import { codeTerms } from '../../src/context/retrieve/tokenize';

test('identifiers are split at camelCase, acronyms, snake_case and kebab-case and kept whole; stop words and single letters go', () => {
  assert.deepEqual(codeTerms('defaultCacheRoot()'), ['defaultcacheroot', 'default', 'cache', 'root']);
  assert.deepEqual(codeTerms('parseHTTPHeader'), ['parsehttpheader', 'parse', 'http', 'header']);
  assert.deepEqual(codeTerms('snake_case_name kebab-case'), ['snake_case_name', 'snake', 'case', 'name', 'kebab', 'case']);
  assert.deepEqual(codeTerms('Which file defines the function x?'), ['file', 'defines', 'function']);
});

const chunk = (name: string, path: string, text: string): Chunk => ({ name, path, startLine: 1, endLine: text.split('\n').length, text });
const CHUNKS: Chunk[] = [
  chunk('packRepository', 'src/context/pack.ts', 'export async function packRepository(root: string, options: PackOptions) {\n  return walk(root, options);\n}'),
  chunk('workspaceCacheDir', 'src/cache/location.ts', 'export function workspaceCacheDir(repo: string): string {\n  return join(defaultCacheRoot(), hash(repo));\n}'),
  chunk('tokenize', 'src/engine/model.ts', 'tokenize(text: string): Int32Array {\n  return this.native.tokenize(text);\n}'),
  chunk('defaultCacheRoot', 'src/cache/location.ts', "export function defaultCacheRoot(): string {\n  return process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache');\n}"),
];

/** BM25F as wink-bm25-text-search defines it, recomputed: fields name (weight 3) and body (1), k1 1.2, b 0.75. */
function bm25f(chunks: readonly Chunk[], question: string): number[] {
  const docs = chunks.map((c) => {
    const tf = new Map<string, number>();
    let length = 0;
    for (const [text, w] of [[`${c.name} ${c.path}`, 3], [c.text, 1]] as const) {
      for (const t of codeTerms(text)) tf.set(t, (tf.get(t) ?? 0) + w);
      length += codeTerms(text).length * w;
    }
    return { tf, length };
  });
  const avg = docs.reduce((a, d) => a + d.length, 0) / docs.length;
  return docs.map((d) => {
    let score = 0;
    for (const t of codeTerms(question)) {
      const f = d.tf.get(t);
      if (f === undefined) continue;
      const n = docs.filter((x) => x.tf.has(t)).length;
      const idf = Math.log((docs.length - n + 0.5) / (n + 0.5) + 1);
      score += idf * ((f * 2.2) / (f + 1.2 * (0.25 + (0.75 * d.length) / avg)));
    }
    return score;
  });
}

test('BM25 puts the function a question names first, then its caller, then a chunk sharing one word; unrelated chunks are left out', () => {
  const question = 'Where is the default cache root computed?';
  const ranked = rankChunks(CHUNKS, question);
  assert.deepEqual(ranked.map((r) => r.chunk.name), ['defaultCacheRoot', 'workspaceCacheDir', 'packRepository']);
  const expected = bm25f(CHUNKS, question);
  for (const r of ranked) {
    const e = expected[CHUNKS.indexOf(r.chunk)]!;
    // wink stores each term's weight to 4 decimals: 3 terms at most differ by 1.5e-4
    assert.ok(Math.abs(r.score - e) < 2e-4, `${r.chunk.name}: ${r.score} vs ${e}`);
  }
  assert.equal(expected[2], 0, 'tokenize shares no term with the question');
});

test('the index of a chunk set is kept for the next question on the same set, and never used for another set', () => {
  const question = 'Where is the default cache root computed?';
  resetChunkIndex();
  const cold = rankChunks(CHUNKS, question);
  // the same set again (a structurally equal copy, as the next pack of an unchanged repository
  // gives): the kept index answers, with the scores a fresh index gives and the formula's
  const copy = CHUNKS.map((c) => ({ ...c }));
  assert.equal(chunkSetKey(copy), chunkSetKey(CHUNKS));
  const warm = rankChunks(copy, question);
  assert.deepEqual(warm.map((r) => [r.chunk.name, r.score]), cold.map((r) => [r.chunk.name, r.score]));
  // one chunk's text changed: another key, and its new words are found (a stale index would not)
  const edited = CHUNKS.map((c) => (c.name === 'tokenize' ? { ...c, text: `${c.text}\n// the default cache root is not here` } : c));
  assert.notEqual(chunkSetKey(edited), chunkSetKey(CHUNKS));
  const after = rankChunks(edited, question);
  assert.ok(after.some((r) => r.chunk.name === 'tokenize'), 'the edited chunk shares the question\'s words now');
  const expected = bm25f(edited, question);
  for (const r of after) assert.ok(Math.abs(r.score - expected[edited.indexOf(r.chunk)]!) < 2e-4, `${r.chunk.name}: ${r.score}`);
  // the key covers every field and the parameters
  const base = chunkSetKey(CHUNKS);
  for (const changed of [
    chunkSetKey(CHUNKS.map((c, i) => (i === 0 ? { ...c, path: 'src/context/pack2.ts' } : c))),
    chunkSetKey(CHUNKS.map((c, i) => (i === 0 ? { ...c, name: 'packRepo' } : c))),
    chunkSetKey(CHUNKS.map((c, i) => (i === 0 ? { ...c, owner: 'Packer' } : c))),
    chunkSetKey(CHUNKS.map((c, i) => (i === 0 ? { ...c, startLine: 2 } : c))),
    chunkSetKey(CHUNKS.map((c, i) => (i === 0 ? { ...c, endLine: 9 } : c))),
    chunkSetKey(CHUNKS.slice(1)),
    chunkSetKey([...CHUNKS].reverse()),
    chunkSetKey(CHUNKS, { nameWeight: 2 }),
    chunkSetKey(CHUNKS, { k1: 1.5 }),
  ]) assert.notEqual(changed, base);
  // back on the first set after another: indexed again, same ranking
  assert.deepEqual(rankChunks(CHUNKS, question).map((r) => [r.chunk.name, r.score]), cold.map((r) => [r.chunk.name, r.score]));
});

test('a question with no known term retrieves nothing; two chunks (too few for idf) are filtered, not ranked', () => {
  assert.deepEqual(rankChunks(CHUNKS, 'what about zebras?'), []);
  assert.deepEqual(rankChunks(CHUNKS.slice(0, 2), 'the workspace').map((r) => [r.chunk.name, r.score]), [['workspaceCacheDir', 1]]);
});

test('a question names the words of its code spans and its compound identifiers, case kept', () => {
  assert.deepEqual([...namedIdentifiers('What does `end` do in parseStream? See `lib/time.js` and max_int, not Which or name.')], ['end', 'lib', 'time', 'js', 'parseStream', 'max_int']);
  assert.deepEqual([...namedIdentifiers('What is the name of the first parameter of the function?')], []);
  assert.deepEqual([...namedIdentifiers('is isURL like $el_2?')], ['isURL', '$el_2']);
});

/** Chunks where BM25 alone puts a caller rich in the question's plain words above the function the question names. */
const PARAM_CHUNKS: Chunk[] = [
  chunk('parseParameter', 'lib/headers.js', 'function parseParameter(name) {\n  const parameterName = name.trim();\n  const first = parameterName[0];\n  return first + parameterName;\n}'),
  chunk('readBlob', 'lib/helpers/readBlob.js', 'const readBlob = async function* (blob) {\n  yield blob;\n}'),
  chunk('readCookie', 'lib/cookies.js', 'const readCookie = (name) => cookies.read(name);'),
  chunk('on', 'lib/events.js', 'const on = (event, fn) => listeners.push([event, fn]);'),
  chunk('streamBody', 'lib/adapters/fetch.js', 'const streamBody = (blob) => readBlob(blob);'),
  chunk('toBuffer', 'lib/adapters/http.js', 'async function toBuffer(blob) {\n  return readBlob(blob);\n}'),
];

test('chunks whose name the question spells out come first, then the chunks using it, by BM25 score; the others are left out; a named chunk sharing no term still comes, with score 0', () => {
  const question = 'What is the name of the first parameter of the function `readBlob`?';
  const expected = bm25f(PARAM_CHUNKS, question);
  // BM25 alone: parseParameter (name, first, parameter ×3 …) outscores readBlob (readblob, read, blob)
  assert.ok(expected[0]! > expected[1]!, `parseParameter ${expected[0]} vs readBlob ${expected[1]}`);
  assert.equal(expected[3], 0);
  const byScore = (indices: number[]): string[] => indices.filter((i) => expected[i]! > 0).sort((a, b) => expected[b]! - expected[a]! || a - b).map((i) => PARAM_CHUNKS[i]!.name);
  const ranked = rankChunks(PARAM_CHUNKS, question);
  // readBlob, then its callers streamBody and toBuffer (their text uses `readBlob`); parseParameter
  // and readCookie share only the question's plain words and are left out
  assert.deepEqual(ranked.map((r) => r.chunk.name), ['readBlob', ...byScore([4, 5])]);
  for (const r of ranked) assert.ok(Math.abs(r.score - expected[PARAM_CHUNKS.indexOf(r.chunk)]!) < 2e-4, r.chunk.name);
  // the name in lower case, outside a code span, names nothing: plain BM25 order (of its own terms: `readblob` is not split)
  const plain = 'What is the name of the first parameter of the function readblob?';
  const plainScores = bm25f(PARAM_CHUNKS, plain);
  assert.deepEqual(
    rankChunks(PARAM_CHUNKS, plain).map((r) => r.chunk.name),
    [0, 1, 2, 3, 4, 5].filter((i) => plainScores[i]! > 0).sort((a, b) => plainScores[b]! - plainScores[a]! || a - b).map((i) => PARAM_CHUNKS[i]!.name),
  );
  assert.equal(rankChunks(PARAM_CHUNKS, plain)[0]!.chunk.name, 'parseParameter');
  // `on` is a stop word (no BM25 term), but the question names it
  assert.deepEqual(rankChunks(PARAM_CHUNKS, 'What does `on` do?').map((r) => [r.chunk.name, r.score]), [['on', 0]]);
  // two chunks (no idf): every chunk named or sharing a term, with the same filter (readBlob
  // shares `read` but does not use readCookie)
  assert.deepEqual(rankChunks(PARAM_CHUNKS.slice(1, 3), 'What is `readCookie`?').map((r) => [r.chunk.name, r.score]), [['readCookie', 1]]);
  assert.deepEqual(rankChunks(PARAM_CHUNKS.slice(1, 3), 'What does `read` do?').map((r) => [r.chunk.name, r.score]), [['readCookie', 1]], 'readCookie uses `read`');
  // a name no chunk defines keeps its users (readBlob's definition not among the chunks: in a file in full)
  const withoutDefinition = PARAM_CHUNKS.filter((c) => c.name !== 'readBlob');
  const usersScores = bm25f(withoutDefinition, question);
  assert.deepEqual(
    rankChunks(withoutDefinition, question).map((r) => r.chunk.name),
    [3, 4].sort((a, b) => usersScores[b]! - usersScores[a]! || a - b).map((i) => withoutDefinition[i]!.name),
  );
  // a name no chunk defines or uses (`current`) leaves nothing, though BM25 matches plain words
  const doc = 'Which function reads the `current` blob by name?';
  assert.ok(bm25f(PARAM_CHUNKS, doc).filter((x) => x > 0).length >= 4);
  assert.deepEqual(rankChunks(PARAM_CHUNKS, doc), []);
  // no name spelled out: plain BM25
  const plainDoc = 'Which function reads the blob by name?';
  const plainDocScores = bm25f(PARAM_CHUNKS, plainDoc);
  assert.deepEqual(
    rankChunks(PARAM_CHUNKS, plainDoc).map((r) => r.chunk.name),
    [0, 1, 2, 3, 4, 5].filter((i) => plainDocScores[i]! > 0).sort((a, b) => plainDocScores[b]! - plainDocScores[a]! || a - b).map((i) => PARAM_CHUNKS[i]!.name),
  );
});

test('chunks are functions, methods, method-less types and constants, with their lines; a class with methods is split into its header and its methods', async () => {
  const text =
    'export const A = 1;\nexport class Box {\n  open() {\n    return 1;\n  }\n}\nexport interface Shape {\n  x: number;\n}\nfunction f() {}\n' +
    'const LIMITS = {\n  max: 2147483647,\n};\nconst made = (() => {\n  function inner() {}\n  return inner;\n})();\n';
  const tags = await createTagsParser().parse(text, 'typescript');
  assert.deepEqual(
    chunksOf('a.ts', text, tags).map((c) => [c.name, c.owner, c.startLine, c.endLine, c.text]),
    [
      // a constant is a chunk of its own (its value is nowhere else when its file is neither in full nor in the map)
      ['A', undefined, 1, 1, 'export const A = 1;'],
      // the class's header (its declaration: no field before its first method), then the method, owned by it
      ['Box', undefined, 2, 2, 'export class Box {'],
      ['open', 'Box', 3, 5, '  open() {\n    return 1;\n  }'],
      ['Shape', undefined, 7, 9, 'export interface Shape {\n  x: number;\n}'],
      ['f', undefined, 10, 10, 'function f() {}'],
      ['LIMITS', undefined, 11, 13, 'const LIMITS = {\n  max: 2147483647,\n};'],
      // `made` holds the function `inner`: retrieved as `inner`, like a class's methods
      ['inner', undefined, 15, 15, '  function inner() {}'],
    ],
  );
});

test('the retrieval section holds the best chunks that fit its budget exactly, skipping one too large for what is left', async () => {
  // a stand-in tokenizer: whitespace-separated words. Title: 7 words; blocks (header line, two
  // fences, the text): defaultCacheRoot 1 + 2 + 11 = 14, workspaceCacheDir 1 + 2 + 10 = 13,
  // packRepository 1 + 2 + 12 = 15 (counted by hand)
  const words = (text: string): number => text.split(/\s+/).filter((w) => w !== '').length;
  const ranked = rankChunks(CHUNKS, 'Where is the default cache root computed?');
  const whole = await formatRetrievalSection(ranked, Infinity, words);
  assert.deepEqual(whole.chosen, [0, 1, 2]);
  assert.equal(whole.tokens, 7 + 14 + 13 + 15);
  const first = await formatRetrievalSection(ranked, 21, words);
  assert.equal(
    first.text,
    "Code retrieved for the question (path:first-last line)\nsrc/cache/location.ts:1-3\n```\nexport function defaultCacheRoot(): string {\n  return process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache');\n}\n```\n",
  );
  assert.equal(first.tokens, 21);
  assert.deepEqual(await formatRetrievalSection(ranked, 19, words), { text: '', tokens: 0, chosen: [] });
  // in the order default (14), pack (15), workspace (13) with 34 tokens: pack does not fit after default, workspace does
  const skip = await formatRetrievalSection([ranked[0]!, ranked[2]!, ranked[1]!], 34, words);
  assert.deepEqual(skip.chosen, [0, 2]);
  assert.equal(skip.tokens, 34);
  assert.equal(skip.tokens, words(skip.text));
});

test('retrieval never quotes a chunk of a file that holds a secret, not even a clean one, and reports the file as the packer does', async () => {
  const forge = fakeSecrets().find((s) => s.path === 'src/forge.ts')!;
  // a clean function at the top, the secret at the bottom (lines 5-6): only the function is a chunk
  const leakyFile = `export function cacheToken() {\n  return 'default cache root';\n}\n\n${forge.content}`;
  const leaky = chunk('cacheToken', 'src/cache/token.ts', leakyFile.split('\n').slice(0, 3).join('\n'));
  assert.ok(!leaky.text.includes(forge.secret));
  const question = 'Where is the default cache root computed?';
  const withLeak = [...CHUNKS, leaky];
  assert.ok(rankChunks(withLeak, question).some((r) => r.chunk === leaky), 'BM25 alone would quote it');
  const secrets = new FileSecretVerdicts();
  for (const c of CHUNKS) secrets.defer(c.path, CHUNKS.filter((o) => o.path === c.path).map((o) => o.text).join('\n\n'));
  secrets.defer(leaky.path, leakyFile);
  const retrieved = await retrieveChunks(withLeak, question, { budget: Infinity, countTokens: (t) => t.length, secrets });
  assert.deepEqual(retrieved.chunks.map((c) => c.name), ['defaultCacheRoot', 'workspaceCacheDir', 'packRepository']);
  assert.ok(!retrieved.text.includes('cacheToken'));
  assert.deepEqual(retrieved.skipped, [{ path: 'src/cache/token.ts', reason: 'secret', detail: `github secret at line 6, column ${forge.column} (secretlint rules)` }]);
  // the same chunks without the decision's consent: a disabled decision quotes the clean function
  const off = await retrieveChunks(withLeak, question, { budget: Infinity, countTokens: (t) => t.length, secrets: new FileSecretVerdicts(false) });
  assert.ok(off.chunks.some((c) => c.name === 'cacheToken'));
  assert.deepEqual(off.skipped, []);
});
