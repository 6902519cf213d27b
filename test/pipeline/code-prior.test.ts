/**
 * Where the code-aware prior's flags go (src/pipeline/code-prior.ts), on a hand-built prompt whose
 * tokenization is written out piece by piece: token byte offsets, the identifiers a question
 * names, the positions flagged as a definition's signature line and as a named identifier, and
 * the definition lines tree-sitter finds in a packed section.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TagsCache } from '../../src/context/map/cache';
import { formatMapBlock, formatRepositoryMap } from '../../src/context/map/repomap';
import { formatFileSection } from '../../src/context/section';
import { PRIOR_DEFINITION as D, PRIOR_IDENTIFIER as I } from '../../src/engine/policies';
import { codePriorFlags, fileDefinitionLines, questionIdentifiers, sectionDefinitionLines, tokenByteOffsets } from '../../src/pipeline/code-prior';

/** A tokenizer written out by hand: token id = index into `pieces`. */
function vocab(pieces: string[]) {
  return { ids: pieces.map((_, i) => i), bytes: (t: number) => Buffer.from(pieces[t]!, 'utf8') };
}

test('token byte offsets: UTF-8 bytes, SentencePiece’s leading space, and a text the pieces do not spell', () => {
  const v = vocab(['foo', ' bä', 'r', '\n']);
  assert.deepEqual(Array.from(tokenByteOffsets(v.bytes, v.ids, 'foo bär\n')!), [0, 3, 7, 8, 9]); // ä is 2 bytes
  const spm = vocab([' foo', ' bar']);
  assert.deepEqual(Array.from(tokenByteOffsets(spm.bytes, spm.ids, 'foo bar')!), [0, 3, 7]);
  assert.equal(tokenByteOffsets(v.bytes, v.ids, 'foo bar\n'), null);
});

test('the identifiers a question names: code-shaped words, backticked words, calls; not plain words', () => {
  assert.deepEqual(questionIdentifiers('Which file defines `parse`, defaultCacheRoot, max_len, run() or $el2? What does Which return?'), ['parse', 'defaultCacheRoot', 'max_len', 'run', '$el2']);
  assert.deepEqual(questionIdentifiers('Which function is documented as follows: "Returns the value."?'), []);
});

test('flags of a hand-built prompt: the signature line and the named identifier, by position', () => {
  // head run: 3 tokens at positions 0…2
  const head = vocab(['S', 'x', 'y']);
  // a file section at positions 3…20, tokenized by hand
  const pieces = ['a', '.ts', '\n', '```', '\n', 'function', ' foo', 'Bar', '()', ' {', '\n', '  return', ' foo', 'Bar', '2', ';\n', '}\n', '```\n'];
  const text = 'a.ts\n```\nfunction fooBar() {\n  return fooBar2;\n}\n```\n';
  assert.equal(pieces.join(''), text);
  // a run the pieces do not spell: no flag from it
  const bad = ['fooBar'];
  const all = [...head.ids.map((i) => ['S', 'x', 'y'][i]!), ...pieces, ...bad];
  const bytes = (t: number) => Buffer.from(all[t]!, 'utf8');
  const runs = [
    { start: 0, tokens: [0, 1, 2], text: 'Sxy' },
    { start: 3, tokens: pieces.map((_, i) => 3 + i), text, definitionLines: [3] },
    { start: 21, tokens: [21], text: 'fooBar!' },
  ];
  const r = codePriorFlags(24, runs, ['fooBar', 'Bar'], bytes);
  const want = new Array(24).fill(0);
  // line 3 "function fooBar() {": tokens 5…9 of the section (its '\n', token 10, is not in it)
  for (let t = 5; t <= 9; t++) want[3 + t] |= D;
  // "fooBar" on line 3 is tokens 6, 7; "fooBar2" on line 4 is a longer identifier, "Bar" is inside one
  want[3 + 6] |= I;
  want[3 + 7] |= I;
  assert.deepEqual(Array.from(r.flags), want);
  assert.equal(r.definitionTokens, 5);
  assert.equal(r.identifierTokens, 2);
  assert.equal(r.unmappedRuns, 1);
});

test('definition lines of a packed file (tree-sitter) and of the repository map', async () => {
  const file = formatFileSection('src/a.ts', '// note\nexport function fooBar(): number {\n  return 1;\n}\nclass Box {}\n');
  // section lines: 1 path, 2 fence, 3 "// note", 4 the function, 7 the class
  assert.deepEqual(await sectionDefinitionLines({ kind: 'file', path: 'src/a.ts', text: file }, new TagsCache()), [4, 7]);
  // the same file's own lines (no header): 1 "// note", 2 the function, 5 the class
  assert.deepEqual(await fileDefinitionLines('src/a.ts', '// note\nexport function fooBar(): number {\n  return 1;\n}\nclass Box {}\n', new TagsCache()), [2, 5]);
  assert.deepEqual(await fileDefinitionLines('notes.txt', 'function x() {}\n', new TagsCache()), []);
  assert.deepEqual(await sectionDefinitionLines({ kind: 'file', path: 'notes.txt', text: formatFileSection('notes.txt', 'function x() {}\n') }, new TagsCache()), []);
  const map = formatRepositoryMap([formatMapBlock('b.ts', [{ kind: 'function', name: 'x', line: 3, endLine: 5, signature: 'function x() {' }])]);
  // lines: 1 title, 2 fence, 3 "b.ts:", 4 "  3: function x() {", 5 fence
  assert.deepEqual(await sectionDefinitionLines({ kind: 'map', text: map }, new TagsCache()), [4]);
});
