/**
 * The code-aware prior on the fidelity suite's code prompts (bench/fidelity/code-prior.ts, issue 16
 * item 4): definition name lines from the product's tree-sitter tags placed in the prompt's text,
 * mapped to token positions after a BOS, identifiers read from the observation window. A fixture
 * prompt of two files and a word-and-punctuation tokenizer whose every expected position is
 * counted by hand below.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { codePromptPrior, codePromptRun, promptDefinitionLines, windowText } from '../../bench/fidelity/code-prior';
import { fileBlock, type SourceFile } from '../../bench/fidelity/code-prompts';
import { TagsCache } from '../../src/context/map/cache';
import { PRIOR_DEFINITION as D, PRIOR_IDENTIFIER as I } from '../../src/engine/policies/code-prior';

const FILES: SourceFile[] = [
  { name: 'p/a.js', text: 'const x = 1;\nlet y = 2;\nfunction fooBar(a) {\n  return a;\n}\n' },
  { name: 'p/b.ts', text: 'export class Box {\n  size() {\n    return fooBar(1);\n  }\n}\n' },
];

/**
 * The prompt's text, line by line:
 *   1 // p/a.js          8 // p/b.ts
 *   2 const x = 1;       9 export class Box {
 *   3 let y = 2;        10   size() {
 *   4 function fooBar(a) {   11     return fooBar(1);
 *   5   return a;        12   }
 *   6 }                  13 }
 *   7                    14
 */
const TEXT = FILES.map(fileBlock).join('');

/** Words, numbers, runs of spaces, and single other characters (each newline its own piece). */
const PIECES = TEXT.match(/[A-Za-z_$][\w$]*|\d+|\n| +|[^\sA-Za-z0-9_$]/g)!;
const BOS = PIECES.length;
const bytesOf = (pieces: readonly (string | Uint8Array)[]) => (t: number) => (typeof pieces[t] === 'string' ? Buffer.from(pieces[t], 'utf8') : (pieces[t] as Uint8Array));
const tokenBytes = bytesOf([...PIECES, Buffer.from('<s>')]);

test('fixture tokenizer: the pieces spell the text, and the hand-counted token indices hold what the comments say', () => {
  assert.equal(PIECES.join(''), TEXT);
  // text tokens: 0-8 "// p/a.js\n", 9-17 line 2, 18-26 line 3, 27-35 line 4, 36-41 line 5, 42-43 line 6, 44 line 7,
  // 45-53 "// p/b.ts\n", 54-61 line 9, 62-68 line 10, 69-77 line 11
  assert.deepEqual(PIECES.slice(9, 18), ['const', ' ', 'x', ' ', '=', ' ', '1', ';', '\n']);
  assert.deepEqual(PIECES.slice(27, 36), ['function', ' ', 'fooBar', '(', 'a', ')', ' ', '{', '\n']);
  assert.deepEqual(PIECES.slice(54, 62), ['export', ' ', 'class', ' ', 'Box', ' ', '{', '\n']);
  assert.deepEqual(PIECES.slice(62, 69), ['  ', 'size', '(', ')', ' ', '{', '\n']);
  assert.deepEqual(PIECES.slice(69, 78), ['    ', 'return', ' ', 'fooBar', '(', '1', ')', ';', '\n']);
});

test("definition lines in the prompt's text: each file's tags (const, function; class, method) after its path line; not `let`", async () => {
  assert.deepEqual(await promptDefinitionLines(FILES, new TagsCache()), [2, 4, 9, 10]);
  // a file in a language the map does not parse adds none but still moves the next file's lines down
  const withNotes = [{ name: 'p/notes.txt', text: 'function no() {}\n' }, FILES[0]!];
  assert.deepEqual(await promptDefinitionLines(withNotes, new TagsCache()), [5, 7]);
});

test('the prior flags of a cut code prompt: definition tokens and window identifiers at their sequence positions after BOS', async () => {
  // BOS, then text tokens 0…74: cut after the "1" of line 11; L = 76
  const tokens = [BOS, ...PIECES.slice(0, 75).map((_, i) => i)];
  // the window: the last 6 tokens, "    return fooBar(1"
  assert.equal(windowText(tokens, 6, tokenBytes), '    return fooBar(1');
  const run = await codePromptRun(FILES, tokens, 1, tokenBytes, new TagsCache());
  assert.equal(run.start, 1);
  assert.equal(run.tokens.length, 75);
  assert.equal(run.text, TEXT.slice(0, TEXT.indexOf('fooBar(1') + 'fooBar(1'.length));

  const prior = await codePromptPrior({ tokens, sources: FILES }, { window: 6, special: 1, tokenBytes, tags: new TagsCache() });
  assert.deepEqual(prior.identifiers, ['fooBar']);
  const want = new Array(76).fill(0);
  // definition lines from the first non-blank character to the line's end (its "\n" not included), position = token + 1
  for (let t = 9; t <= 16; t++) want[t + 1] |= D; // line 2 "const x = 1;"
  for (let t = 27; t <= 34; t++) want[t + 1] |= D; // line 4 "function fooBar(a) {"
  for (let t = 54; t <= 60; t++) want[t + 1] |= D; // line 9 "export class Box {"
  for (let t = 63; t <= 67; t++) want[t + 1] |= D; // line 10 "size() {" (its indent, token 62, not)
  want[29 + 1] |= I; // "fooBar" on line 4
  want[72 + 1] |= I; // "fooBar" on line 11, inside the window
  assert.deepEqual(Array.from(prior.flags), want);
  assert.equal(prior.definitionTokens, 8 + 8 + 7 + 5);
  assert.equal(prior.identifierTokens, 2);
  assert.equal(prior.unmappedRuns, 0);
  assert.equal(prior.definitionLines, 4);
});

test('a cut inside a UTF-8 character leaves the token that splits it out of the run', async () => {
  const files: SourceFile[] = [{ name: 'p/c.js', text: "const s = 'é';\n" }];
  const text = fileBlock(files[0]!); // "// p/c.js\nconst s = 'é';\n\n"
  const e = Buffer.from('é', 'utf8'); // c3 a9
  assert.equal(e.length, 2);
  // pieces: "// p/c.js\n", "const s = '", then é's first byte alone
  const pieces: Uint8Array[] = [Buffer.from('// p/c.js\n'), Buffer.from("const s = '"), e.subarray(0, 1)];
  const run = await codePromptRun(files, [0, 1, 2], 0, bytesOf(pieces), new TagsCache());
  assert.deepEqual(run.tokens, [0, 1]);
  assert.equal(run.text, "// p/c.js\nconst s = '");
  assert.ok(text.startsWith(run.text));
  // definition line 2 is flagged on the run's one token inside it (token 1); token 2 is out of the run
  const prior = await codePromptPrior({ tokens: [0, 1, 2], sources: files }, { window: 1, special: 0, tokenBytes: bytesOf(pieces), tags: new TagsCache() });
  assert.deepEqual(Array.from(prior.flags), [0, D, 0]);
  assert.deepEqual(prior.identifiers, []);
});
