import { constants as fsConstants, type Dirent, type Stats } from 'node:fs';
import * as path from 'node:path';
import { errorCode, throwIfAborted } from './errors';
import { createYielder, Limiter, nodeFs, type ContextFs } from './fsapi';
import { createMatcher, extendMatcher, type IgnoreMatcher } from './gitignore';
import { createExcludeMatcher, createIncludeMatcher } from './globs';
import { compareCodeUnits, type IgnoredEntry, type SkippedFile } from './types';

/** Default number of file-system calls the walk keeps in flight. */
export const DEFAULT_WALK_CONCURRENCY = 32;

/** Options for `walkRepository`. */
export interface WalkOptions {
  /** Aborting rejects the walk with an AbortError (checked before each fs call). */
  signal?: AbortSignal;
  /** Match ignore, exclude and include patterns case-insensitively. Default `false`, git's default on Linux. */
  ignoreCase?: boolean;
  /** Called after each directory is listed, with the number of candidate files found so far. */
  onProgress?: (filesFound: number) => void;
  /**
   * Include patterns (gitignore syntax, relative to the root). When given and not empty, only
   * files, symlinks and special files matched by one of them are kept (a pattern matching a
   * directory includes everything below it, and a later `!pattern` subtracts); directories
   * are still entered. See `createIncludeMatcher`. They never override `.gitignore` or excludes.
   */
  include?: readonly string[];
  /**
   * Exclude patterns (gitignore syntax, relative to the root), applied after `.gitignore`
   * and after the default excludes; the last matching pattern wins, so `'!dist/'` re-includes
   * what a default excluded. VS Code's `files.exclude` converts with `excludesFromVsCodeSetting`.
   */
  exclude?: readonly string[];
  /** Apply `DEFAULT_EXCLUDES` before `exclude`. Default true. */
  defaultExcludes?: boolean;
  /** The file system. Default: the real one (`nodeFs`). */
  fs?: ContextFs;
  /** File-system calls kept in flight, an integer ≥ 1. Default `DEFAULT_WALK_CONCURRENCY`. */
  concurrency?: number;
}

/** A regular file that is not ignored or excluded and may be packed. */
export interface WalkedFile {
  /** Path relative to the root, `/`-separated, no leading `./`. */
  path: string;
  /** Absolute path on disk (platform separators). */
  absPath: string;
  /** Size in bytes, from `lstat` during the walk. */
  bytes: number;
  /** Modification time in ms since the epoch, from `lstat` during the walk. */
  mtimeMs: number;
}

/** What `walkRepository` found. */
export interface WalkResult {
  /** The absolute, resolved root that was walked. */
  root: string;
  /** Candidate files, sorted by `path` in code-unit order. */
  files: WalkedFile[];
  /**
   * Entries that are neither candidates nor ignored: symlinks (`'symlink'`), FIFOs, sockets
   * and devices (`'special'`), entries that could not be listed or stat'ed, and ignore files
   * that could not be read (`'unreadable'`), files gone before they could be stat'ed
   * (`'vanished'`) or replaced by another kind of entry (`'changed'`). Sorted by `path`.
   */
  skipped: SkippedFile[];
  /** Entries left out by ignore files, excludes or includes, sorted by `path`. */
  ignored: IgnoredEntry[];
  /** `ignored.length`. An ignored directory counts once; nothing below it is counted. */
  ignoredCount: number;
}

/**
 * Walks the directory tree under `root` asynchronously and returns the files that may be
 * packed, without reading their contents (each candidate is `lstat`ed for size and mtime).
 *
 * Rules, applied to every entry in this order (the first that matches decides):
 * 1. Entries named `.git` (directory or gitlink file) are skipped silently, never entered.
 * 2. git's ignore rules → `'ignored'`: `.git/info/exclude` (if present) and every
 *    `.gitignore` on the way down, each relative to its own directory, deeper files taking
 *    precedence, negations included. A directory is tested (as `dir/`) before it is entered
 *    and an ignored directory is never entered, so, as in git, a negation cannot re-include
 *    a file whose parent directory is excluded. A `.gitignore` that is itself a symlink is
 *    not read (git ≥ 2.32 refuses it too). `core.excludesFile` and git config are not read.
 * 3. `DEFAULT_EXCLUDES` (unless `defaultExcludes: false`) then `exclude` → `'excluded'`.
 * 4. `include`, for everything but directories → `'excluded'` when not matched.
 *
 * Symbolic links are never followed, inside or outside the root (following one would
 * duplicate files packed under their own path, or leave the repository). Each is reported
 * as `'symlink'` with where it points: inside the repository, outside it, to an ancestor
 * directory (a loop if followed), a symlink cycle (ELOOP) or nowhere (dangling).
 *
 * Directories are listed concurrently (at most `concurrency` fs calls in flight); the
 * results are sorted, so they do not depend on timing. The walk yields to the event loop at
 * least every 10 ms, even on a file system whose calls never wait. Nothing is thrown for
 * entries below the root: problems become `SkippedFile`s.
 *
 * Errors: rejects with the underlying fs error when `root` itself cannot be listed (e.g.
 * ENOENT, ENOTDIR, EACCES), with `TypeError` for malformed `include`/`exclude`, and with an
 * AbortError when `options.signal` is aborted.
 */
export async function walkRepository(root: string, options: WalkOptions = {}): Promise<WalkResult> {
  const { signal, onProgress } = options;
  const fs = options.fs ?? nodeFs;
  const ignoreCase = options.ignoreCase ?? false;
  const excludeMatcher = createExcludeMatcher(options.exclude, options.defaultExcludes ?? true, ignoreCase);
  const includeMatcher = createIncludeMatcher(options.include, ignoreCase);
  const limiter = new Limiter(options.concurrency ?? DEFAULT_WALK_CONCURRENCY);
  const absRoot = path.resolve(root);
  throwIfAborted(signal);

  const files: WalkedFile[] = [];
  const skipped: SkippedFile[] = [];
  const ignored: IgnoredEntry[] = [];
  const call = <T>(task: () => Promise<T>): Promise<T> =>
    limiter.run(() => {
      throwIfAborted(signal);
      return task();
    });
  let realRoot: Promise<string> | undefined;
  const getRealRoot = (): Promise<string> => (realRoot ??= fs.realpath(absRoot));

  let rootMatcher = createMatcher(ignoreCase);
  const excludeText = await readRuleFile(fs, path.join(absRoot, '.git', 'info', 'exclude')).catch(() => undefined);
  if (excludeText !== undefined) {
    rootMatcher = extendMatcher(rootMatcher, excludeText, '', '.git/info/exclude', ignoreCase);
  }

  // with a file system that never waits, still give timers and signal handlers a turn
  const maybeYield = createYielder(10);
  const visit = async (dirRel: string, parentMatcher: IgnoreMatcher): Promise<void> => {
    await maybeYield();
    const dirAbs = dirRel === '' ? absRoot : path.join(absRoot, ...dirRel.split('/'));
    let entries: Dirent[];
    try {
      if (dirRel !== '') {
        // readdir follows symlinks: make sure the directory was not swapped for one since its
        // parent was listed (a small window remains between this lstat and the readdir).
        const info = await call(() => fs.lstat(dirAbs));
        if (!info.isDirectory()) {
          skipped.push({ path: dirRel, reason: 'changed', detail: `replaced by ${kindName(info)} during the walk; not followed` });
          return;
        }
      }
      entries = await call(() => fs.readdir(dirAbs));
    } catch (err) {
      if (dirRel === '' || (err as Error).name === 'AbortError') throw err;
      skipped.push(failure(dirRel, errorCode(err), 'directory removed during the walk', 'cannot list directory'));
      return;
    }
    entries.sort((a, b) => compareCodeUnits(a.name, b.name));

    let matcher = parentMatcher;
    let unreadableRules: string | undefined;
    const gitignore = entries.find((e) => e.name === '.gitignore');
    if (gitignore !== undefined && (await kindOf(fs, gitignore, dirAbs)) === 'file') {
      const gitignoreRel = joinRel(dirRel, '.gitignore');
      try {
        const text = await call(() => readRuleFile(fs, path.join(dirAbs, '.gitignore')));
        matcher = extendMatcher(parentMatcher, text, dirRel, gitignoreRel, ignoreCase);
      } catch (err) {
        if ((err as Error).name === 'AbortError') throw err;
        unreadableRules = gitignoreRel;
        skipped.push({ path: gitignoreRel, reason: 'unreadable', detail: `cannot read ignore rules: ${errorCode(err)}` });
      }
    }

    const subdirs: string[] = [];
    const pending: Array<Promise<void>> = [];
    for (const entry of entries) {
      if (entry.name === '.git') continue;
      const rel = joinRel(dirRel, entry.name);
      if (rel === unreadableRules) continue;
      const absPath = path.join(dirAbs, entry.name);
      const kind = await kindOf(fs, entry, dirAbs);
      const isDirectory = kind === 'directory';
      // git treats a symlink like a file when matching patterns (a `dir/` rule does not match it).
      const testPath = isDirectory ? rel + '/' : rel;
      const byGit = matcher.test(testPath);
      if (byGit.ignored) {
        ignored.push({ path: rel, isDirectory, reason: 'ignored', detail: byGit.rule?.mark ?? byGit.rule?.pattern ?? '' });
        continue;
      }
      const byExclude = excludeMatcher?.test(testPath);
      if (byExclude?.ignored) {
        ignored.push({ path: rel, isDirectory, reason: 'excluded', detail: byExclude.rule?.mark ?? byExclude.rule?.pattern ?? '' });
        continue;
      }
      if (!isDirectory && includeMatcher !== undefined && !includeMatcher(rel)) {
        ignored.push({ path: rel, isDirectory, reason: 'excluded', detail: 'not matched by include' });
        continue;
      }
      switch (kind) {
        case 'directory':
          subdirs.push(rel);
          break;
        case 'file':
          pending.push(
            call(() => fs.lstat(absPath)).then(
              (info) => {
                if (info.isFile()) files.push({ path: rel, absPath, bytes: info.size, mtimeMs: info.mtimeMs });
                else skipped.push({ path: rel, reason: 'changed', detail: `replaced by ${kindName(info)} during the walk` });
              },
              (err: unknown) => {
                if ((err as Error).name === 'AbortError') throw err;
                skipped.push(failure(rel, errorCode(err), 'removed during the walk', 'cannot stat'));
              },
            ),
          );
          break;
        case 'symlink':
          pending.push(
            call(() => describeSymlink(fs, absPath, dirRel, getRealRoot)).then((detail) => {
              skipped.push({ path: rel, reason: 'symlink', detail });
            }),
          );
          break;
        case 'special':
          skipped.push({ path: rel, reason: 'special', detail: `${specialName(entry)}; never opened` });
          break;
        case 'unreadable':
          skipped.push({ path: rel, reason: 'unreadable', detail: 'cannot stat entry' });
          break;
      }
    }
    await Promise.all(pending);
    onProgress?.(files.length);
    await Promise.all(subdirs.map((sub) => visit(sub, matcher)));
  };

  await visit('', rootMatcher);
  throwIfAborted(signal);

  files.sort((a, b) => compareCodeUnits(a.path, b.path));
  skipped.sort((a, b) => compareCodeUnits(a.path, b.path));
  ignored.sort((a, b) => compareCodeUnits(a.path, b.path));
  return { root: absRoot, files, skipped, ignored, ignoredCount: ignored.length };
}

type EntryKind = 'file' | 'directory' | 'symlink' | 'special' | 'unreadable';

async function kindOf(fs: ContextFs, entry: Dirent, dirAbs: string): Promise<EntryKind> {
  let info: Dirent | Stats = entry;
  const known =
    entry.isFile() || entry.isDirectory() || entry.isSymbolicLink() || entry.isFIFO() ||
    entry.isSocket() || entry.isCharacterDevice() || entry.isBlockDevice();
  if (!known) {
    // DT_UNKNOWN on some file systems: ask lstat (never stat, which would follow links).
    try {
      info = await fs.lstat(path.join(dirAbs, entry.name));
    } catch {
      return 'unreadable';
    }
  }
  if (info.isSymbolicLink()) return 'symlink';
  if (info.isDirectory()) return 'directory';
  if (info.isFile()) return 'file';
  return 'special';
}

function specialName(entry: Dirent | Stats): string {
  if (entry.isFIFO()) return 'FIFO (named pipe)';
  if (entry.isSocket()) return 'socket';
  if (entry.isCharacterDevice()) return 'character device';
  if (entry.isBlockDevice()) return 'block device';
  return 'not a regular file';
}

function kindName(info: Stats): string {
  if (info.isDirectory()) return 'a directory';
  if (info.isSymbolicLink()) return 'a symbolic link';
  return `a ${specialName(info)}`;
}

/**
 * Says where the symlink at `absPath` (in directory `dirRel`) points, without following it
 * for the walk: the resolved target is only compared with the root and the link's own
 * directory.
 */
async function describeSymlink(fs: ContextFs, absPath: string, dirRel: string, realRoot: () => Promise<string>): Promise<string> {
  let target: string;
  try {
    target = await fs.readlink(absPath);
  } catch (err) {
    return `symbolic link whose target cannot be read (${errorCode(err)}); not followed`;
  }
  const arrow = `-> ${target}`;
  let real: string;
  try {
    real = await fs.realpath(absPath);
  } catch (err) {
    const code = errorCode(err);
    if (code === 'ELOOP') return `symlink loop (${arrow}, ELOOP); not followed`;
    if (code === 'ENOENT' || code === 'ENOTDIR') return `dangling (${arrow}); not followed`;
    return `cannot resolve (${arrow}, ${code}); not followed`;
  }
  let rootReal: string;
  try {
    rootReal = await realRoot();
  } catch (err) {
    return `cannot resolve the repository root (${errorCode(err)}); not followed`;
  }
  const rel = path.relative(rootReal, real);
  if (rel === '..' || rel.startsWith('..' + path.sep) || path.isAbsolute(rel)) {
    return `points outside the repository (${arrow}); not followed`;
  }
  const relPosix = rel === '' ? '.' : rel.split(path.sep).join('/');
  const dirReal = dirRel === '' ? rootReal : path.join(rootReal, ...dirRel.split('/'));
  if (real === dirReal || dirReal.startsWith(real.endsWith(path.sep) ? real : real + path.sep)) {
    return `symlink loop: points to its own ancestor directory '${relPosix}' (${arrow}); not followed`;
  }
  return `points inside the repository to '${relPosix}' (${arrow}); not followed`;
}

/** Reads an ignore file as UTF-8 (lossy), refusing symlinks and anything but regular files. */
async function readRuleFile(fs: ContextFs, absPath: string): Promise<string> {
  const flags = fsConstants.O_RDONLY | (fsConstants.O_NOFOLLOW ?? 0) | (fsConstants.O_NONBLOCK ?? 0);
  const handle = await fs.open(absPath, flags);
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw Object.assign(new Error('not a regular file'), { code: 'EINVAL' });
    const buffer = Buffer.allocUnsafe(Math.min(info.size, 16 * 1024 * 1024));
    let length = 0;
    while (length < buffer.length) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    return buffer.subarray(0, length).toString('utf8');
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/**
 * The entry for a path the walk found but could not list or stat: ENOENT means it vanished,
 * unless its name holds U+FFFD, the sign of a name that is not valid UTF-8 (Node decodes
 * such names lossily, so they cannot be opened by name).
 */
function failure(rel: string, code: string, vanished: string, unreadable: string): SkippedFile {
  if (code === 'ENOENT' && rel.includes('\uFFFD')) {
    return { path: rel, reason: 'unreadable', detail: `the name is not valid UTF-8 and cannot be opened (${code})` };
  }
  if (code === 'ENOENT') return { path: rel, reason: 'vanished', detail: `${vanished} (${code})` };
  return { path: rel, reason: 'unreadable', detail: `${unreadable}: ${code}` };
}

function joinRel(dirRel: string, name: string): string {
  return dirRel === '' ? name : `${dirRel}/${name}`;
}
