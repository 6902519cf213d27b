/**
 * Default thread counts of the engine.
 *
 * Measured on the 2-vCPU machines this project runs on (`npm run bench:threads`, one run):
 *
 *   model                          threads  decode ms/token      prefill tok/s
 *   stories260K (head size 8)      1 / 2    0.52 / 1.98 (FA off)  3184 / 5397
 *   synthetic 8×1024, head 64, f16 1 / 2    7.46 / 8.19 (FA off)   702 / 1341
 *                                  1 / 2    7.64 / 6.94 (FA on)    819 / 1595
 *
 * Decode is memory-bound and llama.cpp's threads spin-wait at every graph node: a thread that
 * competes with Node's own thread for a core costs more than it brings (node-llama-cpp 3.21.1's
 * default took ~0.5 s a token on the 260K model here). Prefill is compute-bound and scales.
 *
 * `bench/engine.ts` (synthetic 100M model, flash attention, 2 vCPUs) shows the trade-off at
 * decode: on the uncompressed 8K cache two threads win (22.9 vs 28.5 ms/token), on the 1,024
 * cells SnapKV leaves one thread wins (9.9 vs 14.1 ms/token); at 16K uncompressed two threads
 * win by more (28.1 vs 44.0 ms/token). Attention over a long cache is compute-bound like prefill,
 * so a session switches its decode to `threadsBatch` while it attends to `LONG_KV_CELLS` cells or
 * more (see {@link decodeThreadsFor}), and back to `threads` after SnapKV has compacted the cache.
 */
import os from 'node:os';

/** Thread counts for one session: `threads` for decode (single tokens), `threadsBatch` for prefill. */
export interface ThreadCounts {
  threads: number;
  threadsBatch: number;
}

/** Attended cells from which decode runs on the prefill thread count (between the 2K and 8K measurements). */
export const LONG_KV_CELLS = 4096;

/**
 * Decode threads for a step that attends to `nKv` cells: `counts.threads` below
 * {@link LONG_KV_CELLS}, `counts.threadsBatch` from there on.
 */
export function decodeThreadsFor(nKv: number, counts: ThreadCounts): number {
  return nKv >= LONG_KV_CELLS ? Math.max(counts.threads, counts.threadsBatch) : counts.threads;
}

/**
 * Defaults: prefill on every available core; decode on all cores but one (leaving one to
 * Node's event loop), at most 8 (beyond that memory bandwidth limits decode).
 * `REPOSNAP_THREADS` overrides both.
 */
export function defaultThreads(): ThreadCounts {
  const env = Number(process.env.REPOSNAP_THREADS);
  if (Number.isInteger(env) && env > 0) return { threads: env, threadsBatch: env };
  const cores = Math.max(1, os.availableParallelism?.() ?? os.cpus().length);
  return { threads: Math.min(8, Math.max(1, cores - 1)), threadsBatch: cores };
}
