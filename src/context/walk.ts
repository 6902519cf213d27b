import { constants as fsConstants, type Dirent, type Stats } from 'node:fs';
import * as path from 'node:path';
import { errorCode, throwIfAborted } from './errors';
import { createYielder, Limiter, nodeFs, type ContextFs } from './fsapi';
import { createMatcher, extendMatcher, type IgnoreMatcher } from './gitignore';
import { createExcludeMatcher, createIncludeMatcher } from './globs';
import { cacheFolderPaths, OWN_CACHE_DETAIL, ownStateFile } from './own-files';
import { findNameSecrets } from './path-secrets';
import { secretPhrase } from './secret-names';
import { compareCodeUnits, type IgnoredEntry, type SkippedFile } from './types';

/** Default number of file-system calls the walk keeps in flight. */
export const DEFAULT_WALK_CONCURRENCY = 32;

/**
 * Default bound on the entries a walk records (`WalkOptions.maxEntries`): 100,000, more than
 * the files of the largest repositories whose text could fit a model's context, yet a walk of
 * a whole disk stops early: walking `/` on the 2-core development machine took 5.4 s and
 * 117 MiB with this bound, against 31 s and 469 MiB for the whole tree (281K files).
 */
export const DEFAULT_MAX_WALK_ENTRIES = 100_000;

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
  /** Apply `SECRET_EXCLUDES` (credential files) before everything else. Default true. */
  secretExcludes?: boolean;
  /**
   * Leave out every entry whose name holds a secret (`findNameSecrets`) as `'secret'`, its path
   * reported with the secret redacted; such a folder is not entered. Default true.
   */
  secretNames?: boolean;
  /**
   * RepoSnap's cache folders in use (absolute, or relative to the working directory): the CLI's
   * `--cache-dir` root, the extension's cache root. One that lies inside the repository is left
   * out (`'excluded'`, detail `OWN_CACHE_DETAIL`), whatever the ignore, exclude and include rules
   * say; see `cacheFolderPaths`. Default none.
   */
  cacheDirs?: readonly string[];
  /** The file system. Default: the real one (`nodeFs`). */
  fs?: ContextFs;
  /** File-system calls kept in flight, an integer ≥ 1. Default `DEFAULT_WALK_CONCURRENCY`. */
  concurrency?: number;
  /**
   * The most entries the walk records (candidate files, directories entered, and every
   * skipped or ignored entry; `.git` is not counted), an integer ≥ 1 or `Infinity`. Default
   * `DEFAULT_MAX_WALK_ENTRIES`. The walk goes breadth-first, so when it stops the shallowest
   * entries are the ones kept; see `WalkResult.truncated`.
   */
  maxEntries?: number;
}

/** Why and where a walk stopped before it had seen the whole tree (`WalkOptions.maxEntries`). */
export interface WalkTruncation {
  /** The bound that was reached: the walk recorded this many entries. */
  maxEntries: number;
  /** Depth of the directory being listed when it stopped (0: the root's own entries). */
  depth: number;
  /** Directories found but never listed (a lower bound: their contents are unknown). */
  unlistedDirectories: number;
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
  /** Set when the walk stopped at `maxEntries`: the lists hold only what was seen until then. */
  truncated?: WalkTruncation;
}

/**
 * Walks the directory tree under `root` asynchronously and returns the files that may be
 * packed, without reading their contents (each candidate is `lstat`ed for size and mtime).
 *
 * Rules, applied to every entry in this order (the first that matches decides):
 * 1. Entries named `.git` (directory or gitlink file) are skipped silently, never entered.
 *    An entry whose name holds a secret (`secretNames`) → `'secret'`, its path redacted
 *    (`redactSecrets`), never entered or opened.
 *    RepoSnap's own files → `'excluded'`, whatever the later rules say: a cache folder in use
 *    (`cacheDirs`, detail `OWN_CACHE_DETAIL`), never entered, and cache entries by name
 *    (`ownStateFile`: `*.rsnp` state files and the `.json` index beside each).
 * 2. git's ignore rules → `'ignored'`: `.git/info/exclude` (if present) and every
 *    `.gitignore` on the way down, each relative to its own directory, deeper files taking
 *    precedence, negations included. A directory is tested (as `dir/`) before it is entered
 *    and an ignored directory is never entered, so, as in git, a negation cannot re-include
 *    a file whose parent directory is excluded. A `.gitignore` that is itself a symlink is
 *    not read (git ≥ 2.32 refuses it too). `core.excludesFile` and git config are not read.
 *    When `root` is a folder inside a git repository (`--repo .` in a package of a monorepo),
 *    the enclosing repository's rules apply too (`enclosingRules`: its `.git/info/exclude` and
 *    the `.gitignore` files above `root`), below the root's own, with marks like
 *    `../.gitignore:3:*.log`; unless `root` itself is ignored by them (asked for explicitly).
 * 3. `SECRET_EXCLUDES` (unless `secretExcludes: false`), `DEFAULT_EXCLUDES` (unless
 *    `defaultExcludes: false`), then `exclude` → `'excluded'`; the last matching rule wins.
 * 4. `include`, for everything but directories → `'excluded'` when not matched.
 *
 * Symbolic links are never followed, inside or outside the root (following one would
 * duplicate files packed under their own path, or leave the repository). Each is reported
 * as `'symlink'` with where it points: inside the repository, outside it, to an ancestor
 * directory (a loop if followed), a symlink cycle (ELOOP) or nowhere (dangling).
 *
 * The walk is breadth-first: the directories of one depth are listed concurrently (at most
 * `concurrency` directories and `concurrency` fs calls in flight) and their entries are taken
 * in path order, so the result never depends on timing. Once `maxEntries` entries are recorded
 * the walk stops at the next one, in that same order, and says so in `truncated`: the same
 * tree always gives the same (truncated) result. The walk yields to the event loop at least
 * every 10 ms, even on a file system whose calls never wait. Nothing is thrown for entries
 * below the root: problems become `SkippedFile`s.
 *
 * Errors: rejects with the underlying fs error when `root` itself cannot be listed (e.g.
 * ENOENT, ENOTDIR, EACCES), with `TypeError` for malformed `include`/`exclude`, with
 * `PatternError` for an `include`/`exclude` pattern that can never match, with `RangeError`
 * for a bad `concurrency` or `maxEntries`, and with an AbortError when `options.signal` is
 * aborted.
 */
export async function walkRepository(root: string, options: WalkOptions = {}): Promise<WalkResult> {
  const { signal, onProgress } = options;
  const fs = options.fs ?? nodeFs;
  const ignoreCase = options.ignoreCase ?? false;
  const maxEntries = options.maxEntries ?? DEFAULT_MAX_WALK_ENTRIES;
  if (!(maxEntries === Infinity || (Number.isSafeInteger(maxEntries) && maxEntries >= 1))) {
    throw new RangeError(`maxEntries must be an integer >= 1 or Infinity, got ${String(maxEntries)}`);
  }
  const excludeMatcher = createExcludeMatcher(options.exclude, {
    defaults: options.defaultExcludes ?? true,
    secrets: options.secretExcludes ?? true,
    ignoreCase,
  });
  const includeMatcher = createIncludeMatcher(options.include, ignoreCase);
  const secretNames = options.secretNames ?? true;
  const concurrency = options.concurrency ?? DEFAULT_WALK_CONCURRENCY;
  const limiter = new Limiter(concurrency);
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
  const outer = await enclosingRules(fs, absRoot, ignoreCase);
  const ownCache = await cacheFolderPaths(fs, absRoot, options.cacheDirs ?? []);

  // with a file system that never waits, still give timers and signal handlers a turn
  const maybeYield = createYielder(10);

  /**
   * Lists one directory and classifies at most `room` of its entries (in name order; the
   * rest could not be recorded anyway). Returns what it found, in name order, for the
   * caller to record.
   */
  const visit = async (dir: Directory, room: number): Promise<Found[]> => {
    await maybeYield();
    const { rel: dirRel, matcher: parentMatcher } = dir;
    const dirAbs = dirRel === '' ? absRoot : path.join(absRoot, ...dirRel.split('/'));
    let entries: Dirent[];
    try {
      if (dirRel !== '') {
        // readdir follows symlinks: make sure the directory was not swapped for one since its
        // parent was listed (a small window remains between this lstat and the readdir).
        const info = await call(() => fs.lstat(dirAbs));
        if (!info.isDirectory()) {
          return [{ kind: 'skipped', entry: { path: dirRel, reason: 'changed', detail: `replaced by ${kindName(info)} during the walk; not followed` } }];
        }
      }
      entries = await call(() => fs.readdir(dirAbs));
    } catch (err) {
      if (dirRel === '' || (err as Error).name === 'AbortError') throw err;
      return [{ kind: 'skipped', entry: failure(dirRel, errorCode(err), 'directory removed during the walk', 'cannot list directory') }];
    }
    entries = entries.filter((e) => e.name !== '.git').sort((a, b) => compareCodeUnits(a.name, b.name));
    const names = new Set(entries.map((e) => e.name));
    const nameSecrets = secretNames && entries.length > 0 ? await findNameSecrets(entries.map((e) => e.name)) : undefined;

    let matcher = parentMatcher;
    let unreadableRules: { rel: string; code: string } | undefined;
    const found: Array<Found | Promise<Found>> = [];
    const gitignore = entries.find((e) => e.name === '.gitignore');
    if (gitignore !== undefined && (await kindOf(fs, gitignore, dirAbs)) === 'file') {
      const gitignoreRel = joinRel(dirRel, '.gitignore');
      try {
        const text = await call(() => readRuleFile(fs, path.join(dirAbs, '.gitignore')));
        matcher = extendMatcher(parentMatcher, text, dirRel, gitignoreRel, ignoreCase);
      } catch (err) {
        if ((err as Error).name === 'AbortError') throw err;
        unreadableRules = { rel: gitignoreRel, code: errorCode(err) };
      }
    }

    for (const [index, entry] of entries.entries()) {
      if (found.length >= room) break;
      const nameSecret = nameSecrets?.get(index);
      if (nameSecret !== undefined) {
        const detail = `the name holds ${secretPhrase(nameSecret.rule)} (secret rules run over each path); shown redacted, never opened`;
        found.push({ kind: 'skipped', entry: { path: joinRel(dirRel, nameSecret.redacted), reason: 'secret', detail } });
        continue;
      }
      const rel = joinRel(dirRel, entry.name);
      if (rel === unreadableRules?.rel) {
        found.push({ kind: 'skipped', entry: { path: rel, reason: 'unreadable', detail: `cannot read ignore rules: ${unreadableRules.code}` } });
        continue;
      }
      const absPath = path.join(dirAbs, entry.name);
      const kind = await kindOf(fs, entry, dirAbs);
      const isDirectory = kind === 'directory';
      // git treats a symlink like a file when matching patterns (a `dir/` rule does not match it).
      const testPath = isDirectory ? rel + '/' : rel;
      const own = isDirectory ? (ownCache.has(rel) ? OWN_CACHE_DETAIL : undefined) : kind === 'file' ? ownStateFile(entry.name, names) : undefined;
      if (own !== undefined) {
        found.push({ kind: 'ignored', entry: { path: rel, isDirectory, reason: 'excluded', detail: own } });
        continue;
      }
      let byGit = matcher.test(testPath);
      // the root's own rules decide when they match (deeper files win); else the enclosing repository's
      if (outer !== undefined && !byGit.ignored && !byGit.unignored) byGit = outer.matcher.test(`${outer.prefix}/${testPath}`);
      if (byGit.ignored) {
        found.push({ kind: 'ignored', entry: { path: rel, isDirectory, reason: 'ignored', detail: byGit.rule?.mark ?? byGit.rule?.pattern ?? '' } });
        continue;
      }
      const byExclude = excludeMatcher?.test(testPath);
      if (byExclude?.ignored) {
        found.push({ kind: 'ignored', entry: { path: rel, isDirectory, reason: 'excluded', detail: byExclude.rule?.mark ?? byExclude.rule?.pattern ?? '' } });
        continue;
      }
      if (!isDirectory && includeMatcher !== undefined && !includeMatcher(rel)) {
        found.push({ kind: 'ignored', entry: { path: rel, isDirectory, reason: 'excluded', detail: 'not matched by include' } });
        continue;
      }
      switch (kind) {
        case 'directory':
          found.push({ kind: 'directory', dir: { rel, matcher, depth: dir.depth + 1 } });
          break;
        case 'file':
          found.push(
            call(() => fs.lstat(absPath)).then(
              (info): Found =>
                info.isFile()
                  ? { kind: 'file', file: { path: rel, absPath, bytes: info.size, mtimeMs: info.mtimeMs } }
                  : { kind: 'skipped', entry: { path: rel, reason: 'changed', detail: `replaced by ${kindName(info)} during the walk` } },
              (err: unknown): Found => {
                if ((err as Error).name === 'AbortError') throw err;
                return { kind: 'skipped', entry: failure(rel, errorCode(err), 'removed during the walk', 'cannot stat') };
              },
            ),
          );
          break;
        case 'symlink':
          found.push(call(() => describeSymlink(fs, absPath, dirRel, getRealRoot)).then((detail): Found => ({ kind: 'skipped', entry: { path: rel, reason: 'symlink', detail } })));
          break;
        case 'special':
          found.push({ kind: 'skipped', entry: { path: rel, reason: 'special', detail: `${specialName(entry)}; never opened` } });
          break;
        case 'unreadable':
          found.push({ kind: 'skipped', entry: { path: rel, reason: 'unreadable', detail: 'cannot stat entry' } });
          break;
      }
    }
    return Promise.all(found);
  };

  // Breadth-first, one depth at a time; within a depth the directories are taken in path
  // order, with up to `concurrency` of them being listed ahead of the one being recorded.
  let recorded = 0;
  let truncated: WalkTruncation | undefined;
  let level: Directory[] = [{ rel: '', matcher: rootMatcher, depth: 0 }];
  while (level.length > 0 && truncated === undefined) {
    level.sort((a, b) => compareCodeUnits(a.rel, b.rel));
    const next: Directory[] = [];
    const visits: Array<Promise<Found[]> | undefined> = new Array(level.length);
    let launched = 0;
    for (let i = 0; i < level.length && truncated === undefined; i++) {
      for (; launched < level.length && launched < i + concurrency; launched++) {
        // what this directory could add at most: the room left before any earlier one records
        const pending = visit(level[launched]!, maxEntries - recorded + 1);
        pending.catch(() => undefined); // rethrown below when its turn comes
        visits[launched] = pending;
      }
      const found = await visits[i]!;
      visits[i] = undefined;
      for (const item of found) {
        if (recorded >= maxEntries) {
          truncated = { maxEntries, depth: level[i]!.depth, unlistedDirectories: level.length - i - 1 + next.length };
          break;
        }
        recorded++;
        if (item.kind === 'file') files.push(item.file);
        else if (item.kind === 'skipped') skipped.push(item.entry);
        else if (item.kind === 'ignored') ignored.push(item.entry);
        else next.push(item.dir);
      }
      onProgress?.(files.length);
    }
    level = next;
  }
  throwIfAborted(signal);

  files.sort((a, b) => compareCodeUnits(a.path, b.path));
  skipped.sort((a, b) => compareCodeUnits(a.path, b.path));
  ignored.sort((a, b) => compareCodeUnits(a.path, b.path));
  return { root: absRoot, files, skipped, ignored, ignoredCount: ignored.length, ...(truncated !== undefined ? { truncated } : {}) };
}

/** A directory to list: its path relative to the root, the ignore rules of its parent, its depth. */
interface Directory {
  rel: string;
  matcher: IgnoreMatcher;
  depth: number;
}

/** One entry a directory listing found, classified. */
type Found =
  | { kind: 'file'; file: WalkedFile }
  | { kind: 'skipped'; entry: SkippedFile }
  | { kind: 'ignored'; entry: IgnoredEntry }
  | { kind: 'directory'; dir: Directory };

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

/** The ignore rules of the git repository that encloses a walk's root (see `enclosingRules`). */
interface EnclosingRules {
  /** The rules of its `.git/info/exclude` and of each `.gitignore` above the root, relative to its top. */
  matcher: IgnoreMatcher;
  /** The root's path relative to that top, `/`-separated (never empty). */
  prefix: string;
}

/**
 * The ignore rules that git applies to `absRoot`'s entries from above it, when `absRoot` lies
 * inside a git repository without being its top: the nearest ancestor holding a `.git` entry (a
 * folder, or a gitlink file of a worktree or submodule) is the top; its `.git/info/exclude` (a
 * folder's only) and the `.gitignore` of the top and of every folder down to `absRoot`'s parent
 * are compiled relative to the top (`extendMatcher`), each marked with its path relative to
 * `absRoot` (`../.gitignore`). Returns `undefined` when `absRoot` holds `.git` itself, when no
 * ancestor does, or when the rules ignore `absRoot` itself (someone who points at an ignored
 * folder, a `dist/` or a dependency, asks for it). Unreadable rule files are passed over.
 */
async function enclosingRules(fs: ContextFs, absRoot: string, ignoreCase: boolean): Promise<EnclosingRules | undefined> {
  const hasGit = (dir: string): Promise<boolean> => fs.lstat(path.join(dir, '.git')).then(() => true, () => false);
  if (await hasGit(absRoot)) return undefined;
  let top: string | undefined;
  for (let dir = path.dirname(absRoot); ; dir = path.dirname(dir)) {
    if (await hasGit(dir)) {
      top = dir;
      break;
    }
    if (path.dirname(dir) === dir) return undefined;
  }
  const prefix = path.relative(top, absRoot).split(path.sep).join('/');
  const parts = prefix.split('/');
  const up = (depth: number): string => Array.from({ length: parts.length - depth }, () => '..').join('/');
  let matcher = createMatcher(ignoreCase);
  const exclude = await readRuleFile(fs, path.join(top, '.git', 'info', 'exclude')).catch(() => undefined);
  if (exclude !== undefined) matcher = extendMatcher(matcher, exclude, '', `${up(0)}/.git/info/exclude`, ignoreCase);
  for (let depth = 0; depth < parts.length; depth++) {
    const base = parts.slice(0, depth).join('/');
    const text = await readRuleFile(fs, path.join(top, ...parts.slice(0, depth), '.gitignore')).catch(() => undefined);
    if (text !== undefined) matcher = extendMatcher(matcher, text, base, `${up(depth)}/.gitignore`, ignoreCase);
  }
  if (matcher.test(`${prefix}/`).ignored) return undefined;
  return { matcher, prefix };
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
