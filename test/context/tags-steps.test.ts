/**
 * A long file parsed on this thread (createInThreadTagsParser: the fallback, and what the worker
 * thread runs) is parsed in steps that let the event loop run (issue 29, item 7): a signal
 * (Ctrl+C, SIGTERM, Stop) is delivered between them, so a cancelled pack does not wait seconds for
 * tree-sitter. The stepped parse's tags are the whole file's, checked by hand on 40K one-line
 * definitions, and two parses of one grammar started together (their steps interleaving on the
 * event loop) each get their own file's tags.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createInThreadTagsParser, PARSE_SLICE_MS } from '../../src/context/map/tags';

const parser = createInThreadTagsParser();

/** `n` exported one-line functions `f<i>` returning `i`, one per line. */
const oneLiners = (n: number, name = 'f'): string => Array.from({ length: n }, (_, i) => `export function ${name}${i}() { return ${i}; }`).join('\n');

test('40K definitions: the parse gives the event loop many turns, and its tags are every definition on its own line', async () => {
  await parser.parse('const warm = 1;', 'typescript'); // load the runtime and grammar first
  let turns = 0;
  let running = true;
  const tick = (): void => {
    turns++;
    if (running) setImmediate(tick);
  };
  setImmediate(tick);
  const started = performance.now();
  const tags = await parser.parse(oneLiners(40_000), 'typescript');
  const ms = performance.now() - started;
  running = false;
  assert.equal(tags.definitions.length, 40_000);
  tags.definitions.forEach((d, i) => {
    assert.equal(d.name, `f${i}`);
    assert.equal(d.line, i + 1);
    assert.equal(d.endLine, i + 1);
    assert.equal(d.kind, 'function');
  });
  // before: one synchronous call, no turn at all until it returned
  assert.ok(turns >= 5, `${turns} turns of the event loop in ${ms.toFixed(0)} ms (steps of ${PARSE_SLICE_MS} ms)`);
});

test('two long parses started together interleave their steps and each gets its own tags', async () => {
  // different shapes, so that a parse resumed on the other's text (no lock) shows
  const consts = Array.from({ length: 7_000 }, (_, i) => `export const c${i} = ${i} * 2 + 1;`).join('\n');
  const [a, b] = await Promise.all([parser.parse(oneLiners(6_000, 'a'), 'typescript'), parser.parse(consts, 'typescript')]);
  assert.equal(a.definitions.length, 6_000);
  assert.equal(b.definitions.length, 7_000);
  assert.ok(a.definitions.every((d, i) => d.name === `a${i}` && d.line === i + 1 && d.kind === 'function'));
  assert.ok(b.definitions.every((d, i) => d.name === `c${i}` && d.line === i + 1 && d.kind === 'const'));
});
