/**
 * Fixture repositories for the packer tests: each test generates its own tree in a fresh
 * temp directory, removed after the test.
 */
import { mkdir, mkdtemp, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { nodeFs, type ContextFileHandle, type ContextFs } from '../../src/context/fsapi';
import { packRepository, type PackOptions, type PackResult, type SkipReason } from '../../src/context/pack';

/** A fixture entry: file content, or a symlink whose target is given verbatim. */
export type Entry = string | Uint8Array | { symlink: string };

/** The part of node:test's context the helpers need. */
export interface TestContext {
  after: (fn: () => Promise<void>) => void;
}

/** Creates an empty temp directory, removed after the test. */
export async function makeTempDir(t: TestContext, prefix = 'reposnap-context-'): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * Builds a fixture repository in a fresh temp dir; paths use `/`, parents are created.
 * Every file and symlink gets the same mtime (2001-09-09), so that the default mtime order
 * is the path order unless a test sets mtimes itself.
 */
export async function makeRepo(t: TestContext, tree: Record<string, Entry>): Promise<string> {
  const root = await makeTempDir(t);
  await writeTree(root, tree);
  return root;
}

/** Writes `tree` under `root` (see `makeRepo`). */
export async function writeTree(root: string, tree: Record<string, Entry>): Promise<void> {
  for (const [rel, entry] of Object.entries(tree)) {
    const abs = path.join(root, ...rel.split('/'));
    await mkdir(path.dirname(abs), { recursive: true });
    if (typeof entry === 'object' && 'symlink' in entry) {
      await symlink(entry.symlink, abs);
    } else {
      await writeFile(abs, entry);
      await utimes(abs, FIXED_TIME, FIXED_TIME);
    }
  }
}

/** The mtime fixtures get, in seconds since the epoch. */
export const FIXED_TIME = 1_000_000_000;

/** Characters / 4, rounded up: a stand-in tokenizer. */
export const quarterChars = (text: string): number => Math.ceil(text.length / 4);

/** `packRepository` with no budget and `quarterChars`, plus `options`. */
export function pack(root: string, options: Partial<PackOptions> = {}): Promise<PackResult> {
  return packRepository(root, { tokenBudget: Infinity, countTokens: quarterChars, ...options });
}

/** The manifest as plain data: included paths in prompt order; skipped and ignored [path, reason] pairs by path (directories end with `/`). */
export interface Manifest {
  files: string[];
  skipped: Array<[string, SkipReason]>;
  ignored: Array<[string, SkipReason]>;
}

/** Extracts the `Manifest` of a result. */
export function manifest(result: PackResult): Manifest {
  return {
    files: result.files.map((f) => f.path),
    skipped: result.skipped.map((s): [string, SkipReason] => [s.path, s.reason]),
    ignored: result.ignored.map((e): [string, SkipReason] => [e.isDirectory ? e.path + '/' : e.path, e.reason]),
  };
}

/** The detail of the skipped entry at `p` (fails the test when there is none). */
export function detailOf(result: PackResult, p: string): string {
  const entry = result.skipped.find((s) => s.path === p) ?? result.ignored.find((e) => e.path === p);
  if (entry === undefined) throw new Error(`no skipped or ignored entry for ${p}`);
  return entry.detail ?? '';
}

/** The section format, written out independently of `formatFileSection`. */
export function expectedSection(p: string, content: string): string {
  return `${p}\n\`\`\`\n${content}${content === '' || content.endsWith('\n') ? '' : '\n'}\`\`\`\n`;
}

/** Simulated failures, keyed by absolute path; values are errno codes such as `'EACCES'`. */
export interface Faults {
  readdir?: Record<string, string>;
  lstat?: Record<string, string>;
  open?: Record<string, string>;
  /** `read` on the open file fails. */
  read?: Record<string, string>;
  /** `fstat` on the open file reports a new mtime this many times (the file "keeps changing"). */
  changing?: Record<string, number>;
}

function fsError(code: string, syscall: string, p: string): Error {
  return Object.assign(new Error(`${code}: simulated failure, ${syscall} '${p}'`), { code, syscall, path: p });
}

/**
 * The real file system with `faults` injected: the way to test failures that cannot be
 * produced for real when the tests run as root (root reads files whatever their mode).
 */
export function faultyFs(faults: Faults): ContextFs {
  const changes = new Map(Object.entries(faults.changing ?? {}));
  return {
    readdir: async (p) => {
      const code = faults.readdir?.[p];
      if (code !== undefined) throw fsError(code, 'scandir', p);
      return nodeFs.readdir(p);
    },
    lstat: async (p) => {
      const code = faults.lstat?.[p];
      if (code !== undefined) throw fsError(code, 'lstat', p);
      return nodeFs.lstat(p);
    },
    realpath: (p) => nodeFs.realpath(p),
    readlink: (p) => nodeFs.readlink(p),
    open: async (p, flags) => {
      const code = faults.open?.[p];
      if (code !== undefined) throw fsError(code, 'open', p);
      const handle = await nodeFs.open(p, flags);
      const wrapped: ContextFileHandle = {
        stat: async () => {
          const info = await handle.stat();
          const left = changes.get(p) ?? 0;
          if (left <= 0) return info;
          changes.set(p, left - 1);
          // a copy with a later mtime, keeping the Stats prototype (isFile() and friends)
          return Object.assign(Object.create(Object.getPrototypeOf(info) as object) as typeof info, info, { mtimeMs: info.mtimeMs + left });
        },
        read: async (buffer, offset, length, position) => {
          const code = faults.read?.[p];
          if (code !== undefined) throw fsError(code, 'read', p);
          return handle.read(buffer, offset, length, position);
        },
        close: () => handle.close(),
      };
      return wrapped;
    },
  };
}
