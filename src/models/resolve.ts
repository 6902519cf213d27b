/**
 * Resolves `reposnap.model` to a local GGUF file. A file path is checked on disk and never
 * touches the network; a model URI (`hf:user/repo:quant`, `hf:user/repo/file.gguf`,
 * `https://…`) goes through node-llama-cpp's `resolveModelFile`, which downloads it (with
 * progress, resume and cancellation) into the models folder once and returns the cached file
 * afterwards. node-llama-cpp is ESM: it is loaded with a dynamic `import()` only for URIs.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** `reposnap.model` is empty, missing, or cannot be resolved. */
export class ModelResolveError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ModelResolveError';
  }
}

/** Download progress of a model URI. */
export interface DownloadProgress {
  downloadedBytes: number;
  totalBytes: number;
  /** Bytes per second since the download started. */
  bytesPerSecond: number;
}

/** The part of node-llama-cpp that resolution uses (injectable for tests). */
export interface ModelDownloader {
  resolveModelFile(
    uri: string,
    options: {
      directory: string;
      download: 'auto';
      cli: boolean;
      signal?: AbortSignal;
      onProgress?: (s: { totalSize: number; downloadedSize: number }) => void;
    },
  ): Promise<string>;
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
      throw new ModelResolveError(`The model file '${file}' does not exist (reposnap.model).`);
    }
    if (!st.isFile()) throw new ModelResolveError(`The model path '${file}' is not a file (reposnap.model).`);
    return file;
  }
  fs.mkdirSync(options.directory, { recursive: true });
  const downloader = await (options.loadDownloader ?? importNodeLlamaCpp)();
  const t0 = Date.now();
  try {
    return await downloader.resolveModelFile(s, {
      directory: options.directory,
      download: 'auto',
      cli: false,
      signal: options.signal,
      onProgress: ({ totalSize, downloadedSize }) => {
        const seconds = Math.max(0.001, (Date.now() - t0) / 1000);
        options.onProgress?.({ downloadedBytes: downloadedSize, totalBytes: totalSize, bytesPerSecond: downloadedSize / seconds });
      },
    });
  } catch (e) {
    if (options.signal?.aborted) throw e;
    throw new ModelResolveError(`Cannot resolve the model '${s}': ${(e as Error).message}`);
  }
}
