/**
 * The prefix entry's lock across processes (CacheStore.lockPrefix, src/cache/store.ts): two
 * `reposnap ask` runs started at once on the same repository prefill it once (the second waits,
 * then restores the first one's saved entry); a lock left by a process that died (kill -9) is
 * taken over at once; a lock held by a live process, or by a process on another host (judged by
 * its heartbeat, never by a pid that means nothing here), is waited for, and Ctrl+C while waiting
 * exits 130 and leaves that lock as it was. Real processes, real models.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { pidAlive } from '../../src/cache/lock';
import { DEFAULT_SNAP } from '../../src/pipeline/ask';
import { checkRealModel, checkTinyModel } from '../helpers/models';
import { ctrlCWhen, type CtrlCRun } from '../helpers/pty';

const ROOT = path.resolve(__dirname, '..', '..');
const BIN = path.join(ROOT, 'bin', 'reposnap.js');

let tmp: string;
before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-prefix-lock-'));
});
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** A running `reposnap ask`, its output collected. */
function start(args: string[]): { child: ChildProcess; done: Promise<{ code: number | null; stdout: string; stderr: string }> } {
  const child = spawn(process.execPath, [BIN, 'ask', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
  // a run that hangs is a failure either way: end it after three minutes (this measures nothing)
  const timer = setTimeout(() => child.kill('SIGKILL'), 180_000);
  const done = once(child, 'close').then(([code]) => {
    clearTimeout(timer);
    return { code: code as number | null, stdout, stderr };
  });
  return { child, done };
}

/** The `--json` stats: the last line of stderr. */
const statsOf = (stderr: string) => JSON.parse(stderr.trim().split('\n').pop()!) as { cache: string; L: number; prefixTokens: number; reusedTokens: number; prefilledTokens: number };

/** The prefix entries' lock files under a cache root (one workspace folder). */
function lockFiles(cacheRoot: string): string[] {
  const out: string[] = [];
  for (const ws of fs.existsSync(cacheRoot) ? fs.readdirSync(cacheRoot) : []) {
    const dir = path.join(cacheRoot, ws, 'prefix');
    if (fs.existsSync(dir)) out.push(...fs.readdirSync(dir).filter((n) => n.endsWith('.lock')).map((n) => path.join(dir, n)));
  }
  return out;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('two runs at once on the same repository: the second waits for the first prefill, restores its entry warm, and answers the same', async () => {
  const model = checkRealModel();
  const cacheRoot = path.join(tmp, 'two-runs');
  const args = ['--repo', ROOT, '--include', 'src/cache/location.ts', '--include', 'src/engine/errors.ts', '--include', 'src/host/debounce.ts', '--include', 'src/host/watcher.ts'];
  args.push('--context-size', '2304', '--max-tokens', '16', '--threads', '1', '--cache-dir', cacheRoot, '--json', '--model', model, 'Which file defines the function defaultCacheRoot?');
  const first = start(args);
  // the second starts once the first holds the prefix's lock (it prefills for seconds from there)
  const t0 = Date.now();
  while (lockFiles(cacheRoot).length === 0 && first.child.exitCode === null && Date.now() - t0 < 120_000) await sleep(10);
  assert.equal(lockFiles(cacheRoot).length, 1, 'the first run never took the prefix lock');
  const holder = JSON.parse(fs.readFileSync(lockFiles(cacheRoot)[0]!, 'utf8'));
  assert.equal(holder.pid, first.child.pid);
  assert.equal(holder.host, os.hostname());
  const second = start(args);
  const [a, b] = await Promise.all([first.done, second.done]);
  assert.equal(a.code, 0, a.stderr);
  assert.equal(b.code, 0, b.stderr);
  assert.ok(b.stderr.includes(`reposnap: waiting for another RepoSnap process prefilling this repository (pid ${first.child.pid})…\n`), b.stderr);
  const sa = statsOf(a.stderr);
  const sb = statsOf(b.stderr);
  assert.equal(sa.cache, 'miss');
  assert.equal(sa.prefilledTokens, sa.L);
  // the second prefilled none of the prefix: it restored it up to SnapKV's window (restore.ts)
  assert.equal(sb.cache, 'hit');
  assert.equal(sb.L, sa.L);
  assert.equal(sb.reusedTokens, Math.min(sb.prefixTokens, sb.L - DEFAULT_SNAP.window));
  assert.equal(sb.prefilledTokens, sb.L - sb.reusedTokens);
  assert.equal(b.stdout, a.stdout, 'the same answer');
  assert.ok(a.stdout.length > 0);
  assert.deepEqual(lockFiles(cacheRoot), [], 'both locks released');
});

/** Runs `reposnap ask …args` on a pseudo-terminal and types ^C once it shows `waiting for` (test/helpers/pty.ts). */
function ctrlCWhileWaiting(args: string[]): Promise<CtrlCRun> {
  return ctrlCWhen(['ask', ...args], 'waiting for another RepoSnap process');
}

test('a dead holder\'s lock is taken over at once; a live holder\'s, or another host\'s, is waited for and Ctrl+C leaves it as it was; a live pid with a heartbeat 2 minutes old is taken over', async () => {
  const model = checkTinyModel();
  const cacheRoot = path.join(tmp, 'stale');
  const args = ['--repo', path.join(ROOT, 'src', 'cache'), '--max-tokens', '4', '--cache-dir', cacheRoot, '--json', '--model', model, 'What is a lock?'];
  const cold = start(args);
  const c = await cold.done;
  assert.equal(c.code, 0, c.stderr);
  assert.equal(statsOf(c.stderr).cache, 'miss');
  const [ws] = fs.readdirSync(cacheRoot).filter((n) => fs.statSync(path.join(cacheRoot, n)).isDirectory() && n !== 'models');
  const prefixDir = path.join(cacheRoot, ws!, 'prefix');
  const [entry] = fs.readdirSync(prefixDir).filter((n) => n.endsWith('.json'));
  const id = entry!.slice(0, -'.json'.length);
  const lockFile = path.join(prefixDir, `${id}.lock`);
  const forget = () => ['json', 'rsnp'].forEach((ext) => fs.rmSync(path.join(prefixDir, `${id}.${ext}`), { force: true }));

  // the holder was killed with -9 mid-prefill: its lock names a pid that no longer runs
  const dead = spawnSync(process.execPath, ['-e', '']).pid!;
  assert.equal(pidAlive(dead), false);
  forget();
  fs.writeFileSync(lockFile, JSON.stringify({ pid: dead, host: os.hostname(), nonce: 'killed', at: Date.now() }));
  const taken = await start(args).done;
  assert.equal(taken.code, 0, taken.stderr);
  assert.doesNotMatch(taken.stderr, /waiting for/);
  assert.equal(statsOf(taken.stderr).cache, 'miss', 'it prefilled the prefix itself');
  assert.equal(fs.existsSync(lockFile), false, 'and released the lock it took over');
  assert.ok(fs.existsSync(path.join(prefixDir, `${id}.json`)), 'the entry is saved again');

  // a live holder on this host, and a holder on another host (its pid means nothing here, its
  // heartbeat is fresh): both are waited for; Ctrl+C exits 130 and leaves the lock untouched
  const live = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)']);
  try {
    for (const holder of [{ pid: live.pid!, host: os.hostname() }, { pid: dead, host: 'another-host.invalid' }]) {
      forget();
      const body = JSON.stringify({ ...holder, nonce: 'held', at: Date.now() });
      fs.writeFileSync(lockFile, body);
      const r = await ctrlCWhileWaiting(args);
      assert.ok(r.typed, `never waited:\n${r.output}`);
      assert.ok(r.output.includes(`waiting for another RepoSnap process prefilling this repository (pid ${holder.pid})…`), r.output);
      assert.equal(r.code, 130, r.output);
      assert.match(r.output, /\{"error":\{"code":"cancelled","message":"cancelled"\}\}\r\n$/, '--json: the error as JSON');
      assert.equal(fs.readFileSync(lockFile, 'utf8'), body, 'the holder\'s lock is as it was');
      assert.equal(fs.existsSync(path.join(prefixDir, `${id}.json`)), false, 'nothing was prefilled or saved');
    }
    // a live pid whose heartbeat stopped 2 minutes ago (the holder died without its exit
    // handlers and its pid was reused): taken over at once, not waited for up to 10 minutes
    forget();
    fs.writeFileSync(lockFile, JSON.stringify({ pid: live.pid!, host: os.hostname(), nonce: 'reused', at: Date.now() - 120_000 }));
    const old = new Date(Date.now() - 120_000);
    fs.utimesSync(lockFile, old, old);
    const reused = await start(args).done;
    assert.equal(reused.code, 0, reused.stderr);
    assert.doesNotMatch(reused.stderr, /waiting for/);
    assert.equal(statsOf(reused.stderr).cache, 'miss', 'it prefilled the prefix itself');
    assert.equal(fs.existsSync(lockFile), false, 'and released the lock it took over');
    assert.equal(live.exitCode, null, 'the live holder runs on');
  } finally {
    live.kill('SIGKILL');
    await once(live, 'exit');
  }
});
