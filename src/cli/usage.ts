import fs from 'node:fs';
import path from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { DEFAULT_SETTINGS } from '../config/settings';
import { parseRpcServers } from '../engine/rpc';

/** A command-line usage error: printed as one line, exit code 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/**
 * Parses a command's arguments with Node's `util.parseArgs` (strict: an unknown flag or a flag
 * without its value is an error).
 * @param config parseArgs' configuration (`args`, `options`, `allowPositionals`).
 * @returns parseArgs' result: `values` by flag name, `positionals`.
 * @throws UsageError with parseArgs' message for an unknown or malformed flag, its lines joined
 *   into one (Node writes three for a value that starts with a dash, `--max-tokens -5`).
 */
export function parseCommand<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (e) {
    throw new UsageError((e as Error).message.trim().replace(/\s*\n\s*/g, ' '));
  }
}

/**
 * Parses an integer option.
 * @throws UsageError when the value is not an integer within [min, max].
 */
export function intOption(name: string, value: string | undefined, def: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (value === undefined) return def;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new UsageError(`--${name} must be an integer in [${min}, ${max}] (got '${value}')`);
  }
  return n;
}

/**
 * Parses a number option.
 * @throws UsageError when the value is not a finite number within [min, max].
 */
export function numberOption(name: string, value: string | undefined, def: number, min: number, max: number): number {
  if (value === undefined) return def;
  const n = Number(value);
  if (!Number.isFinite(n) || n < min || n > max) {
    throw new UsageError(`--${name} must be a number in [${min}, ${max}] (got '${value}')`);
  }
  return n;
}

/**
 * Parses `--retrieval-share`: the share of the context kept for the question's retrieval
 * section (`AskRequest.retrievalShare`), a number in [0, 1). Default: with the ranked packing the
 * extension's (`reposnap.retrievalShare`, `DEFAULT_SETTINGS.retrievalShare`, 0.15), so that the
 * command line and VS Code ask the same prompt; otherwise 0 (retrieval quotes files the ranked
 * packing left out of the full text).
 * @throws UsageError when the value is not a number in [0, 1).
 */
export function retrievalShareOption(value: string | undefined, packing: 'smallest-first' | 'ranked'): number {
  if (value === undefined) return packing === 'ranked' ? DEFAULT_SETTINGS.retrievalShare : 0;
  const n = value.trim() === '' ? NaN : Number(value);
  if (!Number.isFinite(n) || n < 0 || n >= 1) {
    throw new UsageError(`--retrieval-share must be a number with 0 <= F < 1, the share of the context for retrieved chunks (got '${value}'); e.g. --retrieval-share 0.15`);
  }
  return n;
}

/**
 * Resolves `--repo` (default: the current directory) to an absolute path.
 * @throws UsageError when it does not exist or is not a directory.
 */
export function repoOption(value: string | undefined): string {
  const repo = path.resolve(value ?? '.');
  let st: fs.Stats;
  try {
    st = fs.statSync(repo);
  } catch {
    throw new UsageError(`the repository '${repo}' does not exist`);
  }
  if (!st.isDirectory()) throw new UsageError(`the repository '${repo}' is not a directory`);
  return repo;
}

/**
 * Parses `--rpc host:port[,host:port…]`: llama.cpp RPC servers for the model's layers.
 * @returns the endpoints in order ([] when the flag is absent).
 * @throws UsageError naming the first malformed or repeated endpoint.
 */
export function rpcOption(value: string | undefined): string[] {
  if (value === undefined) return [];
  try {
    return parseRpcServers(value.split(',').filter((e) => e.trim() !== ''));
  } catch (e) {
    throw new UsageError(`--rpc: ${(e as Error).message}`);
  }
}

/** `--packing`'s values, in `PackOptions.packing`'s words. */
export const PACKINGS = ['smallest-first', 'ranked'] as const;

/** How `ask` and `pack` choose files ({@link PACKINGS}). */
export type PackingFlag = (typeof PACKINGS)[number];

/** `--packing`'s help lines, the same in `reposnap ask --help` and `reposnap pack --help`. */
export const PACKING_HELP = `  --packing smallest-first|ranked
                          how files are chosen when the repository does not fit (default smallest-first);
                          ranked: a file tree, files in full by PageRank, then a repository map of the rest
`;

/**
 * Parses `--packing` for `ask` and `pack` alike (one parser, one help text: {@link PACKING_HELP}).
 * @returns `smallest-first` when the flag is absent.
 * @throws UsageError naming the values for anything else.
 */
export function packingOption(value: string | undefined): PackingFlag {
  const packing = value ?? 'smallest-first';
  if (!(PACKINGS as readonly string[]).includes(packing)) throw new UsageError(`--packing must be ${PACKINGS.join(' or ')} (got '${packing}')`);
  return packing as PackingFlag;
}

/**
 * Checks `--thread <id>` and `--threads <n>` against each other's shape, as they are one letter
 * apart: a thread id of digits only (`--thread 4`) is refused as a likely `--threads 4`, and a
 * `--threads` value that is not a number (`--threads review`) as a likely `--thread review`,
 * each with a usage error that names the other flag (a thread id needs a letter, `-` or `_`).
 * @param thread `--thread`'s value, if given.
 * @param threads `--threads`' value, if given (its range is checked by {@link intOption} after this).
 * @throws UsageError as above.
 */
export function checkThreadFlags(thread: string | undefined, threads: string | undefined): void {
  if (thread !== undefined && /^\s*[+-]?\d+(\.\d*)?\s*$/.test(thread)) {
    throw new UsageError(
      `--thread ${thread}: a thread id of digits only looks like a thread count; for the number of CPU threads use --threads ${thread.trim()}, for a conversation give an id with a letter (e.g. --thread t${thread.trim()})`,
    );
  }
  if (threads !== undefined && !Number.isFinite(Number(threads.trim() === '' ? NaN : threads))) {
    throw new UsageError(`--threads must be a number of CPU threads (got '${threads}'); to name a conversation use --thread ${threads}`);
  }
}
