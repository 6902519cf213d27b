/**
 * Secrets in file and folder names: the entry is left out as `'secret'`, a folder is not
 * entered, and the name is never shown raw: not in the prompt, the file tree, the manifest
 * or `reposnap pack --list`; the reported path has the secret redacted.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runPack, type PackIo } from '../../src/cli/pack';
import { findNameSecrets, redactSecrets, REDACTED } from '../../src/context/path-secrets';
import { randomChars } from './fake-secrets';
import { detailOf, makeRepo, manifest, pack } from './fixtures';

// built at run time from pieces (fake-secrets.ts), so no string in this repository looks like a credential
const GHP = 'gh' + 'p_' + randomChars(21, 36);
const AWS_ID = 'AK' + 'IA' + randomChars(22, 16, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567');

const TREE = {
  'ok.ts': 'export const ok = 1;\n',
  [`${GHP}.txt`]: 'harmless content\n',
  [`docs/notes-${AWS_ID}.md`]: 'harmless notes\n',
  [`${AWS_ID}/inner.ts`]: 'export const inner = 2;\n',
  'docs/readme.md': 'read me\n',
};

test('a file or folder whose name holds a secret is left out, its path redacted, nothing below it entered', async (t) => {
  const root = await makeRepo(t, TREE);
  for (const packing of ['smallest-first', 'ranked'] as const) {
    const result = await pack(root, { packing, tokenBudget: 10_000 });
    assert.deepEqual(manifest(result).files.sort(), ['docs/readme.md', 'ok.ts'], packing);
    assert.deepEqual(manifest(result).skipped, [
      [`${REDACTED}`, 'secret'],
      [`${REDACTED}.txt`, 'secret'],
      [`docs/notes-${REDACTED}.md`, 'secret'],
    ]);
    assert.equal(detailOf(result, `${REDACTED}.txt`), 'the name holds a GitHub secret (secret rules run over each path); shown redacted, never opened');
    assert.equal(detailOf(result, REDACTED), 'the name holds an AWS secret (secret rules run over each path); shown redacted, never opened');
    // nowhere in the result: sections (the ranked file tree too), manifest entries, details
    const everything = JSON.stringify({ ...result, secrets: undefined });
    for (const secret of [GHP, AWS_ID]) assert.ok(!everything.includes(secret), `${packing}: ${secret.slice(0, 4)}… leaked`);
  }
});

test('reposnap pack --list and --json never print a secret held by a name', async (t) => {
  const root = await makeRepo(t, TREE);
  for (const flag of ['--list', '--json']) {
    let out = '';
    const io: PackIo = { stdout: (s) => void (out += s), stderr: (s) => void (out += s), isTTY: false };
    assert.equal(await runPack(['--repo', root, flag], io), 0);
    assert.ok(out.includes(`${REDACTED}.txt`), out);
    for (const secret of [GHP, AWS_ID]) assert.ok(!out.includes(secret), `${flag} printed ${secret.slice(0, 4)}…`);
  }
});

test('skipSecrets: false keeps such names (the same switch as content scanning)', async (t) => {
  const root = await makeRepo(t, TREE);
  const result = await pack(root, { skipSecrets: false });
  assert.ok(manifest(result).files.includes(`${GHP}.txt`));
  assert.ok(manifest(result).files.includes(`${AWS_ID}/inner.ts`));
});

test("findNameSecrets scans a directory's names in one pass and attributes each secret to its own name", async () => {
  const names = ['a.ts', `x-${GHP}-y.log`, 'password.md', `${AWS_ID}`, 'b.ts'];
  const found = await findNameSecrets(names);
  assert.deepEqual([...found.keys()].sort(), [1, 3]);
  assert.deepEqual(found.get(1), { rule: 'github', redacted: `x-${REDACTED}-y.log` });
  assert.deepEqual(found.get(3), { rule: 'aws', redacted: REDACTED });
  assert.equal((await findNameSecrets([])).size, 0);
});

test('redactSecrets replaces each range once, merging overlapping and touching ranges, clamped to the text', () => {
  assert.equal(redactSecrets('abcdefgh', [{ start: 2, end: 4 }]), `ab${REDACTED}efgh`);
  assert.equal(redactSecrets('abcdefgh', [{ start: 5, end: 7 }, { start: 1, end: 3 }, { start: 2, end: 4 }, { start: 4, end: 5 }]), `a${REDACTED}h`);
  assert.equal(redactSecrets('abc', [{ start: -3, end: 1 }, { start: 2, end: 99 }]), `${REDACTED}b${REDACTED}`);
  assert.equal(redactSecrets('abc', []), 'abc');
});
