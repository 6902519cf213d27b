import { throwIfAborted } from '../errors';
import { buildReferenceGraph, referenceGraphSteps, type GraphFile } from './graph';
import { pagerank } from './pagerank';

/**
 * Importance of each file: PageRank (α = 0.85) over `buildReferenceGraph(files)`, personalized
 * towards `recent` (paths of files the user has open or edited recently, as aider personalizes
 * towards the files in the chat: each recent file gets the same teleport weight, every other
 * file none). Without recent files among `files`, teleport is uniform. Returns ranks in the
 * order of `files` (sum 1 when there is at least one file). Pure.
 */
export function rankFiles(files: readonly GraphFile[], recent: readonly string[] = []): Float64Array {
  const recentSet = new Set(recent);
  const edges = buildReferenceGraph(files, { recent: recentSet });
  const personalization = files.map((f) => (recentSet.has(f.path) ? 1 : 0));
  const anyRecent = personalization.some((v) => v > 0);
  return pagerank(files.length, edges, anyRecent ? { personalization } : {});
}

/**
 * `rankFiles`, turning the event loop while it builds the reference graph: `maybeYield` (a
 * `createYielder`) is awaited between steps of `referenceGraphSteps` and `signal` checked there
 * (an abort rejects with an AbortError). The same ranks as `rankFiles`; the power iteration
 * (tens of ms at 20,000 files) runs in one go.
 */
export async function rankFilesPaced(
  files: readonly GraphFile[],
  recent: readonly string[],
  maybeYield: () => Promise<void> | undefined,
  signal?: AbortSignal,
): Promise<Float64Array> {
  const recentSet = new Set(recent);
  const steps = referenceGraphSteps(files, { recent: recentSet });
  let edges;
  for (;;) {
    const step = steps.next();
    if (step.done === true) {
      edges = step.value;
      break;
    }
    await maybeYield();
    throwIfAborted(signal);
  }
  const personalization = files.map((f) => (recentSet.has(f.path) ? 1 : 0));
  const anyRecent = personalization.some((v) => v > 0);
  return pagerank(files.length, edges, anyRecent ? { personalization } : {});
}
