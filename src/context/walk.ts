import { promises as fsp, type Dirent, type Stats } from 'node:fs';
import * as path from 'node:path';
import { createMatcher, extendMatcher, type IgnoreMatcher } from './gitignore';
import { errorCode, throwIfAborted } from './errors';
import { compareCodeUnits, type SkippedFile } from './types';

/** Options for `walkRepository`. */
export interface WalkOptions {
  /** Aborting rejects the walk with an AbortError (checked before each directory is read). */
  signal?: AbortSignal;
  /** Match ignore patterns case-insensitively. Default `false`, git's default on Linux. */
  ignoreCase?: boolean;
  /** Called after each directory is listed, with the number of candidate files found so far. */
  onProgress?: (filesFound: number) => void;
}

/** A regular file that is not ignored and may be packed. */
export interface WalkedFile {
  /** Path relative to the root, `/`-separated, no leading `./`. */
  path: string;
  /** Absolute path on disk (platform separators). */
  absPath: string;
}

/** What `walkRepository` found. */
export interface WalkResult {
  /** The absolute, resolved root that was walked. */
  root: string;
  /** Candidate files, sorted by `path` in code-unit order. */
  files: WalkedFile[];
  /**
   * Entries that are neither candidates nor ignored: symlinks (`'symlink'`), FIFOs, sockets
   * and devices (`'special'`), directories that could not be listed and `.gitignore` files
   * that could not be read (`'unreadable'`). Sorted by `path` in code-unit order.
   */
  skipped: SkippedFile[];
  /**
   * Number of ignored entries. An ignored directory counts once and is not entered, so the
   * files below it are not counted.
   */
  ignoredCount: number;
}

/**
 * Walks the directory tree under `root` asynchronously and returns the files that git
 * would not ignore, without reading their contents.
 *
 * Ignore rules: `.git/info/exclude` (if present) and every `.gitignore` on the way down, each
 * relative to its own directory, deeper files taking precedence, negations included. A
 * directory is tested (as `dir/`) before it is entered and an ignored directory is never
 * entered, so, as in git, a negation cannot re-include a file whose parent directory is
 * excluded. A `.gitignore` that is itself a symlink is not read (git ≥ 2.32 refuses it too).
 * The global `core.excludesFile` and git config are not consulted. Entries named `.git`
 * (directory or gitlink file) are never entered and neither listed nor counted.
 *
 * Symbolic links are never followed. Nothing is thrown for entries below the root: an
 * unreadable directory or `.gitignore` becomes a `SkippedFile`.
 *
 * Errors: rejects with the underlying fs error when `root` itself cannot be listed (e.g.
 * ENOENT, ENOTDIR, EACCES), and with an AbortError when `options.signal` is aborted.
 */
export async function walkRepository(root: string, options: WalkOptions = {}): Promise<WalkResult> {
  const { signal, onProgress } = options;
  const ignoreCase = options.ignoreCase ?? false;
  const absRoot = path.resolve(root);
  throwIfAborted(signal);

  const files: WalkedFile[] = [];
  const skipped: SkippedFile[] = [];
  let ignoredCount = 0;

  let rootMatcher = createMatcher(ignoreCase);
  const excludeText = await readOptionalText(path.join(absRoot, '.git', 'info', 'exclude'));
  if (excludeText !== undefined) {
    rootMatcher = extendMatcher(rootMatcher, excludeText, '', '.git/info/exclude', ignoreCase);
  }

  // Explicit stack instead of recursion: depth is bounded by memory, not the call stack.
  const stack: Array<{ rel: string; matcher: IgnoreMatcher }> = [{ rel: '', matcher: rootMatcher }];
  while (stack.length > 0) {
    throwIfAborted(signal);
    const { rel: dirRel, matcher: parentMatcher } = stack.pop()!;
    const dirAbs = dirRel === '' ? absRoot : path.join(absRoot, ...dirRel.split('/'));

    let entries: Dirent[];
    try {
      entries = await fsp.readdir(dirAbs, { withFileTypes: true });
    } catch (err) {
      if (dirRel === '') throw err;
      skipped.push({ path: dirRel, reason: 'unreadable', detail: `cannot list directory: ${errorCode(err)}` });
      continue;
    }
    entries.sort((a, b) => compareCodeUnits(a.name, b.name));

    let matcher = parentMatcher;
    const gitignore = entries.find((e) => e.name === '.gitignore');
    if (gitignore !== undefined && (await kindOf(gitignore, dirAbs)) === 'file') {
      const gitignoreRel = joinRel(dirRel, '.gitignore');
      try {
        const text = await fsp.readFile(path.join(dirAbs, '.gitignore'), 'utf8');
        matcher = extendMatcher(parentMatcher, text, dirRel, gitignoreRel, ignoreCase);
      } catch (err) {
        skipped.push({ path: gitignoreRel, reason: 'unreadable', detail: `cannot read ignore rules: ${errorCode(err)}` });
      }
    }

    const subdirs: string[] = [];
    for (const entry of entries) {
      if (entry.name === '.git') continue;
      const rel = joinRel(dirRel, entry.name);
      const kind = await kindOf(entry, dirAbs);
      // git treats a symlink like a file when matching patterns (a `dir/` rule does not match it).
      if (matcher.ignores(kind === 'directory' ? rel + '/' : rel)) {
        ignoredCount++;
        continue;
      }
      switch (kind) {
        case 'directory':
          subdirs.push(rel);
          break;
        case 'file':
          files.push({ path: rel, absPath: path.join(dirAbs, entry.name) });
          break;
        case 'symlink':
          skipped.push({ path: rel, reason: 'symlink', detail: 'symbolic links are not followed' });
          break;
        case 'special':
          skipped.push({ path: rel, reason: 'special', detail: 'not a regular file' });
          break;
        case 'unreadable':
          skipped.push({ path: rel, reason: 'unreadable', detail: 'cannot stat entry' });
          break;
      }
    }
    // Push in reverse so that directories are visited in name order (the result is sorted anyway).
    for (let i = subdirs.length - 1; i >= 0; i--) stack.push({ rel: subdirs[i]!, matcher });
    onProgress?.(files.length);
  }

  files.sort((a, b) => compareCodeUnits(a.path, b.path));
  skipped.sort((a, b) => compareCodeUnits(a.path, b.path));
  return { root: absRoot, files, skipped, ignoredCount };
}

type EntryKind = 'file' | 'directory' | 'symlink' | 'special' | 'unreadable';

async function kindOf(entry: Dirent, dirAbs: string): Promise<EntryKind> {
  let info: Dirent | Stats = entry;
  const known =
    entry.isFile() || entry.isDirectory() || entry.isSymbolicLink() || entry.isFIFO() ||
    entry.isSocket() || entry.isCharacterDevice() || entry.isBlockDevice();
  if (!known) {
    // DT_UNKNOWN on some file systems: ask lstat (never stat, which would follow links).
    try {
      info = await fsp.lstat(path.join(dirAbs, entry.name));
    } catch {
      return 'unreadable';
    }
  }
  if (info.isSymbolicLink()) return 'symlink';
  if (info.isDirectory()) return 'directory';
  if (info.isFile()) return 'file';
  return 'special';
}

async function readOptionalText(file: string): Promise<string | undefined> {
  try {
    const info = await fsp.lstat(file);
    if (!info.isFile()) return undefined;
    return await fsp.readFile(file, 'utf8');
  } catch {
    return undefined;
  }
}

function joinRel(dirRel: string, name: string): string {
  return dirRel === '' ? name : `${dirRel}/${name}`;
}
