/**
 * Ctrl+C (SIGINT), SIGTERM and SIGHUP for a CLI command that runs the engine.
 */
import os from 'node:os';

/** The signals a command stops on: Ctrl+C, `kill` (a service manager's stop), a closed terminal. */
export const INTERRUPT_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
/** One of {@link INTERRUPT_SIGNALS}. */
export type InterruptSignal = (typeof INTERRUPT_SIGNALS)[number];

/** The signal that last aborted a command in this process (the exit code says which), if any. */
let received: InterruptSignal | undefined;

/**
 * Installs the command's listeners for {@link INTERRUPT_SIGNALS}: the first of them aborts
 * `controller` (the command stops at its next check of the signal, between graph nodes in the
 * engine, cleans up, and exits with code 128 + the signal's number, {@link interruptExitCode}:
 * 130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP, with one line); a second one (any of them) ends
 * the process at once, as an unhandled signal does (killed by it, which a shell reports as 128 +
 * its number), for an engine that does not stop (a lost RPC server).
 *
 * The listeners stay registered (`process.on`, not `once`) until the returned function removes
 * them: signal-exit 3 (loaded with node-llama-cpp, through proper-lockfile, when a model's GGUF
 * header is read) listens to SIGINT, SIGTERM and SIGHUP too and re-raises the signal when, by the
 * time its own listener runs, it sees no other one, and a `once` listener has already been
 * removed then, so the first Ctrl+C killed the process before the command could stop, say so,
 * flush the cache or free the model.
 * @param controller aborted by the first signal.
 * @returns a function that removes the listeners (idempotent); call it once the command is done.
 */
export function abortOnSignals(controller: AbortController): () => void {
  const stop = (): void => {
    for (const name of INTERRUPT_SIGNALS) process.removeListener(name, onSignal);
  };
  const onSignal = (name: NodeJS.Signals): void => {
    if (!controller.signal.aborted) {
      received = name as InterruptSignal;
      controller.abort();
      return;
    }
    stop();
    process.kill(process.pid, name);
  };
  for (const name of INTERRUPT_SIGNALS) process.on(name, onSignal);
  return stop;
}

/**
 * The exit code of a command that an abort ended: 128 + the number of the signal that aborted it
 * ({@link abortOnSignals}; 130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP), 130 when no signal
 * did (an abort of another kind is reported as a Ctrl+C is).
 */
export function interruptExitCode(): number {
  return 128 + os.constants.signals[received ?? 'SIGINT'];
}
