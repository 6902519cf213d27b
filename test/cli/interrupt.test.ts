/**
 * Ctrl+C in the CLI (src/cli/interrupt.ts): the first SIGINT aborts the command instead of killing
 * the process, also once node-llama-cpp has added signal-exit's SIGINT listener; a second SIGINT
 * kills it. Runs test/cli/sigint-child.ts in a child process.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';

const CHILD = path.join(__dirname, 'sigint-child.ts');

function child(times: number, ...signals: NodeJS.Signals[]) {
  // the timeout only ends a child that hangs (a failure either way), it measures nothing
  return spawnSync(process.execPath, ['--import', 'tsx', CHILD, String(times), ...signals], { encoding: 'utf8', timeout: 60_000 });
}

test('the first Ctrl+C aborts the command and the process lives on to end it, beside signal-exit\'s own SIGINT listener', () => {
  const r = child(1);
  // the premise: node-llama-cpp brought a second SIGINT listener (signal-exit's), which re-raises
  // SIGINT when it finds no other listener; with `process.once` it found none and killed the process
  assert.equal(r.stdout.split('\n')[0], 'listeners 2', r.stderr);
  assert.equal(r.signal, null, `killed by ${r.signal}; stdout: ${r.stdout}`);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, 'listeners 2\naborted\nexit 130\n');
});

test('a second Ctrl+C kills the process by SIGINT', () => {
  const r = child(2);
  assert.equal(r.stdout, 'listeners 2\naborted\n', r.stderr);
  assert.equal(r.signal, 'SIGINT', `status ${r.status}, signal ${r.signal}`);
});

test('SIGTERM and SIGHUP abort the command as Ctrl+C does, beside signal-exit\'s own listener for them, and set the exit code to 128 + their number', () => {
  for (const [signal, code] of [['SIGTERM', 143], ['SIGHUP', 129]] as const) {
    const r = child(1, signal);
    assert.equal(r.signal, null, `killed by ${r.signal}; stdout: ${r.stdout}`);
    assert.equal(r.status, 0, r.stderr);
    // signal-exit listens to both (2 listeners): with ours alone removed it would re-raise them
    assert.equal(r.stdout, `listeners 2\naborted\nexit ${code}\n`);
  }
});

test('a second signal of any of the three kills the process by that signal', () => {
  for (const [first, second] of [['SIGTERM', 'SIGTERM'], ['SIGINT', 'SIGTERM'], ['SIGTERM', 'SIGHUP']] as const) {
    const r = child(2, first, second);
    assert.equal(r.stdout, 'listeners 2\naborted\n', r.stderr);
    assert.equal(r.signal, second, `${first} then ${second}: status ${r.status}, signal ${r.signal}`);
  }
});
