/**
 * Ctrl+C while `reposnap ask` / `reposnap pack` pack the repository, typed on a real terminal:
 * the command runs under util-linux `script` (a pseudo-terminal, so that stderr is a TTY and the
 * progress line is drawn), and ^C is written to the terminal as soon as `packing:` appears, so
 * the terminal's line discipline sends SIGINT to the command as a user's Ctrl+C does. The command
 * says `cancelled` on a line of its own, exits 130 (docs/cli.md, "Errors and exit codes"), and writes
 * nothing to the cache folder: neither the cache root nor the model fingerprint memo.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { FINGERPRINT_MEMO } from '../../src/engine/state-file';
import { checkTinyModel } from '../helpers/models';
import { ctrlCWhen, type CtrlCRun } from '../helpers/pty';

const ROOT = path.resolve(__dirname, '..', '..');
const BIN = path.join(ROOT, 'bin', 'reposnap.js');

/** A repository of `files` small TypeScript files in 20 folders: packing it takes about a second. */
function slowToPackRepo(dir: string, files: number): string {
  const repo = path.join(dir, 'repo');
  for (let i = 0; i < files; i++) {
    const folder = path.join(repo, 'src', `d${i % 20}`);
    if (i < 20) fs.mkdirSync(folder, { recursive: true });
    fs.writeFileSync(path.join(folder, `f${i}.ts`), `/** File ${i}. */\n${Array.from({ length: 20 }, (_, k) => `export const v${i}_${k} = ${i * k};\n`).join('')}`);
  }
  return repo;
}

/**
 * Runs `node bin/reposnap.js …args` on a pseudo-terminal and types ^C once the output shows
 * `when` (default `packing: `; test/helpers/pty.ts).
 */
function ctrlCWhilePacking(args: string[], when = 'packing: '): Promise<CtrlCRun> {
  return ctrlCWhen(args, when, { ...process.env, REPOSNAP_CACHE_DIR: path.join(os.tmpdir(), 'reposnap-test-cache') });
}

test('Ctrl+C while ask packs: "cancelled" on its own line, exit 130, and no cache root or fingerprint memo written', async () => {
  const model = checkTinyModel();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-ctrlc-'));
  try {
    const repo = slowToPackRepo(tmp, 3000);
    // a cache root that does not exist yet: the cancelled question must not create it
    const freshRoot = path.join(tmp, 'fresh-cache');
    const first = await ctrlCWhilePacking(['ask', '--repo', repo, '--model', model, '--cache-dir', freshRoot, 'Which file holds v7_3?']);
    assert.ok(first.typed, `packing never showed:\n${first.output}`);
    assert.equal(first.code, 130, first.output);
    // the progress line is cleared first (\r ESC[2K), so the error is not glued to "packing: walk …"
    assert.match(first.output, /(?:^|\n|\x1b\[2K)reposnap: error: cancelled\r\n$/, JSON.stringify(first.output.slice(-200)));
    assert.doesNotMatch(first.output, /aborted/);
    assert.equal(fs.existsSync(freshRoot), false, `left behind: ${fs.existsSync(freshRoot) ? fs.readdirSync(freshRoot).join(', ') : ''}`);

    // the first question of a thread: its lock came and went, nothing stays either
    const threadRoot = path.join(tmp, 'thread-cache');
    const inThread = await ctrlCWhilePacking(['ask', '--repo', repo, '--model', model, '--cache-dir', threadRoot, '--thread', 't1', 'Which file holds v7_3?']);
    assert.ok(inThread.typed, `packing never showed:\n${inThread.output}`);
    assert.equal(inThread.code, 130, inThread.output);
    assert.equal(fs.existsSync(threadRoot), false, `left behind: ${fs.existsSync(threadRoot) ? fs.readdirSync(threadRoot).join(', ') : ''}`);

    // a cache root that exists (empty): it stays, and stays empty (no model-fingerprints.json)
    const existingRoot = path.join(tmp, 'existing-cache');
    fs.mkdirSync(existingRoot);
    const second = await ctrlCWhilePacking(['ask', '--repo', repo, '--model', model, '--cache-dir', existingRoot, 'Which file holds v7_3?']);
    assert.ok(second.typed, `packing never showed:\n${second.output}`);
    assert.equal(second.code, 130, second.output);
    assert.deepEqual(fs.readdirSync(existingRoot), []);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

test('Ctrl+C during the first prefill into a new cache root: exit 130, and neither the root nor the fingerprint memo written once packed stays', async () => {
  const model = checkTinyModel();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-ctrlc-'));
  try {
    // 3,000 files fill the tiny model's 8,192-token context: its prefill takes seconds
    const repo = slowToPackRepo(tmp, 3000);
    const freshRoot = path.join(tmp, 'fresh-cache');
    const r = await ctrlCWhilePacking(['ask', '--repo', repo, '--model', model, '--cache-dir', freshRoot, 'Which file holds v7_3?'], 'prefill: ');
    assert.ok(r.typed, `prefill never showed:\n${r.output}`);
    assert.equal(r.code, 130, r.output);
    assert.match(r.output, /(?:^|\n|\x1b\[2K)reposnap: error: cancelled\r\n$/, JSON.stringify(r.output.slice(-200)));
    // the memo was written (the key is made before the prefill), and went with the root
    assert.equal(fs.existsSync(freshRoot), false, `left behind: ${fs.existsSync(freshRoot) ? fs.readdirSync(freshRoot).join(', ') : ''}`);

    // the same question answered: the prefix entry is saved and the memo is kept beside it
    const done = spawnSync(process.execPath, [BIN, 'ask', '--repo', repo, '--model', model, '--cache-dir', freshRoot, '--max-tokens', '4', '--quiet', 'Which file holds v7_3?'], { encoding: 'utf8', timeout: 300_000 });
    assert.equal(done.status, 0, done.stderr);
    const memo = JSON.parse(fs.readFileSync(path.join(freshRoot, FINGERPRINT_MEMO), 'utf8')) as { entries: Array<{ path: string; sha256: string }> };
    assert.deepEqual(
      memo.entries.map((e) => [e.path, e.sha256]),
      [[path.resolve(model), createHash('sha256').update(fs.readFileSync(model)).digest('hex')]],
    );
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

test('Ctrl+C while pack packs: "cancelled", exit 130', async () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-ctrlc-'));
  try {
    const repo = slowToPackRepo(tmp, 3000);
    const r = await ctrlCWhilePacking(['pack', '--repo', repo, '--list']);
    assert.ok(r.typed, `packing never showed:\n${r.output}`);
    assert.equal(r.code, 130, r.output);
    assert.match(r.output, /(?:^|\n|\x1b\[2K)reposnap: error: cancelled\r\n$/, JSON.stringify(r.output.slice(-200)));
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
