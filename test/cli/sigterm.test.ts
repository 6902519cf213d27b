/**
 * SIGTERM (`kill`, a service manager's stop) and SIGHUP (a closed terminal) stop `reposnap ask`
 * as Ctrl+C does (src/cli/interrupt.ts): the question is cancelled, the prefix lock it held is
 * released, the folders and the fingerprint memo it made in a new cache root are removed, and the
 * exit code is 128 + the signal's number (143, 129), as a shell reports a process the signal ended.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { checkTinyModel } from '../helpers/models';

const ROOT = path.resolve(__dirname, '..', '..');
const BIN = path.join(ROOT, 'bin', 'reposnap.js');

/** A repository of 3,000 small TypeScript files: it fills the tiny model's 8,192-token context, whose prefill takes seconds. */
function bigRepo(dir: string): string {
  const repo = path.join(dir, 'repo');
  for (let i = 0; i < 3000; i++) {
    const folder = path.join(repo, 'src', `d${i % 20}`);
    if (i < 20) fs.mkdirSync(folder, { recursive: true });
    fs.writeFileSync(path.join(folder, `f${i}.ts`), `/** File ${i}. */\n${Array.from({ length: 20 }, (_, k) => `export const v${i}_${k} = ${i * k};\n`).join('')}`);
  }
  return repo;
}

/** Every path under `dir` (relative, folders with a trailing slash), or [] when it does not exist. */
function tree(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return (fs.readdirSync(dir, { recursive: true, withFileTypes: true }) as fs.Dirent[]).map((d) => path.relative(dir, path.join(d.parentPath, d.name)) + (d.isDirectory() ? '/' : '')).sort();
}

/**
 * Starts an ask into the new cache root `cacheRoot`, sends it `signal` once its prefix lock
 * (`<workspace>/prefix/<id>.lock`) exists (polled every 10 ms), and resolves with how it ended.
 */
async function signalWhilePrefilling(repo: string, model: string, cacheRoot: string, signal: NodeJS.Signals) {
  const child = spawn(process.execPath, [BIN, 'ask', '--repo', repo, '--model', model, '--cache-dir', cacheRoot, 'Which file holds v7_3?'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
  child.stdout.resume();
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  let sent = false;
  // a command that hangs is a failure either way: end it after two minutes (this measures nothing)
  const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
  const poll = setInterval(() => {
    if (sent || !tree(cacheRoot).some((p) => /\/prefix\/[^/]+\.lock$/.test(p))) return;
    sent = true;
    child.kill(signal);
  }, 10);
  const [code, killedBy] = await exited;
  clearInterval(poll);
  clearTimeout(timer);
  return { code, killedBy, sent, stderr };
}

for (const [signal, code] of [['SIGTERM', 143], ['SIGHUP', 129]] as const) {
  test(`${signal} while ask prefills: exit ${code}, "cancelled", no lock, no folder and no fingerprint memo left`, async () => {
    const model = checkTinyModel();
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-sigterm-'));
    try {
      const repo = bigRepo(tmp);
      const cacheRoot = path.join(tmp, 'cache');
      const r = await signalWhilePrefilling(repo, model, cacheRoot, signal);
      assert.ok(r.sent, `no prefix lock appeared:\n${r.stderr}`);
      assert.equal(r.killedBy, null, `killed by ${r.killedBy}:\n${r.stderr}`);
      assert.equal(r.code, code, r.stderr);
      assert.match(r.stderr, /reposnap: error: cancelled\n$/);
      // the cache root did not exist before: nothing of it stays (lock, prefix/, thread/, memo)
      assert.deepEqual(tree(cacheRoot), []);
      assert.equal(fs.existsSync(cacheRoot), false);
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });
}
