/**
 * A child process for test/cli/interrupt.test.ts: installs `abortOnSignals` as `reposnap ask` does,
 * loads node-llama-cpp as `reposnap ask` does when it reads a model's GGUF header (which brings
 * signal-exit 3 and its own SIGINT listener, through proper-lockfile), prints the number of SIGINT
 * listeners (of the first signal), then sends itself SIGINT (`argv[2]` times: 1 or 2, the second
 * once the first has aborted; `argv[3]`, `argv[4]`: the first and the second signal instead,
 * SIGTERM or SIGHUP) and prints `aborted` when the controller aborts, and, when it ends after one
 * signal, `exit <code>`: the exit code `reposnap` would report. It stays alive (a timer) until it
 * is killed or ends itself, as a command still running would.
 */
import { abortOnSignals, interruptExitCode } from '../../src/cli/interrupt';

const times = Number(process.argv[2] ?? '1');
const first = (process.argv[3] ?? 'SIGINT') as NodeJS.Signals;
const second = (process.argv[4] ?? first) as NodeJS.Signals;
const controller = new AbortController();
const stop = abortOnSignals(controller);
const alive = setInterval(() => undefined, 1_000);
controller.signal.addEventListener('abort', () => {
  process.stdout.write('aborted\n');
  if (times >= 2) {
    process.kill(process.pid, second);
    return;
  }
  // the command ends once it has seen the abort: later, as the `finally` after an await in
  // `reposnap ask` (removed within this SIGINT's emit, signal-exit would find no other listener)
  setImmediate(() => {
    stop();
    clearInterval(alive);
    process.stdout.write(`exit ${interruptExitCode()}\n`);
  });
});
void import('node-llama-cpp').then(() => {
  process.stdout.write(`listeners ${process.listenerCount(first)}\n`);
  process.kill(process.pid, first);
});
