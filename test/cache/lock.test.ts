/**
 * Cross-process locks (src/cache/lock.ts): a lock whose holder died is taken over at once (no
 * 30 s wait), a live holder is waited for, a holder on another host ages out by its heartbeat,
 * a folder left by proper-lockfile ages out too, and a release never removes another's lock.
 * `timeoutMs: 0` means "take it now or fail", so "at once" needs no clock.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { acquireLock, LockTimeoutError, pidAlive } from '../../src/cache/lock';
import { AbortError } from '../../src/engine/errors';

let tmp: string;
before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-lock-'));
});
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

const holder = (pid: number, host = os.hostname(), nonce = 'n1') => JSON.stringify({ pid, host, nonce, at: Date.now() });
const minuteAgo = () => new Date(Date.now() - 60_000);

/** The pid of a process that has exited. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', '']);
  assert.equal(pidAlive(r.pid!), false);
  return r.pid!;
}

test('a lock left by a dead process on this host is taken over at once, and released', async () => {
  const file = path.join(tmp, 'dead.lock');
  fs.writeFileSync(file, holder(deadPid()));
  const lock = await acquireLock(file, { timeoutMs: 0 });
  const now = JSON.parse(fs.readFileSync(file, 'utf8'));
  assert.equal(now.pid, process.pid);
  assert.equal(now.host, os.hostname());
  lock.release();
  assert.equal(fs.existsSync(file), false);
  // this process's own pid with a nonce it does not hold: a previous process that had the same pid
  fs.writeFileSync(file, holder(process.pid, os.hostname(), 'not-mine'));
  (await acquireLock(file, { timeoutMs: 0 })).release();
});

test('a live holder is waited for, until it dies or the timeout', async () => {
  const file = path.join(tmp, 'live.lock');
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)']);
  try {
    fs.writeFileSync(file, holder(child.pid!));
    fs.utimesSync(file, minuteAgo(), minuteAgo()); // older than the 30 s heartbeat limit: a live holder on this host still holds it
    let waited = 0;
    await assert.rejects(acquireLock(file, { timeoutMs: 100, onWait: () => waited++ }), (e: Error) => {
      assert.ok(e instanceof LockTimeoutError);
      assert.equal((e as LockTimeoutError).code, 'ELOCKED');
      assert.equal((e as LockTimeoutError).holder?.pid, child.pid);
      return true;
    });
    assert.equal(waited, 1, 'onWait is called once');
    const ac = new AbortController();
    const waiting = acquireLock(file, { timeoutMs: 60_000, signal: ac.signal });
    ac.abort();
    // the project's one AbortError (what the chat view, the host and the CLI test with
    // instanceof), not the platform's DOMException that signal.throwIfAborted() throws
    await assert.rejects(waiting, (e: unknown) => e instanceof AbortError);
    const gone = new AbortController();
    gone.abort();
    await assert.rejects(acquireLock(file, { timeoutMs: 60_000, signal: gone.signal }), (e: unknown) => e instanceof AbortError);
  } finally {
    child.kill('SIGKILL');
    await once(child, 'exit');
  }
  (await acquireLock(file, { timeoutMs: 0 })).release();
});

test('a holder on another host is stale only when its heartbeat is older than staleMs', async () => {
  const file = path.join(tmp, 'remote.lock');
  fs.writeFileSync(file, holder(1, 'some-other-host'));
  await assert.rejects(acquireLock(file, { timeoutMs: 0 }), LockTimeoutError);
  fs.utimesSync(file, minuteAgo(), minuteAgo());
  (await acquireLock(file, { timeoutMs: 0 })).release();
  // the same for a lock file that cannot be parsed (being written, or damaged)
  fs.writeFileSync(file, '');
  await assert.rejects(acquireLock(file, { timeoutMs: 0 }), LockTimeoutError);
  fs.utimesSync(file, minuteAgo(), minuteAgo());
  (await acquireLock(file, { timeoutMs: 0 })).release();
});

test("proper-lockfile's lock folder (the previous lock library, same path) is stale after 30 s without an update", async () => {
  const file = path.join(tmp, 'legacy.lock');
  fs.mkdirSync(file);
  await assert.rejects(acquireLock(file, { timeoutMs: 0 }), LockTimeoutError);
  fs.utimesSync(file, minuteAgo(), minuteAgo());
  const lock = await acquireLock(file, { timeoutMs: 0 });
  assert.ok(fs.statSync(file).isFile());
  lock.release();
});

test("release removes only its own lock, and a lock that cannot be created is the fs's error", async () => {
  const file = path.join(tmp, 'own.lock');
  const lock = await acquireLock(file, { timeoutMs: 0 });
  fs.writeFileSync(file, holder(deadPid(), os.hostname(), 'taken-over-meanwhile'));
  lock.release();
  assert.ok(fs.existsSync(file), "another holder's lock stays");
  fs.rmSync(file);
  fs.writeFileSync(path.join(tmp, 'a-file'), '');
  await assert.rejects(acquireLock(path.join(tmp, 'a-file', 'x.lock'), { timeoutMs: 0 }), { code: 'ENOTDIR' });
});
