/**
 * An unexpected error (a bug, `internal`) as the CLI prints it: one line with its message and one
 * that says to report it, never a stack trace unless REPOSNAP_DEBUG asks for it; `--json` keeps
 * one object per line. Errors the user can act on are printed as before.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { debugStacks, formatError } from '../../src/cli/errors';
import { ContextSizeError } from '../../src/pipeline/ask';

// the error the context report raised after an answer on a continued thread: a RangeError, no user-facing class
const bug = new RangeError("the packed sections end at token 3117, past the prompt's 3112 tokens");

test('an internal error prints its message and where to report it, no stack trace', () => {
  const text = formatError(bug, false);
  assert.equal(
    text,
    "reposnap: error: internal error: the packed sections end at token 3117, past the prompt's 3112 tokens\n" +
      'this is a bug in RepoSnap: please report it with the command that failed and what it prints with REPOSNAP_DEBUG=1 (the stack trace)\n',
  );
  assert.doesNotMatch(text, /\n\s+at /);
  assert.equal(formatError(bug, true), `{"error":{"code":"internal","message":"the packed sections end at token 3117, past the prompt's 3112 tokens"}}\n`);
  // a thrown non-Error is one too
  assert.equal(formatError('boom', false).split('\n')[0], 'reposnap: error: internal error: boom');
});

test('with REPOSNAP_DEBUG the stack follows the message, and --json carries it', () => {
  const text = formatError(bug, false, true);
  assert.ok(text.startsWith(`reposnap: error: internal error: ${bug.message}\nRangeError: ${bug.message}\n    at `), text);
  assert.equal(text, `reposnap: error: internal error: ${bug.message}\n${bug.stack}\n`);
  const json = JSON.parse(formatError(bug, true, true)) as { error: { code: string; message: string; stack: string } };
  assert.deepEqual(json, { error: { code: 'internal', message: bug.message, stack: bug.stack } });
  assert.deepEqual([debugStacks({}), debugStacks({ REPOSNAP_DEBUG: '' }), debugStacks({ REPOSNAP_DEBUG: '0' }), debugStacks({ REPOSNAP_DEBUG: '1' })], [false, false, false, true]);
});

test('a user-facing error is one line as before, never with a stack, debug or not', () => {
  const e = new ContextSizeError('--context-size 4096 is above the model\'s training context');
  for (const debug of [false, true]) {
    assert.equal(formatError(e, false, debug), "reposnap: error: --context-size 4096 is above the model's training context\n");
    assert.equal(formatError(e, true, debug), `{"error":{"code":"context_size","message":"--context-size 4096 is above the model's training context"}}\n`);
  }
});
