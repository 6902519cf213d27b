/**
 * Include and exclude patterns that can never match are refused with one typed, one-line
 * error, instead of silently packing nothing (`--include '['`) or too much.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import ignore from 'ignore';
import { PatternError } from '../../src/context/errors';
import { excludesFromVsCodeSetting, patternProblem } from '../../src/context/globs';
import { walkRepository } from '../../src/context/walk';
import { makeRepo, manifest, pack } from './fixtures';

/** Paths to try patterns on: every character the refused patterns contain, at depth 1 and 2. */
const SAMPLES = ['[', ']', 'a', 'b', 'a[', '[ab', 'ab', 'foo', 'foo\\', 'x:', ':', '-', 'src/[ab', 'src/a', 'src/b', 'dir/foo', '[[:foo:]]', 'f', 'z'];

/** Whether the `ignore` package (the packer's matcher) matches any sample with `pattern`. */
function matchesSomething(pattern: string): boolean {
  const matcher = ignore().add(pattern);
  return SAMPLES.some((p) => matcher.ignores(p));
}

test('patternProblem refuses exactly the patterns that can never match', () => {
  const refused: Record<string, string> = {
    '[': "'[' at column 1 opens a bracket expression that is never closed by ']' (write '\\[' for a literal '[')",
    'src/[ab': "'[' at column 5 opens a bracket expression that is never closed by ']' (write '\\[' for a literal '[')",
    '!a[': "'[' at column 3 opens a bracket expression that is never closed by ']' (write '\\[' for a literal '[')",
    '[]': "'[' at column 1 opens a bracket expression that is never closed by ']' (write '\\[' for a literal '[')",
    '[!]': "'[' at column 1 opens a bracket expression that is never closed by ']' (write '\\[' for a literal '[')",
    '[[:alpha:]': "'[' at column 1 opens a bracket expression that is never closed by ']' (write '\\[' for a literal '[')",
    '[[:foo:]]': "unknown character class '[:foo:]' at column 2 (known: alnum, alpha, blank, cntrl, digit, graph, lower, print, punct, space, upper, xdigit)",
    'foo\\': "the backslash at column 4 escapes nothing (write '\\\\' for a literal backslash)",
    'foo\\/': "the backslash at column 4 escapes nothing (write '\\\\' for a literal backslash)",
    'a\nb': 'a pattern cannot contain a line break',
  };
  for (const [pattern, problem] of Object.entries(refused)) {
    assert.equal(patternProblem(pattern), problem, pattern);
    if (!pattern.includes('\n')) assert.equal(matchesSomething(pattern.replace(/^!/, '')), false, `${pattern} matches nothing in ignore either`);
  }
  // look-alikes that are valid: a class holding ']', escaped brackets, a POSIX class, a literal backslash, a reversed range
  for (const pattern of ['[]]', '[]a]', '\\[ab', '[\\]]', '[[:alpha:]]', 'foo\\\\', '[z-a]', '[a-]', '*.ts', '!src/', '# comment', '']) {
    assert.equal(patternProblem(pattern), undefined, pattern);
  }
  for (const pattern of ['[]]', '[]a]', '\\[ab', '[[:alpha:]]', 'foo\\\\', '[z-a]', '[a-]']) {
    assert.equal(matchesSomething(pattern), true, `${pattern} matches something`);
  }
});

test('packRepository and walkRepository reject an invalid include or exclude with a one-line PatternError', async (t) => {
  const root = await makeRepo(t, { 'a.ts': 'export {};\n', '[ab': 'x\n' });
  await assert.rejects(pack(root, { include: ['*.ts', '['] }), (err: unknown) => {
    assert.ok(err instanceof PatternError);
    assert.equal(err.name, 'PatternError');
    assert.equal(err.option, 'include');
    assert.equal(err.pattern, '[');
    assert.equal(err.message, `invalid include pattern "[": '[' at column 1 opens a bracket expression that is never closed by ']' (write '\\[' for a literal '[')`);
    assert.ok(!err.message.includes('\n'));
    return true;
  });
  await assert.rejects(walkRepository(root, { exclude: ['ok/', 'bad\\'] }), (err: unknown) => {
    assert.ok(err instanceof PatternError);
    assert.equal(err.message, `invalid exclude pattern "bad\\\\": the backslash at column 4 escapes nothing (write '\\\\' for a literal backslash)`);
    return true;
  });
  // a line break in a pattern is shown escaped: the message stays one line
  await assert.rejects(pack(root, { exclude: ['a\nb'] }), { name: 'PatternError', message: 'invalid exclude pattern "a\\nb": a pattern cannot contain a line break' });
  // the escaped form packs the file the user meant
  assert.deepEqual(manifest(await pack(root, { include: ['\\[ab'] })).files, ['[ab']);
});

test("VS Code's files.exclude globs whose translation can never match are dropped", () => {
  assert.deepEqual(excludesFromVsCodeSetting({ '**/[': true, 'x[[:foo:]]': true, '**/*.log': true }), ['**/*.log']);
});
