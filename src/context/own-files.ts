/**
 * RepoSnap's own files, which the walk always leaves out: the cache folder a question uses
 * (`--cache-dir`, the extension's store under the cache root; src/cache/location.ts) when it lies
 * inside the repository, and cache entries found anywhere in it (a copied or old cache folder),
 * recognised by name. Packing them would put KV state, transcripts and fingerprints into the
 * prompt, and since every question writes there, the repository would change at each question
 * and the cached prefix never fully hit.
 */
import * as path from 'node:path';
import type { ContextFs } from './fsapi';

/** The `IgnoredEntry.detail` of a cache folder in use (`WalkOptions.cacheDirs`). */
export const OWN_CACHE_DETAIL = "RepoSnap's cache";

/** File extension of RepoSnap's KV state files (src/engine/state-file.ts; magic `RSNP`). */
export const STATE_FILE_EXTENSION = '.rsnp';

/**
 * The paths, relative to the walk's root (`/`-separated), of those of `cacheDirs` that lie strictly
 * inside it. Each folder is compared as given (resolved against the working directory) and by its
 * real path against the root's real path, so that a symlinked root or cache folder is still
 * recognised; a folder that does not exist yet is compared through its nearest existing ancestor.
 * The root itself, or a cache folder that holds the root, is not listed (someone who points at
 * such a folder asks for it). Never rejects: a path that cannot be resolved is compared as given.
 */
export async function cacheFolderPaths(fs: ContextFs, absRoot: string, cacheDirs: readonly string[]): Promise<Set<string>> {
  const found = new Set<string>();
  if (cacheDirs.length === 0) return found;
  const realRoot = await fs.realpath(absRoot).catch(() => absRoot);
  for (const dir of cacheDirs) {
    const abs = path.resolve(dir);
    const real = await realPathOf(fs, abs);
    for (const [base, target] of [
      [absRoot, abs],
      [realRoot, real],
      [absRoot, real],
    ] as const) {
      const rel = path.relative(base, target);
      if (rel === '' || rel === '..' || rel.startsWith('..' + path.sep) || path.isAbsolute(rel)) continue;
      found.add(rel.split(path.sep).join('/'));
    }
  }
  return found;
}

/** `abs` with symlinks resolved through its nearest existing ancestor (the rest appended as is). */
async function realPathOf(fs: ContextFs, abs: string): Promise<string> {
  const rest: string[] = [];
  for (let dir = abs; ; dir = path.dirname(dir)) {
    try {
      return path.join(await fs.realpath(dir), ...rest.reverse());
    } catch {
      if (path.dirname(dir) === dir) return abs;
      rest.push(path.basename(dir));
    }
  }
}

/**
 * Why a file named `name`, in a folder whose entries are named `siblings`, is one of RepoSnap's
 * cache entries, or `undefined`: a KV state file (`<id>.rsnp`), or the index or transcript beside
 * one (`<id>.json` next to `<id>.rsnp`; src/cache/store.ts). Pure; matches names only, so such a
 * file is left out without being opened.
 */
export function ownStateFile(name: string, siblings: ReadonlySet<string>): string | undefined {
  if (name.endsWith(STATE_FILE_EXTENSION)) return "RepoSnap's KV state file";
  if (name.endsWith('.json') && siblings.has(name.slice(0, -'.json'.length) + STATE_FILE_EXTENSION)) {
    return `RepoSnap's cache index (beside ${name.slice(0, -'.json'.length)}${STATE_FILE_EXTENSION})`;
  }
  return undefined;
}
