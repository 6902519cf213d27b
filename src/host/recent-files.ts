/**
 * The files the user has open, as the ranked packing's `recentFiles` (issue 15): paths relative
 * to the workspace folder, never contents. Plain TypeScript (no `vscode` import): the service
 * passes the file-system paths of the window's open tabs and visible editors.
 */
import path from 'node:path';

/** Most paths passed per question: PageRank's personalization needs a few, not every tab of a long session. */
export const MAX_RECENT_FILES = 64;

/**
 * The open files inside `folder`, relative to it and `/`-separated, without duplicates, sorted
 * (code-unit order, so that the same set of tabs gives the same ranking and the same cached
 * prefix whatever the tab order), at most `max` (the first ones in that order).
 * @param folder absolute path of the workspace folder (the repository packed).
 * @param openPaths absolute file-system paths of open documents; paths outside `folder`, the
 *   folder itself and paths through `..` are dropped.
 * @throws RangeError when `max` is not an integer ≥ 0.
 */
export function recentFilesIn(folder: string, openPaths: Iterable<string>, max = MAX_RECENT_FILES): string[] {
  if (!Number.isInteger(max) || max < 0) throw new RangeError(`max must be an integer >= 0, got ${max}`);
  const out = new Set<string>();
  for (const p of openPaths) {
    const rel = path.relative(folder, p);
    if (rel === '' || rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel)) continue;
    out.add(rel.split(path.sep).join('/'));
  }
  return [...out].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).slice(0, max);
}
