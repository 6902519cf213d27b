/**
 * The ranked packing's `recentFiles` (issue 15): the files the user saved in this window, as
 * paths relative to the workspace folder, never contents. Plain TypeScript (no `vscode` import):
 * the service passes the file-system paths of saved documents.
 *
 * Why saved files and not open tabs: `recentFiles` personalizes the PageRank that chooses the
 * cached prefix's files, so whatever changes it invalidates the prefix. Opening or closing a tab
 * changes nothing in the repository, and must not cost a prefill of the whole repository; a save
 * changes the repository (the prefix changes from the saved file's section on anyway), and is the
 * clearest sign of the files the user works on. Unsaved edits do not count either (they are not
 * in the packed files).
 */
import path from 'node:path';

/** Most paths passed per question: PageRank's personalization needs a few, not every file of a long session. */
export const MAX_RECENT_FILES = 64;

/**
 * The files inside `folder` among `paths`, relative to it and `/`-separated, without duplicates,
 * sorted (code-unit order, so that the same set gives the same ranking and the same cached
 * prefix whatever the order), at most `max` (the first ones in that order).
 * @param folder absolute path of the workspace folder (the repository packed).
 * @param paths absolute file-system paths; paths outside `folder`, the folder itself and paths
 *   through `..` are dropped.
 * @throws RangeError when `max` is not an integer ≥ 0.
 */
export function recentFilesIn(folder: string, paths: Iterable<string>, max = MAX_RECENT_FILES): string[] {
  if (!Number.isInteger(max) || max < 0) throw new RangeError(`max must be an integer >= 0, got ${max}`);
  const out = new Set<string>();
  for (const p of paths) {
    const rel = path.relative(folder, p);
    if (rel === '' || rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel)) continue;
    out.add(rel.split(path.sep).join('/'));
  }
  return [...out].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).slice(0, max);
}

/**
 * The files saved in this window, most recently saved last; the service notes each save
 * (`vscode.workspace.onDidSaveTextDocument`, `file:` documents) and asks `recentIn` for the
 * `recentFiles` of a question. Opening, closing or switching tabs does not change it. Keeps at
 * most `keep` paths (the least recently saved are forgotten first).
 */
export class RecentSaves {
  private readonly saved = new Set<string>();

  /** @param keep the most paths remembered, an integer ≥ 1 (default 4 × `MAX_RECENT_FILES`); throws `RangeError` otherwise. */
  constructor(private readonly keep = 4 * MAX_RECENT_FILES) {
    if (!Number.isInteger(keep) || keep < 1) throw new RangeError(`keep must be an integer >= 1, got ${keep}`);
  }

  /** Notes a save of the file at the absolute file-system path `fsPath`. */
  noteSaved(fsPath: string): void {
    this.saved.delete(fsPath);
    this.saved.add(fsPath);
    while (this.saved.size > this.keep) this.saved.delete(this.saved.values().next().value!);
  }

  /**
   * The `recentFiles` for `folder`: the `max` most recently saved files inside it, then in
   * code-unit order (`recentFilesIn`). Throws `RangeError` when `max` is not an integer ≥ 0.
   */
  recentIn(folder: string, max = MAX_RECENT_FILES): string[] {
    if (!Number.isInteger(max) || max < 0) throw new RangeError(`max must be an integer >= 0, got ${max}`);
    const latest: string[] = [];
    for (const p of [...this.saved].reverse()) {
      if (latest.length >= max) break;
      const [rel] = recentFilesIn(folder, [p], 1);
      if (rel !== undefined && !latest.includes(rel)) latest.push(rel);
    }
    return latest.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  }
}
