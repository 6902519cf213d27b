/**
 * The order of the files in the packed prompt (`PackOptions.order`, `reposnap.order`, `--order`):
 * the prefix cache (KV cache) holds up to the first changed token, so files that change rarely
 * should come first (issue 30, strategy (a) "exact suffix"). Three orders:
 *
 * - `'git'`: by git history. Files unchanged since `HEAD` come first, the one whose last change
 *   is oldest in the first-parent log first ({@link DEFAULT_GIT_RANK}; or by a commit count decayed
 *   by age, `'decayed-count'`), ties by path; then the files edited since the last commit or never
 *   committed, least recently modified first (as `'mtime'`), so that a file being edited sits at
 *   the end, its next save costs only its own tokens, and committing it moves nothing. Not a git
 *   work tree (or git missing): `'mtime'`. Measured on 50 real commits (bench/edits/replay.ts,
 *   docs/benchmarks.md): within 1 % of `'mtime'`; the decayed count costs 38–127 % more.
 * - `'mtime'`: least recently modified first, ties by path (a checkout or `touch` moves files).
 * - `'path'`: code-unit order of the relative path.
 */
import { readFile } from 'node:fs/promises';
import * as path from 'node:path';
import { isDirty, readGitHistory, type GitHistory } from './git-history';
import { compareCodeUnits } from './types';

/** The prompt orders; see the file's comment. */
export const PACK_ORDERS = ['git', 'mtime', 'path'] as const;

/** One of {@link PACK_ORDERS}. */
export type PackOrder = (typeof PACK_ORDERS)[number];

/**
 * Half-life of a commit's weight in the `'git'` order's `'decayed-count'` rank [commits]: a file's
 * score is Σ 0.5^(k / H) over the commits that changed it (k = 0 for `HEAD`). Scaling every score by
 * the same factor when a commit is added keeps the order of the files it did not touch. Of 10, 50
 * and ∞ (a plain count) measured by bench/edits/replay.ts, 10 cost the least, 50 the middle; the
 * rank itself is not the default (see {@link DEFAULT_GIT_RANK}).
 */
export const DEFAULT_HALF_LIFE_COMMITS = 50;

/**
 * How the `'git'` order ranks the files unchanged since `HEAD`: `'last-change'`, oldest last
 * commit first (ties by path: the files of one commit keep the order they had while edited); `'decayed-count'`, fewest decayed commits first (ties
 * by the older last change).
 */
export type GitRank = 'last-change' | 'decayed-count';

/** The `'git'` order's rank, chosen by bench/edits/replay.ts (docs/benchmarks.md). */
export const DEFAULT_GIT_RANK: GitRank = 'last-change';

/** What an ordered file needs. */
export interface OrderedFile {
  /** Path relative to the root, `/`-separated. */
  path: string;
  /** Modification time [ms since the epoch]. */
  mtimeMs: number;
}

/** The decayed commit count of a file (see {@link DEFAULT_HALF_LIFE_COMMITS}); 0 for one never committed. */
export function changeScore(history: GitHistory, rel: string, halfLife = DEFAULT_HALF_LIFE_COMMITS): number {
  const h = history.files.get(rel);
  if (!h) return 0;
  let s = 0;
  for (const k of h.indices) s += Math.pow(0.5, k / halfLife);
  return s;
}

/** `'mtime'`'s comparison: least recently modified first, ties by path. */
export function compareMtime(a: OrderedFile, b: OrderedFile): number {
  return a.mtimeMs - b.mtimeMs || compareCodeUnits(a.path, b.path);
}

/**
 * Sorts `files` for the prompt in `order` (a new array; `files` is not changed).
 * @param root the packed root (absolute); `'git'` reads its history and each file's bytes (to
 *   compare with `HEAD`'s blob).
 * @returns the files and the order used: `'git'` without a readable history is `'mtime'`.
 * @throws AbortError when `signal` aborts while git runs.
 */
export async function orderFiles<F extends OrderedFile>(root: string, files: readonly F[], order: PackOrder, options: { signal?: AbortSignal; halfLife?: number; rank?: GitRank } = {}): Promise<{ files: F[]; order: PackOrder }> {
  if (order === 'path') return { files: [...files].sort((a, b) => compareCodeUnits(a.path, b.path)), order };
  if (order === 'mtime') return { files: [...files].sort(compareMtime), order };
  const history = await readGitHistory(root, options.signal);
  if (!history) return { files: [...files].sort(compareMtime), order: 'mtime' };
  const halfLife = options.halfLife ?? DEFAULT_HALF_LIFE_COMMITS;
  const rank = options.rank ?? DEFAULT_GIT_RANK;
  const keyed = await Promise.all(
    files.map(async (f) => {
      let dirty = true;
      try {
        dirty = isDirty(history, f.path, await readFile(path.join(root, ...f.path.split('/'))));
      } catch {
        // gone or unreadable since it was packed: treat as being edited
      }
      const h = history.files.get(f.path);
      // the last change by its place in the first-parent log (commit times need not increase along it)
      return { f, dirty, score: dirty ? 0 : changeScore(history, f.path, halfLife), last: h ? -h.newest : -Infinity };
    }),
  );
  keyed.sort((a, b) => {
    if (a.dirty !== b.dirty) return a.dirty ? 1 : -1;
    if (a.dirty) return compareMtime(a.f, b.f);
    if (rank === 'last-change') return a.last - b.last || compareCodeUnits(a.f.path, b.f.path);
    return a.score - b.score || a.last - b.last || compareCodeUnits(a.f.path, b.f.path);
  });
  return { files: keyed.map((k) => k.f), order: 'git' };
}
