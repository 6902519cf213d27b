/**
 * Default thread counts of the engine.
 *
 * Measured on the 2-vCPU machines this project runs on (bench/threads): llama.cpp's decode is
 * memory-bound and its threads spin-wait between graph nodes, so more threads than physical
 * cores, or threads that compete with another busy process, make decode slower, not faster
 * (node-llama-cpp 3.21.1's default took ~0.5 s a token on a 260K-parameter model here, against
 * ~3 ms with one thread). Prefill is compute-bound and scales with cores.
 */
import os from 'node:os';

/** Thread counts for one session: `threads` for decode (single tokens), `threadsBatch` for prefill. */
export interface ThreadCounts {
  threads: number;
  threadsBatch: number;
}

/**
 * Defaults: prefill on every available core, decode on every available core up to 4
 * (beyond that memory bandwidth, not compute, limits decode). `REPOSNAP_THREADS` overrides both.
 */
export function defaultThreads(): ThreadCounts {
  const env = Number(process.env.REPOSNAP_THREADS);
  if (Number.isInteger(env) && env > 0) return { threads: env, threadsBatch: env };
  const cores = Math.max(1, os.availableParallelism?.() ?? os.cpus().length);
  return { threads: Math.min(cores, 4), threadsBatch: cores };
}
