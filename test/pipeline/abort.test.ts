/**
 * One AbortError (issue 16): a cancelled question rejects with engine/errors.ts's AbortError
 * whether the packer or the engine saw the abort, so that front ends test one class.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { abortError } from '../../src/context/errors';
import { packRepository } from '../../src/context/pack';
import { AbortError } from '../../src/engine/errors';

test("the packer's abort is the engine's AbortError, with the signal's reason as its cause", async () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-abort-'));
  try {
    fs.writeFileSync(path.join(root, 'a.ts'), 'export const a = 1;\n');
    const plain = new AbortController();
    plain.abort();
    await assert.rejects(packRepository(root, { signal: plain.signal, tokenBudget: 1000, countTokens: (t) => t.length }), (e: Error) => e instanceof AbortError && e.cause === plain.signal.reason);
    const reason = new Error('user cancelled');
    const withReason = new AbortController();
    withReason.abort(reason);
    await assert.rejects(packRepository(root, { signal: withReason.signal, tokenBudget: 1000, countTokens: (t) => t.length }), (e: Error) => e instanceof AbortError && e.cause === reason);
    const own = new AbortError();
    assert.equal(abortError(own), own, 'an AbortError reason is passed through');
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});
