/**
 * Resolves `reposnap.model` to a local GGUF file. A file path is checked on disk and never
 * touches the network; a model URI (`hf:user/repo:quant`, `hf:user/repo/file.gguf`,
 * `https://…`) goes through node-llama-cpp's `createModelDownloader`, which downloads it (with
 * progress and cancellation; a cancelled download resumes from the whole 5 MiB chunks in its
 * `.ipull` file, see docs/cli.md, "Model URIs") into the
 * models folder once; the file is found through the record afterwards, without the network.
 * node-llama-cpp is ESM: it is loaded with a dynamic `import()` only for URIs.
 *
 * node-llama-cpp checks a download's size, not its content: RepoSnap then checks the file's
 * SHA-256 against the digest the hub publishes (hub.ts) or against an explicit `sha256`, once per
 * file (checksum.ts); a mismatch deletes the download and fails, so the next try downloads again.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ChecksumError, recordedFile, recordVerified, verifiedSha256, verifySha256 } from './checksum';
import { makeFolder } from '../engine/state-file';
import { HUB_URI_FORMS, hubEndpoint, hubSha256, malformedModelUri, parseHubUri, type Fetch } from './hub';

/**
 * Why a model could not be resolved: `setting`, what was given is wrong (empty, a missing file,
 * a malformed URI); `download`, a download failed (the network, the hub, a corrupted file).
 */
export type ModelResolveKind = 'setting' | 'download';

/** `reposnap.model` is empty, missing, or cannot be resolved. */
export class ModelResolveError extends Error {
  constructor(
    message: string,
    /** Absolute paths of GGUF files close to a missing one's name (see {@link closeModelFiles}), best first. */
    readonly suggestions: string[] = [],
    /** See {@link ModelResolveKind}. */
    readonly kind: ModelResolveKind = 'setting',
  ) {
    super(message);
    this.name = 'ModelResolveError';
  }
}

/**
 * Whether a downloader's error means the host could not be reached at all (no network, a name
 * that does not resolve, a refused or timed-out connection): undici's `TypeError: fetch failed`,
 * which node-llama-cpp folds into its message without the cause, or a system error code.
 */
export function isUnreachable(e: unknown): boolean {
  const text = (x: unknown): string => (x instanceof Error ? `${x.message} ${(x as NodeJS.ErrnoException).code ?? ''} ${x.cause !== undefined ? text(x.cause) : ''}` : String(x));
  return /fetch failed|ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH|UND_ERR_CONNECT_TIMEOUT/.test(text(e));
}

/**
 * The host a model URI is fetched from: the hub endpoint's for `hf:` URIs (`HF_ENDPOINT`, which
 * node-llama-cpp honours too), the URL's own otherwise.
 */
export function downloadHost(uri: string, endpoint?: string): string {
  try {
    return new URL(/^(hf|huggingface):/i.test(uri.trim()) ? hubEndpoint(endpoint) : uri.trim()).host;
  } catch {
    return uri;
  }
}

/**
 * Levenshtein edit distance between `a` and `b` (insertions, deletions, substitutions, each 1),
 * over UTF-16 code units; two rows of O(|b|) memory. A dozen lines rather than a dependency:
 * it ranks a handful of file names, and the well-kept `leven` package is ESM-only and not a
 * direct dependency of the project.
 */
export function editDistance(a: string, b: string): number {
  if (a === b) return 0;
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  let cur = new Array<number>(b.length + 1);
  for (let i = 1; i <= a.length; i++) {
    cur[0] = i;
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    [prev, cur] = [cur, prev];
  }
  return prev[b.length]!;
}

/** How many close matches a missing model file's error suggests. */
export const MAX_SUGGESTIONS = 3;

/**
 * GGUF files in the folder of a missing `file` whose names are close to its name: edit distance
 * (case-insensitive) at most max(3, 40 % of the longer name), or one name containing the other;
 * nearest first (ties by name), at most {@link MAX_SUGGESTIONS}. Absolute paths; [] when the
 * folder does not exist or holds no `.gguf` file.
 */
export function closeModelFiles(file: string, limit = MAX_SUGGESTIONS): string[] {
  const dir = path.dirname(file);
  let names: string[];
  try {
    names = fs.readdirSync(dir, { withFileTypes: true }).filter((d) => d.isFile() && /\.gguf$/i.test(d.name)).map((d) => d.name);
  } catch {
    return [];
  }
  const want = path.basename(file).toLowerCase();
  return names
    .map((name) => {
      const n = name.toLowerCase();
      const d = editDistance(want, n);
      const close = d <= Math.max(3, Math.floor(0.4 * Math.max(want.length, n.length))) || (want.length >= 4 && (n.includes(want.replace(/\.gguf$/, '')) || want.includes(n.replace(/\.gguf$/, ''))));
      return { name, d, close };
    })
    .filter((x) => x.close)
    .sort((x, y) => x.d - y.d || x.name.localeCompare(y.name))
    .slice(0, limit)
    .map((x) => path.join(dir, x.name));
}

/** Download progress of a model URI (and of the checksum that follows it). */
export interface DownloadProgress {
  /** 'download' while bytes arrive, 'verify' while the file is hashed. */
  phase: 'download' | 'verify';
  downloadedBytes: number;
  totalBytes: number;
  /**
   * Bytes per second that this run fetched since it started: bytes already on disk from a
   * cancelled run (a resumed download) count in `downloadedBytes` but not here.
   */
  bytesPerSecond: number;
}

/** node-llama-cpp's `ModelDownloader`, the part resolution uses. */
export interface NlcModelDownloader {
  readonly entrypointFilePath: string;
  readonly totalSize: number;
  readonly totalFiles: number;
  /** Bytes downloaded so far; before `download()`, what a cancelled run left whole on disk. */
  readonly downloadedSize: number;
  download(options?: { signal?: AbortSignal }): Promise<string>;
  cancel(options?: { deleteTempFile?: boolean }): Promise<void>;
}

/** The part of node-llama-cpp that resolution uses (injectable for tests). */
export interface ModelDownloader {
  createModelDownloader(options: {
    modelUri: string;
    dirPath: string;
    showCliProgress: boolean;
    /** false: download to `<file>.ipull` with progress metadata, so a cancelled download resumes. */
    skipExisting: boolean;
    deleteTempFileOnCancel: boolean;
    onProgress?: (s: { totalSize: number; downloadedSize: number }) => void;
    endpoints?: { huggingFace?: string };
  }): Promise<NlcModelDownloader>;
}

/** Options of {@link resolveModel}. */
export interface ResolveOptions {
  /** Folder that downloads go to (and are found in afterwards). */
  directory: string;
  /** Base folder of relative paths (the workspace folder). */
  baseDir?: string;
  onProgress?: (p: DownloadProgress) => void;
  signal?: AbortSignal;
  /** Loads node-llama-cpp (default: dynamic import of the package). */
  loadDownloader?: () => Promise<ModelDownloader>;
  /** Expected SHA-256 (hex) of the model file; for a hub URI the hub's digest is used otherwise. */
  sha256?: string;
  /** Hugging Face endpoint (a mirror); default `$MODEL_ENDPOINT`, `$HF_ENDPOINT`, huggingface.co. */
  endpoint?: string;
  /** `fetch` for the hub's digest lookup (tests). */
  fetch?: Fetch;
  /** A file that could not be checked (no digest published, hub unreachable): the message. */
  onWarning?: (message: string) => void;
}

/** Whether `spec` is a model URI (downloaded) rather than a file path. */
export function isModelUri(spec: string): boolean {
  return /^(hf:|huggingface:|https?:\/\/)/i.test(spec.trim());
}

/** A display name for the status bar: the file name without `.gguf`, or the URI's model part. */
export function modelDisplayName(spec: string): string {
  const s = spec.trim();
  if (!s) return 'no model';
  const last = s.split(/[\\/]/).pop() ?? s;
  return last.replace(/\.gguf$/i, '').replace(/^hf:/i, '');
}

/** Expands `~` and makes a relative path absolute against `baseDir`. */
export function expandModelPath(spec: string, baseDir?: string): string {
  let p = spec.trim();
  if (p === '~' || p.startsWith('~/')) p = path.join(os.homedir(), p.slice(1));
  return path.resolve(baseDir ?? process.cwd(), p);
}

const importNodeLlamaCpp = async (): Promise<ModelDownloader> => (await import('node-llama-cpp')) as unknown as ModelDownloader;

/**
 * The local file of `spec`.
 * @throws ModelResolveError when no model is set, a file path does not exist, or a download fails.
 */
export async function resolveModel(spec: string, options: ResolveOptions): Promise<string> {
  const s = spec.trim();
  if (!s) throw new ModelResolveError('No model is set: set "reposnap.model" to a GGUF file or an hf: URI.');
  if (!isModelUri(s)) {
    const file = expandModelPath(s, options.baseDir);
    let st: fs.Stats;
    try {
      st = fs.statSync(file);
    } catch {
      const near = closeModelFiles(file);
      const hint = near.length > 0 ? ` Did you mean ${near.map((f) => `'${path.basename(f)}'`).join(', ')}?` : '';
      throw new ModelResolveError(`The model file '${file}' does not exist (reposnap.model).${hint}`, near);
    }
    if (!st.isFile()) throw new ModelResolveError(`The model path '${file}' is not a file (reposnap.model).`);
    if (options.sha256) await checkFile(file, options.sha256, options);
    return file;
  }
  const malformed = malformedModelUri(s);
  if (malformed !== undefined) throw new ModelResolveError(malformed);
  makeFolder(options.directory);
  // downloaded (and checked) before: no network
  const known = recordedFile(options.directory, s);
  if (known && (!options.sha256 || verifiedSha256(options.directory, known) === options.sha256.toLowerCase())) return known;

  const nlc = await (options.loadDownloader ?? importNodeLlamaCpp)();
  // the speed counts what this run fetches: from when download() starts, less what was on disk then
  let t0 = Date.now();
  let resumedFrom = 0;
  let file: string;
  let totalFiles = 1;
  try {
    const downloader = await nlc.createModelDownloader({
      modelUri: s,
      dirPath: options.directory,
      showCliProgress: false,
      skipExisting: false,
      deleteTempFileOnCancel: false,
      endpoints: options.endpoint ? { huggingFace: hubEndpoint(options.endpoint) } : undefined,
      onProgress: ({ totalSize, downloadedSize }) => {
        const seconds = Math.max(0.001, (Date.now() - t0) / 1000);
        options.onProgress?.({ phase: 'download', downloadedBytes: downloadedSize, totalBytes: totalSize, bytesPerSecond: Math.max(0, downloadedSize - resumedFrom) / seconds });
      },
    });
    file = downloader.entrypointFilePath;
    totalFiles = downloader.totalFiles;
    const st = fs.statSync(file, { throwIfNoEntry: false });
    if (totalFiles === 1 && st?.isFile() && st.size === downloader.totalSize) await downloader.cancel({ deleteTempFile: false });
    else {
      resumedFrom = downloader.downloadedSize;
      t0 = Date.now();
      await downloader.download({ signal: options.signal });
    }
  } catch (e) {
    if (options.signal?.aborted) throw e;
    const message = (e as Error).message;
    if (/^Invalid Hugging Face URI/i.test(message)) throw new ModelResolveError(`The model URI ${JSON.stringify(s)} is malformed (${message}): expected ${HUB_URI_FORMS}.`);
    if (isUnreachable(e)) {
      const host = downloadHost(s, options.endpoint);
      throw new ModelResolveError(
        `Cannot download the model ${JSON.stringify(s)}: ${host} could not be reached (${message}). Check the network connection (or set HF_ENDPOINT to a mirror you can reach), ` +
          `or give a local .gguf file instead (in this repository 'npm run models' fetches the pinned ones into ~/.cache/reposnap/models).`,
        [],
        'download',
      );
    }
    throw new ModelResolveError(`Cannot download the model ${JSON.stringify(s)}: ${message}`, [], 'download');
  }

  let expected = options.sha256;
  let why = `no SHA-256 is published for '${s}'`;
  if (totalFiles > 1) why = `the model is split into ${totalFiles} files`;
  else if (!expected) {
    const ref = parseHubUri(s, options.endpoint);
    try {
      expected = ref && (await hubSha256(ref, { endpoint: options.endpoint, signal: options.signal, fetch: options.fetch }));
    } catch (e) {
      if (options.signal?.aborted) throw e;
      why = `cannot get its SHA-256 from the hub (${(e as Error).message})`;
    }
  }
  if (expected) {
    await checkFile(file, expected, options, s);
  } else {
    // kept unchecked (and found again without the network), with a warning now
    options.onWarning?.(`The model file was not checked: ${why}.`);
    recordVerified(options.directory, file, undefined, s);
  }
  return file;
}

/**
 * Hashes `file` against `expected` with 'verify' progress.
 * @throws ModelResolveError on a mismatch; a download (`owned`) is deleted first.
 */
async function checkFile(file: string, expected: string, options: ResolveOptions, uri?: string): Promise<void> {
  const owned = uri !== undefined;
  const total = fs.statSync(file).size;
  const t0 = Date.now();
  try {
    await verifySha256(options.directory, file, expected, options.signal, (bytes) => {
      options.onProgress?.({ phase: 'verify', downloadedBytes: bytes, totalBytes: total, bytesPerSecond: bytes / Math.max(0.001, (Date.now() - t0) / 1000) });
    }, uri);
  } catch (e) {
    if (!(e instanceof ChecksumError)) throw e;
    if (owned) fs.rmSync(file, { force: true });
    throw new ModelResolveError(
      owned
        ? `The downloaded model is corrupted (SHA-256 ${e.actual}, the hub says ${e.expected}); it was deleted: try again to download it anew.`
        : `The model file '${file}' does not match the expected SHA-256 (${e.actual}, expected ${e.expected}).`,
      [],
      owned ? 'download' : 'setting',
    );
  }
}
