/**
 * The model fingerprint (src/engine/state-file.ts) that keys the cache: the SHA-256 of the whole
 * file, remembered per path, size, mtime, ctime and inode in this process and in a memo file that
 * a new process reads (shape-checked) instead of hashing the model again.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { modelFingerprint } from '../../src/engine/state-file';

const ROOT = path.resolve(__dirname, '..', '..');
let tmp: string;
before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-fingerprint-'));
});
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** modelFingerprint(file, memo) in a new node process. */
function fingerprintInNewProcess(file: string, memo: string): string {
  const code = `const { modelFingerprint } = require(${JSON.stringify(path.join(ROOT, 'src', 'engine', 'state-file.ts'))}); process.stdout.write(modelFingerprint(${JSON.stringify(file)}, ${JSON.stringify(memo)}));`;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '-e', code], { encoding: 'utf8', cwd: ROOT });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout;
}

test('a same-size change in the middle of the model is a new fingerprint, even with its mtime put back', () => {
  const file = path.join(tmp, 'model.gguf');
  const bytes = randomBytes(3 << 20); // 3 MiB: the middle MiB is neither the first nor the last
  fs.writeFileSync(file, bytes);
  const t = new Date(Date.UTC(2026, 0, 1)); // whole seconds: utimes can put it back exactly
  fs.utimesSync(file, t, t);
  const before = modelFingerprint(file, null);
  const original = sha256(bytes);
  const st = fs.statSync(file);
  bytes[bytes.length >> 1]! ^= 0xff;
  fs.writeFileSync(file, bytes);
  fs.utimesSync(file, t, t); // size and mtime as before; inode unchanged
  assert.equal(fs.statSync(file).mtimeMs, st.mtimeMs);
  const after = modelFingerprint(file, null);
  assert.notEqual(after, before, 'the changed model has a new fingerprint');
  assert.equal(before, original, 'the SHA-256 of the whole content');
  assert.equal(after, sha256(bytes));
});

test('a new process takes the fingerprint from the memo instead of hashing; a memo of the wrong shape is ignored and rewritten', () => {
  const file = path.join(tmp, 'memo-model.gguf');
  const bytes = randomBytes(1 << 20);
  fs.writeFileSync(file, bytes);
  const memo = path.join(tmp, 'cache-root', 'model-fingerprints.json');
  const fp = modelFingerprint(file, memo);
  assert.equal(fp, sha256(bytes));
  const written = JSON.parse(fs.readFileSync(memo, 'utf8'));
  assert.equal(written.version, 1);
  assert.equal(written.entries.length, 1);
  assert.equal(written.entries[0].path, file);
  assert.equal(written.entries[0].size, bytes.length);
  assert.equal(written.entries[0].sha256, fp);

  // a memo entry for exactly this file's stat: the new process returns it, so it did not hash
  const planted = 'ab'.repeat(32);
  written.entries[0].sha256 = planted;
  fs.writeFileSync(memo, JSON.stringify(written));
  assert.equal(fingerprintInNewProcess(file, memo), planted);

  // once the file changes (same size), the entry no longer matches: hashed again
  bytes[10]! ^= 1;
  fs.writeFileSync(file, bytes);
  assert.equal(fingerprintInNewProcess(file, memo), sha256(bytes));

  for (const bad of ['null', '{"version":1,"entries":null}', '{"version":1,"entries":[{"path":1}]}', '[]', 'not json']) {
    fs.writeFileSync(memo, bad);
    assert.equal(fingerprintInNewProcess(file, memo), sha256(bytes), bad);
    const rewritten = JSON.parse(fs.readFileSync(memo, 'utf8'));
    assert.equal(rewritten.entries[0].sha256, sha256(bytes), `${bad}: rewritten valid`);
  }
});
