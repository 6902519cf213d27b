/**
 * A definition's retrieval chunk holds its leading doc comment, so that a question describing a
 * function in its comment's words (bench/repoqa/large's 'doc' questions: pino's compareLevel,
 * fastify's removeTrackedSocket) matches it, not only through its body. Hand-written TypeScript,
 * Go and Java, parsed with the product's tree-sitter tags; tokens are the bench's approximate ones
 * (UTF-8 bytes / 4, rounded up), so that sizes can be checked by hand.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { GrammarId } from '../../src/context/map/languages';
import { createTagsParser } from '../../src/context/map/tags';
import { rankChunks } from '../../src/context/retrieve/bm25';
import { chunksOf, DOC_MAX_CHARS, leadingComment, type Chunk } from '../../src/context/retrieve/chunks';
import { retrieveChunks } from '../../src/context/retrieve/retrieve';
import { piecesToFit } from '../../src/context/retrieve/pieces';
import { formatRetrievedChunk, RETRIEVAL_TITLE } from '../../src/context/retrieve/section';
import { codeTerms } from '../../src/context/retrieve/tokenize';
import { FileSecretVerdicts } from '../../src/context/secrets';

const parser = createTagsParser();
const countTokens = (text: string): number => Math.ceil(Buffer.byteLength(text) / 4);
const secrets = new FileSecretVerdicts(false);

async function chunksOfSource(path: string, text: string, grammar: GrammarId): Promise<Chunk[]> {
  return chunksOf(path, text, await parser.parse(text, grammar));
}

/** `[name, startLine, nameLine, endLine]` of each chunk. */
const outline = (chunks: readonly Chunk[]): Array<[string, number, number | undefined, number]> => chunks.map((c) => [c.name, c.startLine, c.nameLine, c.endLine]);

// pino's lib/levels.js compareLevel, in TypeScript; 'ascending', 'descending', 'order' and 'severity' are
// words of its comment only (not of its name, path or body)
const LEVELS_TS = [
  "import { DEFAULT_LEVELS } from './constants'",
  '',
  '/**',
  ' * Tells whether a level is at least as severe as the current one, in ascending or',
  ' * descending order.',
  ' * @param {number} current the level set on the logger',
  ' */',
  'export function compareLevel(direction: string, current: number, expected: number): boolean {',
  "  return direction === 'DESC' ? expected <= current : expected >= current",
  '}',
  '',
  '// Not attached: a blank line separates it from the function below.',
  '',
  'export function isStandardLevel(level: string): boolean {',
  '  return level in DEFAULT_LEVELS',
  '}',
  '',
  'export function levelNames(useOnlyCustomLevels: boolean): string[] {',
  '  return useOnlyCustomLevels ? [] : Object.keys(DEFAULT_LEVELS)',
  '}',
  '',
].join('\n');
const LOGGER_TS = [
  'export function setLevel(logger: Logger, level: number): void {',
  '  if (compareLevel(logger.direction, logger.level, level)) logger.level = level',
  '}',
  '',
].join('\n');

test('TypeScript: a JSDoc-commented function chunk starts at its comment; a comment separated by a blank line is not attached', async () => {
  const chunks = await chunksOfSource('lib/levels.ts', LEVELS_TS, 'typescript');
  assert.deepEqual(outline(chunks), [
    ['compareLevel', 3, 8, 10],
    ['isStandardLevel', 14, undefined, 16],
    ['levelNames', 18, undefined, 20],
  ]);
  assert.equal(chunks[0]!.text, LEVELS_TS.split('\n').slice(2, 10).join('\n'));
  assert.ok(!chunks.some((c) => c.text.includes('Not attached')));
});

test('a question using only words of the doc comment retrieves the function, with the comment in the quoted lines', async () => {
  const chunks = [...(await chunksOfSource('lib/logger.ts', LOGGER_TS, 'typescript')), ...(await chunksOfSource('lib/levels.ts', LEVELS_TS, 'typescript'))];
  const question = 'Which function tells whether a threshold is as severe as the active one, in ascending or descending order?';
  // its words ('tells', 'whether', 'severe', 'ascending', 'descending', 'order') are in compareLevel's comment only
  const ranked = rankChunks(chunks, question);
  assert.equal(ranked[0]!.chunk.name, 'compareLevel');
  const retrieved = await retrieveChunks(chunks, question, { budget: 2000, countTokens, secrets });
  assert.equal(retrieved.chunks[0]!.name, 'compareLevel');
  assert.ok(retrieved.text.startsWith(`${RETRIEVAL_TITLE}\nlib/levels.ts:3-10\n\`\`\`\n/**\n * Tells whether a level is at least as severe`));
  // without its comment the function shares only the keyword 'function' with the question, as every other chunk does
  const body = LEVELS_TS.split('\n').slice(7, 10).join('\n');
  const wanted = new Set(codeTerms(question));
  assert.deepEqual([...new Set(codeTerms(body).filter((t) => wanted.has(t)))], ['function']);
});

test('Go: a // comment run above a method is in its chunk; one above a blank line is not', async () => {
  const text = [
    'package queue',
    '',
    '// Queue holds jobs.',
    'type Queue struct{ jobs []Job }',
    '',
    '// Push appends a job at the tail, waking one idle',
    '// worker that sleeps on the condition.',
    'func (q *Queue) Push(j Job) {',
    '\tq.jobs = append(q.jobs, j)',
    '}',
    '',
    '// Detached: a blank line follows.',
    '',
    'func (q *Queue) Len() int { return len(q.jobs) }',
    '',
  ].join('\n');
  const chunks = await chunksOfSource('queue/queue.go', text, 'go');
  assert.deepEqual(outline(chunks), [
    ['Queue', 3, 4, 4],
    ['Push', 6, 8, 10],
    ['Len', 14, undefined, 14],
  ]);
  assert.equal(chunks[1]!.owner, 'Queue');
  const ranked = rankChunks(chunks, 'Which method wakes an idle worker sleeping on the condition?');
  assert.equal(ranked[0]!.chunk.name, 'Push');
});

test('Java: a Javadoc block above an annotation is in the method chunk, the annotation between; an annotation alone is not', async () => {
  const text = [
    'package net.cache;',
    '',
    'public class Lru {',
    '  private final int capacity;',
    '',
    '  /**',
    '   * Drops the least recently touched entry once capacity is exceeded.',
    '   */',
    '  @Override',
    '  protected boolean removeEldestEntry(Map.Entry<K, V> eldest) {',
    '    return size() > capacity;',
    '  }',
    '',
    '  @Override',
    '  public int size() {',
    '    return map.size();',
    '  }',
    '}',
    '',
  ].join('\n');
  const chunks = await chunksOfSource('src/net/cache/Lru.java', text, 'java');
  assert.deepEqual(outline(chunks), [
    ['Lru', 3, undefined, 4],
    ['removeEldestEntry', 6, 10, 12],
    ['size', 15, undefined, 17],
  ]);
  assert.equal(chunks[1]!.text.split('\n')[3], '  @Override');
  const ranked = rankChunks(chunks, 'Which method drops the least recently touched entry?');
  assert.equal(ranked[0]!.chunk.name, 'removeEldestEntry');
});

test('a comment longer than DOC_MAX_CHARS is not attached; leadingComment ignores code lines ending a comment', () => {
  const long = ['/**', ...Array.from({ length: 40 }, (_, i) => ` * licence line ${String(i).padStart(2, '0')} of a banner that is not documentation at all.`), ' */', 'function f() {}'];
  // 40 lines of 64 characters and their line ends alone are 2,600 > DOC_MAX_CHARS (2,400)
  assert.ok(40 * 65 > DOC_MAX_CHARS);
  assert.equal(leadingComment('typescript', long, long.length), long.length);
  assert.equal(leadingComment('typescript', ['/** Short. */', 'function f() {}'], 2), 1);
  // a block opened after code on its line is no doc comment
  assert.equal(leadingComment('typescript', ['x = 1; /* set', ' */', 'function f() {}'], 3), 3);
  // C++'s '#' is the preprocessor, Python's a comment
  assert.equal(leadingComment('cpp', ['#include <x>', 'int f() {}'], 2), 2);
  assert.equal(leadingComment('python', ['# Adds one.', '@cache', 'def f(x):'], 3), 1);
});

test('a long doc comment above a function too long for the room: the first piece still quotes the signature', async () => {
  // 30 comment lines of 41 characters (1,268 bytes with '/**', ' */' and the LFs: 317 tokens) above a 34-line function
  const comment = ['/**', ...Array.from({ length: 30 }, (_, i) => ` * Explains the weighting, paragraph ${String(i).padStart(3, '0')}.`), ' */'];
  const steps = Array.from({ length: 30 }, (_, i) => `  total += values[${i}] * weights[${i}]`);
  const text = [...comment, 'export function weightedSum(values: number[], weights: number[]): number {', '  let total = 0', ...steps, '  return total', '}', ''].join('\n');
  const chunks = await chunksOfSource('src/steps.ts', text, 'typescript');
  assert.deepEqual(outline(chunks), [['weightedSum', 1, 33, 66]]);
  const retrieved = await retrieveChunks(chunks, 'What is the name of the first parameter of the function `weightedSum`?', { budget: 300, countTokens, secrets });
  const first = retrieved.chunks[0]!;
  // the comment alone exceeds the 300-token room: the piece starts inside it, holds the signature
  // (line 33) and is labelled as the definition's beginning
  assert.ok(first.startLine > 1 && first.startLine < 33 && first.endLine >= 33, `${first.startLine}-${first.endLine}`);
  assert.equal(first.nameLine, 33);
  assert.ok(retrieved.text.includes('export function weightedSum(values: number[], weights: number[]): number {'));
  assert.ok(retrieved.text.includes(`src/steps.ts:${first.startLine}-${first.endLine} (beginning of weightedSum, lines 1-66)`));
  assert.ok(retrieved.tokens <= 300);
  // the piece is as long as the room allows: one more comment line above it would not fit
  const withLineAbove = `${RETRIEVAL_TITLE}\nsrc/steps.ts:${first.startLine - 1}-${first.endLine} (beginning of weightedSum, lines 1-66)\n\`\`\`\n${text.split('\n').slice(first.startLine - 2, first.endLine).join('\n')}\n\`\`\`\n`;
  assert.ok(countTokens(withLineAbove) > 300);
  // and it is the first of the pieces (the comment's first lines are quoted nowhere), not a later one that BM25 led with
  const fits = async (piece: Chunk): Promise<boolean> => countTokens(`${RETRIEVAL_TITLE}\n${formatRetrievedChunk({ chunk: piece, score: 0 })}`) <= 300;
  const pieces = await piecesToFit(chunks[0]!, fits);
  assert.deepEqual([pieces[0]!.startLine, pieces[0]!.endLine], [first.startLine, first.endLine]);
  assert.equal(pieces.at(-1)!.endLine, 66);
});

test("a method's doc comment is its own, not its type header's, even with lines a header would keep (no leading '*')", async () => {
  const text = [
    'export class Pool {',
    '  size = 4',
    '  /*',
    '    Hands out an idle connection,',
    '    opening one when none is idle.',
    '  */',
    '  acquire(): Conn {',
    '    return this.idle.pop() ?? this.open()',
    '  }',
    '  limit = 8',
    '  /*',
    '    Gives a connection back.',
    '  */',
    '  release(c: Conn) {',
    '    this.idle.push(c)',
    '  }',
    '}',
    '',
  ].join('\n');
  const chunks = await chunksOfSource('src/pool.ts', text, 'typescript');
  assert.deepEqual(outline(chunks), [
    ['Pool', 1, undefined, 2],
    ['acquire', 3, 7, 9],
    ['Pool', 10, undefined, 10],
    ['release', 11, 14, 16],
  ]);
});
