import { buildReferenceGraph, type GraphFile } from './graph';
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
