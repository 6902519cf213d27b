/**
 * Ctrl+C (SIGINT) for a CLI command that runs the engine.
 */

/**
 * Installs the command's SIGINT listener: the first SIGINT aborts `controller` (the command stops
 * at its next check of the signal, between graph nodes in the engine, and exits with code 130 and
 * one line); a second one ends the process at once, as an unhandled SIGINT does (killed by
 * SIGINT, which a shell reports as 130), for an engine that does not stop (a lost RPC server).
 *
 * The listener stays registered (`process.on`, not `once`) until the returned function removes
 * it: signal-exit 3 (loaded with node-llama-cpp, through proper-lockfile, when a model's GGUF
 * header is read) re-raises SIGINT when, by the time its own listener runs, it sees no other one,
 * and a `once` listener has already been removed then, so the first Ctrl+C killed the process
 * before the command could stop, say so, flush the cache or free the model.
 * @param controller aborted by the first SIGINT.
 * @returns a function that removes the listener (idempotent); call it once the command is done.
 */
export function abortOnSigint(controller: AbortController): () => void {
  const onSigint = (): void => {
    if (!controller.signal.aborted) {
      controller.abort();
      return;
    }
    process.removeListener('SIGINT', onSigint);
    process.kill(process.pid, 'SIGINT');
  };
  process.on('SIGINT', onSigint);
  return () => void process.removeListener('SIGINT', onSigint);
}
