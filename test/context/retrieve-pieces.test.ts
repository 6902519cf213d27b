/**
 * Retrieval of definitions larger than the retrieval room, and of a type's fields declared after
 * its methods: a chunk whose block does not fit the room alone is quoted as consecutive pieces
 * fitted to it (the first with the signature), ranked among themselves by BM25F; fields after a
 * method go on in a header piece of their type (axios's 372-token `shouldBypassProxy` and pino's
 * 807-token `redaction` were never quoted in the 307-token room of a 2,048-token context).
 * Hand-written TypeScript, parsed with the product's tree-sitter tags; tokens are the bench's
 * approximate ones (UTF-8 bytes / 4, rounded up), so that sizes can be checked by hand.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createTagsParser } from '../../src/context/map/tags';
import { rankChunks } from '../../src/context/retrieve/bm25';
import { chunksOf, type Chunk } from '../../src/context/retrieve/chunks';
import { piecesToFit } from '../../src/context/retrieve/pieces';
import { retrieveChunks } from '../../src/context/retrieve/retrieve';
import { RETRIEVAL_TITLE } from '../../src/context/retrieve/section';
import { FileSecretVerdicts } from '../../src/context/secrets';

const parser = createTagsParser();
const countTokens = (text: string): number => Math.ceil(Buffer.byteLength(text) / 4);
const secrets = new FileSecretVerdicts(false);
const pad = (i: number): string => String(i).padStart(3, '0');

async function chunksOfTs(path: string, text: string): Promise<Chunk[]> {
  return chunksOf(path, text, await parser.parse(text, 'typescript'));
}

// a function of 34 lines, 1,608 bytes: 402 tokens; each step line is 49 characters
const STEPS = Array.from({ length: 30 }, (_, i) => `  total += values[${pad(i)}] * weights[${pad(i)}] // step ${pad(i)}`);
const WEIGHTED_SUM = ['export function weightedSum(values: number[], weights: number[]): number {', '  let total = 0', ...STEPS, '  return total', '}', ''].join('\n');
const REPORT = [
  'export function report(values: number[]): string {',
  '  return `sum ${weightedSum(values, values)}`',
  '}',
  '',
  'export function mean(values: number[]): number {',
  '  return values.reduce((a, b) => a + b, 0) / values.length',
  '}',
  '',
].join('\n');

async function sumChunks(): Promise<Chunk[]> {
  return [...(await chunksOfTs('src/steps.ts', WEIGHTED_SUM)), ...(await chunksOfTs('src/report.ts', REPORT))];
}

test('a function larger than the room is quoted by its first piece, with its signature and where it belongs', async () => {
  const chunks = await sumChunks();
  assert.deepEqual(
    chunks.map((c) => [c.name, c.startLine, c.endLine, countTokens(c.text)]),
    [
      ['weightedSum', 1, 34, 402],
      ['report', 1, 3, 25],
      ['mean', 5, 7, 28],
    ],
  );
  const retrieved = await retrieveChunks(chunks, 'What is the name of the first parameter of the function `weightedSum`?', { budget: 300, countTokens, secrets });
  // the title (55 bytes + LF), the block's header 'src/steps.ts:1-21 (beginning of weightedSum, lines 1-34)' (56 + LF), two
  // fences (4 bytes each) and lines 1-21 with their LFs (75 + 16 + 19 × 50 = 1,041): 1,161 bytes, 291 tokens; line 22 would
  // add 50 bytes: 1,211, 303 tokens > 300. report (it uses weightedSum, 25 tokens) does not fit in the 9 left.
  assert.deepEqual(retrieved.chunks.map((c) => [c.name, c.startLine, c.endLine]), [['weightedSum', 1, 21]]);
  assert.equal(retrieved.tokens, 291);
  assert.equal(
    retrieved.text,
    `${RETRIEVAL_TITLE}\nsrc/steps.ts:1-21 (beginning of weightedSum, lines 1-34)\n\`\`\`\n${WEIGHTED_SUM.split('\n').slice(0, 21).join('\n')}\n\`\`\`\n`,
  );
  assert.deepEqual(retrieved.chunks[0]!.partOf, { startLine: 1, endLine: 34 });
  assert.deepEqual(retrieved.spans, [{ path: 'src/steps.ts', tokens: countTokens(retrieved.text.slice(RETRIEVAL_TITLE.length + 1)), offset: 14 }]);
});

test('a later piece comes first when BM25 ranks it higher for the question; the pieces never exceed the room', async () => {
  const chunks = await sumChunks();
  // `step 027` and `return` are only in the second piece (lines 22-34)
  for (const question of ['In `weightedSum`, what is the weight of step 027?', 'What does `weightedSum` return?']) {
    const retrieved = await retrieveChunks(chunks, question, { budget: 300, countTokens, secrets });
    assert.deepEqual(retrieved.chunks.map((c) => [c.name, c.startLine, c.endLine]).slice(0, 1), [['weightedSum', 22, 34]], question);
    assert.ok(retrieved.text.startsWith(`${RETRIEVAL_TITLE}\nsrc/steps.ts:22-34 (… continued: weightedSum, lines 1-34)\n\`\`\`\n${STEPS[19]}\n`), question);
    assert.ok(retrieved.tokens <= 300 && retrieved.tokens === countTokens(retrieved.text));
  }
  // step 017 is in the first piece
  const first = await retrieveChunks(chunks, 'In `weightedSum`, what is the weight of step 017?', { budget: 300, countTokens, secrets });
  assert.deepEqual(first.chunks.map((c) => [c.startLine, c.endLine]), [[1, 21]]);
  // a room that holds the whole function quotes it whole, as before
  const whole = await retrieveChunks(chunks, 'What does `weightedSum` return?', { budget: 500, countTokens, secrets });
  assert.deepEqual(whole.chunks.map((c) => [c.name, c.startLine, c.endLine, c.partOf]).slice(0, 1), [['weightedSum', 1, 34, undefined]]);
});

test('pieces are consecutive, each fits the room alone, and a piece ends before a blank line in its second half', async () => {
  // 5 statements of 4 lines, a blank line after each: 25 lines; a words tokenizer
  const body = Array.from({ length: 5 }, (_, s) => [`  const a${s} = 1`, `  const b${s} = 2`, `  const c${s} = 3`, `  const d${s} = 4`, '']).flat();
  const text = ['function blocks() {', ...body, '}'].join('\n');
  const [chunk] = await chunksOfTs('b.ts', text);
  assert.deepEqual([chunk!.startLine, chunk!.endLine], [1, 27]);
  const words = (t: string): number => t.split(/\s+/).filter((w) => w !== '').length;
  // a piece's block alone: its header line (2 words), two fences (1 each), the signature 3 words, a statement line 4: at most 50
  const fits = async (piece: Chunk): Promise<boolean> => words(`${piece.startLine}-${piece.endLine} part\n\`\`\`\n${piece.text}\n\`\`\`\n`) <= 50;
  const pieces = await piecesToFit(chunk!, fits);
  // from line 1: 4 + 3 + 10 statement lines (40) = 47 words, lines 1-13 (line 14 would make 51); the last blank line in
  // its second half (lines 8-14) is 11: the piece ends at 10, the next starts at 12. From 12: 4 + 11 × 4 = 48, lines
  // 12-24; the last blank line in 19-25 is 21: it ends at 20. From 22: lines 22-25, blank 26, '}' 27: 21 words.
  assert.deepEqual(pieces.map((p) => [p.startLine, p.endLine]), [
    [1, 10],
    [12, 20],
    [22, 27],
  ]);
  for (const p of pieces) {
    assert.ok(await fits(p));
    assert.deepEqual(p.partOf, { startLine: 1, endLine: 27 });
    assert.equal(p.text, text.split('\n').slice(p.startLine - 1, p.endLine).join('\n'));
  }
  // only blank lines lie between pieces
  const lines = text.split('\n');
  for (let i = 1; i < pieces.length; i++) for (let l = pieces[i - 1]!.endLine + 1; l < pieces[i]!.startLine; l++) assert.equal(lines[l - 1]!.trim(), '');
});

test('a field declared after a method is in a header piece of its type, which a question naming the field retrieves', async () => {
  const text = [
    'export class Pool {',
    '  size = 4',
    '',
    '  acquire(): Conn {',
    '    return this.idle.pop()',
    '  }',
    '',
    '  /** Connections not in use. */',
    '  private idle: Conn[] = []',
    '  readonly maxWaiting = 16',
    '',
    '  // releases a connection',
    '  release(c: Conn) {',
    '    this.idle.push(c)',
    '  }',
    '}',
    '',
  ].join('\n');
  const chunks = await chunksOfTs('src/pool.ts', text);
  // the closing '}' (line 16) is in no chunk: a run of closing lines is none
  assert.deepEqual(
    chunks.map((c) => [c.name, c.owner, c.startLine, c.endLine, c.partOf]),
    [
      ['Pool', undefined, 1, 2, undefined],
      ['acquire', 'Pool', 4, 6, undefined],
      ['Pool', undefined, 8, 10, { startLine: 1, endLine: 16 }],
      ['release', 'Pool', 12, 15, undefined],
    ],
  );
  assert.equal(chunks[2]!.text, '  /** Connections not in use. */\n  private idle: Conn[] = []\n  readonly maxWaiting = 16');
  const question = 'What is the default of `maxWaiting`?';
  assert.deepEqual(rankChunks(chunks, question).map((r) => [r.chunk.name, r.chunk.startLine]), [['Pool', 8]]);
  const retrieved = await retrieveChunks(chunks, question, { budget: 100, countTokens, secrets });
  assert.equal(retrieved.text, `${RETRIEVAL_TITLE}\nsrc/pool.ts:8-10 (… continued: Pool, lines 1-16)\n\`\`\`\n${chunks[2]!.text}\n\`\`\`\n`);
  // a question naming the class quotes its header pieces first (in source order: both define the name), then its methods
  const ranked = rankChunks(chunks, 'Which file defines the class `Pool`?');
  assert.deepEqual(ranked.slice(0, 2).map((r) => [r.chunk.name, r.chunk.startLine]), [
    ['Pool', 1],
    ['Pool', 8],
  ]);
});

test('an interface larger than the room is split: a question naming it quotes its declaration, one naming a late field the piece holding it', async () => {
  const text = ['/** Options of the big thing. */', 'export interface BigOptions {', ...Array.from({ length: 60 }, (_, i) => `  option${pad(i)}?: number`), '}', ''].join('\n');
  const chunks = await chunksOfTs('src/options.ts', text);
  // one chunk (no methods) from its doc comment, 1,324 bytes of text (32 + 29 + 60 × 20 + '}' and 62 LFs): 331 tokens, more
  // than a 150-token room
  assert.deepEqual(chunks.map((c) => [c.name, c.startLine, c.nameLine, c.endLine, countTokens(c.text)]), [['BigOptions', 1, 2, 63, 331]]);
  const named = await retrieveChunks(chunks, 'Which file defines the interface `BigOptions`?', { budget: 150, countTokens, secrets });
  // title 56 bytes, header 'src/options.ts:1-21 (beginning of BigOptions, lines 1-63)' 57 + LF, fences 8, lines 1-21: 33 + 30
  // + 19 × 21 = 462 → 583 bytes, 146 tokens; line 22 would add 21: 604 bytes, 151 tokens > 150
  assert.deepEqual(named.chunks.map((c) => [c.startLine, c.endLine]), [[1, 21]]);
  assert.equal(named.tokens, 146);
  assert.ok(named.text.includes('src/options.ts:1-21 (beginning of BigOptions, lines 1-63)\n```\n/** Options of the big thing. */\nexport interface BigOptions {\n  option000?: number\n'));
  // the pieces: 1-21, 22-43 (header 60 bytes with its 3-byte '…', 22 × 21 lines: 586 bytes, 147 tokens; 22-44: 152),
  // 44-63 (20 fields and '}': 525 bytes, 132 tokens); option050 is on line 53, in the third
  const late = await retrieveChunks(chunks, 'What type has `option050` in `BigOptions`?', { budget: 150, countTokens, secrets });
  assert.deepEqual(late.chunks.map((c) => [c.startLine, c.endLine]), [[44, 63]]);
  assert.equal(late.tokens, 132);
  assert.ok(late.text.startsWith(`${RETRIEVAL_TITLE}\nsrc/options.ts:44-63 (… continued: BigOptions, lines 1-63)\n\`\`\`\n  option041?: number\n`));
  assert.ok(late.text.includes('  option050?: number\n'));
  assert.ok(late.tokens <= 150);
});

test('a single line too long for the room is left out whole, and the next candidate is quoted', async () => {
  // one line of 1,652 bytes (413 tokens: 50 + 800 digits, 799 commas, 3): no piece of it fits a 200-token room
  const minified = `export function packedTable(): number[] { return [${Array.from({ length: 800 }, (_, i) => i % 10).join(',')}] }\n`;
  const chunks = [...(await chunksOfTs('dist/table.ts', minified)), ...(await chunksOfTs('src/steps.ts', WEIGHTED_SUM)), ...(await chunksOfTs('src/use.ts', 'export function useTable(): number {\n  return packedTable().length\n}\n'))];
  assert.deepEqual(chunks.map((c) => [c.name, c.startLine, c.endLine]), [
    ['packedTable', 1, 1],
    ['weightedSum', 1, 34],
    ['useTable', 1, 3],
  ]);
  assert.equal(countTokens(chunks[0]!.text), 413);
  const retrieved = await retrieveChunks(chunks, 'What does `packedTable` return?', { budget: 200, countTokens, secrets });
  assert.deepEqual(retrieved.chunks.map((c) => [c.name, c.startLine, c.endLine, c.partOf]), [['useTable', 1, 3, undefined]]);
  assert.equal(retrieved.text, `${RETRIEVAL_TITLE}\nsrc/use.ts:1-3\n\`\`\`\n${chunks[2]!.text}\n\`\`\`\n`);
});
