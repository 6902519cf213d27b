/**
 * A repository's git history per file, for the prompt order `'git'` (pack-order.ts, issue 30):
 * how often and how recently each file changed, and which files differ from `HEAD` now. Read
 * with the `git` command in a child process (`git log`, `git ls-tree`: metadata only; nothing in
 * the repository is run: signatures, fsmonitor, pagers, textconv and external diff are turned
 * off on the command line). No git, no repository, a timeout or any failure: `undefined`, and
 * the caller orders by mtime.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';

/** Commits read at most (newest first): the decayed counts of older ones are below 2^-20 at the default half-life. */
export const MAX_HISTORY_COMMITS = 1000;

/** The longest a `git` call may take [ms]; past it the history is treated as unavailable. */
const GIT_TIMEOUT_MS = 10_000;

/** One file's history in the commits read. */
export interface FileHistory {
  /** Commits that changed the file. */
  commits: number;
  /** Index of the newest commit that changed it (0 = `HEAD`, 1 = its parent in log order, …). */
  newest: number;
  /** Commit time of that commit [ms since the epoch]. */
  lastChangeMs: number;
  /** Indices (as `newest`) of every commit that changed the file, newest first. */
  indices: number[];
}

/** What {@link readGitHistory} found. */
export interface GitHistory {
  /** Per path relative to the packed root (`/`-separated): its history; files never committed are absent. */
  files: Map<string, FileHistory>;
  /** Commits read (≤ {@link MAX_HISTORY_COMMITS}). */
  commits: number;
  /** Per path relative to the packed root: the blob id (SHA-1, hex) `HEAD` holds for it. */
  headBlobs: Map<string, string>;
}

/** Runs `git` with the options that keep a repository's configuration from running anything. */
function git(cwd: string, args: string[], signal?: AbortSignal): Promise<string> {
  const safe = ['-c', 'core.fsmonitor=false', '-c', 'log.showSignature=false', '-c', 'core.quotePath=false', '--no-pager'];
  return new Promise((resolve, reject) => {
    execFile(
      'git',
      [...safe, ...args],
      {
        cwd,
        timeout: GIT_TIMEOUT_MS,
        maxBuffer: 256 * 1024 * 1024,
        encoding: 'utf8',
        ...(signal !== undefined ? { signal } : {}),
        env: { ...process.env, GIT_TERMINAL_PROMPT: '0', GIT_OPTIONAL_LOCKS: '0', GIT_PAGER: 'cat', LC_ALL: 'C' },
        windowsHide: true,
      },
      (err, stdout) => (err ? reject(err) : resolve(stdout)),
    );
  });
}

/**
 * Parses `git log --name-only -z --format=%x01%ct` output: commits newest first, each the commit
 * time [s] and the paths it changed. Exported for tests.
 */
export function parseLog(out: string): { timeMs: number; paths: string[] }[] {
  const commits: { timeMs: number; paths: string[] }[] = [];
  for (const chunk of out.split('\x01')) {
    if (chunk === '') continue;
    const fields = chunk.split('\0');
    const time = Number(fields[0]);
    if (!Number.isFinite(time)) continue;
    const paths = fields
      .slice(1)
      .map((p) => p.replace(/^\n/, ''))
      .filter((p) => p !== '');
    commits.push({ timeMs: time * 1000, paths });
  }
  return commits;
}

/** Folds a parsed log (newest first) into per-file histories. Exported for tests. */
export function historiesOf(commits: readonly { timeMs: number; paths: readonly string[] }[]): Map<string, FileHistory> {
  const files = new Map<string, FileHistory>();
  commits.forEach((c, i) => {
    for (const p of new Set(c.paths)) {
      const h = files.get(p);
      if (h) {
        h.commits++;
        h.indices.push(i);
      } else files.set(p, { commits: 1, newest: i, lastChangeMs: c.timeMs, indices: [i] });
    }
  });
  return files;
}

/**
 * Reads the history of the files under `root` (a folder inside a git work tree; paths come back
 * relative to it): the last {@link MAX_HISTORY_COMMITS} commits of `HEAD`'s first-parent history
 * that touch it, a merge by what it changed against its first parent (`git log --first-parent -m
 * --relative --no-renames --name-only`: the changes as they reached this branch; a rename counts as
 * a delete and an add), and the blob ids of `HEAD`'s files (`git ls-tree -r`), so that a file edited since the last
 * commit can be told apart from one that is not (`isDirty`).
 * @returns undefined when `root` is not in a git work tree, `git` is missing, has no commit, or
 *   fails or takes over 10 s (the caller falls back to mtime order). Never throws, except an
 *   AbortError when `signal` aborts.
 */
export async function readGitHistory(root: string, signal?: AbortSignal): Promise<GitHistory | undefined> {
  try {
    const log = await git(root, ['log', `-n${MAX_HISTORY_COMMITS}`, '--first-parent', '-m', '--no-renames', '--no-textconv', '--no-ext-diff', '--relative', '--name-only', '-z', '--format=%x01%ct', 'HEAD', '--', '.'], signal);
    const tree = await git(root, ['ls-tree', '-r', '-z', 'HEAD'], signal);
    const commits = parseLog(log);
    const headBlobs = new Map<string, string>();
    for (const entry of tree.split('\0')) {
      // "<mode> blob <sha>\t<path>" (paths relative to the current directory, under it)
      const tab = entry.indexOf('\t');
      if (tab < 0) continue;
      const [, type, sha] = entry.slice(0, tab).split(' ');
      if (type === 'blob' && sha !== undefined) headBlobs.set(entry.slice(tab + 1), sha);
    }
    return { files: historiesOf(commits), commits: commits.length, headBlobs };
  } catch (e) {
    if (signal?.aborted) throw e;
    return undefined;
  }
}

/** git's blob id of `bytes` (SHA-1 of `blob <size>\0` and the bytes), hex. */
export function gitBlobId(bytes: Uint8Array): string {
  return createHash('sha1').update(`blob ${bytes.length}\0`).update(bytes).digest('hex');
}

/**
 * Whether the file at `path` (relative to the packed root) with these raw bytes differs from what
 * `HEAD` holds: true for a file `HEAD` lacks (new, untracked) or whose blob id differs (edited
 * since the last commit; also a checkout whose line endings or filters change the bytes).
 */
export function isDirty(history: GitHistory, path: string, bytes: Uint8Array): boolean {
  const head = history.headBlobs.get(path);
  return head === undefined || head !== gitBlobId(bytes);
}
