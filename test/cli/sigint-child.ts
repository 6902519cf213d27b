/**
 * A child process for test/cli/interrupt.test.ts: installs `abortOnSignals` as `reposnap ask` does,
 * loads node-llama-cpp as `reposnap ask` does when it reads a model's GGUF header (which brings
 * signal-exit 3 and its own SIGINT listener, through proper-lockfile), prints the number of SIGINT
 * listeners, then sends itself SIGINT (`argv[2]` times: 1 or 2, the second once the first has
 * aborted) and prints `aborted` when the controller aborts. It stays alive (a timer) until it is
 * killed or ends itself, as a command still running would.
 */
import { abortOnSignals } from '../../src/cli/interrupt';

const times = Number(process.argv[2] ?? '1');
const controller = new AbortController();
const stop = abortOnSignals(controller);
const alive = setInterval(() => undefined, 1_000);
controller.signal.addEventListener('abort', () => {
  process.stdout.write('aborted\n');
  if (times >= 2) {
    process.kill(process.pid, 'SIGINT');
    return;
  }
  // the command ends once it has seen the abort: later, as the `finally` after an await in
  // `reposnap ask` (removed within this SIGINT's emit, signal-exit would find no other listener)
  setImmediate(() => {
    stop();
    clearInterval(alive);
  });
});
void import('node-llama-cpp').then(() => {
  process.stdout.write(`listeners ${process.listenerCount('SIGINT')}\n`);
  process.kill(process.pid, 'SIGINT');
});
