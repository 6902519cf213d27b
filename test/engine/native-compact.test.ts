/**
 * The SnapKV patch series' own C++ test (native/test/snapkv-compact-test.cpp, built with the engine
 * by native/build.mjs): through llama.h alone, on a synthetic llama, compaction of per-head kept
 * rows against the uncompressed cache with each head's dropped keys hidden, row for row and logit
 * for logit, and score-only requests against the compaction's own scores, flash attention off and on. This runs it and requires every one of its checks to pass.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { packageRoot } from '../../src/engine/native';

/** Beside the addon under test (REPOSNAP_ADDON), else in native/build. */
const exe = path.join(process.env.REPOSNAP_ADDON ? path.dirname(process.env.REPOSNAP_ADDON) : path.join(packageRoot(), 'native', 'build'), 'snapkv-compact-test');

test('the patch series stands on its own: snapkv-compact-test passes every check (flash attention off and on)', () => {
  assert.ok(fs.existsSync(exe), `${exe} is missing: run 'npm run build' (native/build.mjs builds it with the engine)`);
  const r = spawnSync(exe, [], { encoding: 'utf8', timeout: 120_000 });
  const lines = r.stdout.split('\n').filter((l) => /^(ok|FAIL) - /.test(l));
  for (const l of lines) console.log(`# ${l}`);
  assert.equal(r.status, 0, `snapkv-compact-test failed:\n${r.stdout}${r.stderr}`);
  // 21 checks per flash-attention setting (17, and 4 of llama_snapkv_key_norms); a check that silently stopped running would lower it
  assert.equal(lines.filter((l) => l.startsWith('ok - ')).length, 42, r.stdout);
  assert.match(r.stdout, /^PASS: 0 failed$/m);
});
