import fs from 'node:fs';
import path from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { DEFAULT_SETTINGS } from '../config/settings';
import { PACKING_OPTIONS, type PackingOption } from '../context/packing';
import { parseRpcServers } from '../engine/rpc';
import { quotePath } from './terminal-text';

/** Options of a {@link UsageError}. */
export interface UsageErrorOptions {
  /** The flag the error is about, without its dashes (`budget`): {@link ArgumentChecks} reports the first one in argument order. */
  option?: string;
  /** Whether `run 'reposnap --help' for usage` follows the message (default true; false for a failed download, not a usage problem). */
  showUsage?: boolean;
}

/** A command-line usage error: printed as one line, exit code 2. */
export class UsageError extends Error {
  /** See {@link UsageErrorOptions.option}. */
  readonly option: string | undefined;
  /** See {@link UsageErrorOptions.showUsage}. */
  readonly showUsage: boolean;

  constructor(message: string, options: UsageErrorOptions = {}) {
    super(message);
    this.name = 'UsageError';
    this.option = options.option;
    this.showUsage = options.showUsage ?? true;
  }
}

/**
 * Collects the usage errors of a command's checks, so that the one reported is the first problem
 * in argument order (`ask --budget abc` without `--model`: the budget), not the first check in
 * code order. A problem with no flag of its own (a missing question or `--model`) comes last.
 */
export class ArgumentChecks {
  private readonly found: { at: number; error: UsageError }[] = [];

  /** @param args the command's arguments, as given to {@link parseCommand}. */
  constructor(private readonly args: readonly string[]) {}

  /**
   * Runs one check.
   * @param option the flag it concerns (without dashes), used when its UsageError names none;
   *   undefined: a problem without a flag (reported after every flag's).
   * @returns the check's value, or undefined when it threw a UsageError (kept for {@link throwFirst}).
   * @throws whatever else the check throws.
   */
  check<T>(option: string | undefined, run: () => T): T | undefined {
    try {
      return run();
    } catch (e) {
      if (!(e instanceof UsageError)) throw e;
      this.found.push({ at: this.position(e.option ?? option), error: e });
      return undefined;
    }
  }

  /** Whether a check has failed. */
  get failed(): boolean {
    return this.found.length > 0;
  }

  /** @throws the UsageError of the flag given first (ties: the check run first), if any check failed. */
  throwFirst(): void {
    if (this.found.length === 0) return;
    throw this.found.reduce((a, b) => (b.at < a.at ? b : a)).error;
  }

  /** Index of `--option` (or `--option=…`) in the arguments; Infinity when absent. */
  private position(option: string | undefined): number {
    if (option === undefined) return Infinity;
    const at = this.args.findIndex((a) => a === `--${option}` || a.startsWith(`--${option}=`));
    return at < 0 ? Infinity : at;
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
    return parseArgs({ ...config, args: config.args && negativeValuesJoined(config.args, config.options ?? {}) } as T);
  } catch (e) {
    throw new UsageError((e as Error).message.trim().replace(/\s*\n\s*/g, ' '));
  }
}

/**
 * `args` with a string option followed by a value that reads as a negative number (`--budget -5`)
 * joined into one argument (`--budget=-5`): util.parseArgs refuses the first form as ambiguous,
 * and the option's own check then says its valid range. Other arguments are unchanged.
 */
function negativeValuesJoined(args: readonly string[], options: ParseArgsConfig['options'] & object): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const next = args[i + 1];
    const name = a.startsWith('--') ? a.slice(2) : undefined;
    if (name !== undefined && options[name]?.type === 'string' && next !== undefined && /^-(\d|\.\d|Infinity)/.test(next)) {
      out.push(`${a}=${next}`);
      i++;
    } else out.push(a);
  }
  return out;
}

/** A range in words: `of at least 1` when there is no upper bound, else `from 0 to 4294967295`. */
function rangeText(min: number, max: number): string {
  return max >= Number.MAX_SAFE_INTEGER ? `of at least ${min}` : `from ${min} to ${max}`;
}

/**
 * Parses an integer option.
 * @throws UsageError (its `option` `name`) when the value is not an integer within [min, max].
 */
export function intOption(name: string, value: string | undefined, def: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (value === undefined) return def;
  const n = value.trim() === '' ? NaN : Number(value);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new UsageError(`--${name} must be an integer ${rangeText(min, max)} (got '${value}')`, { option: name });
  }
  return n;
}

/**
 * Parses a number option.
 * @throws UsageError (its `option` `name`) when the value is not a finite number within [min, max].
 */
export function numberOption(name: string, value: string | undefined, def: number, min: number, max: number): number {
  if (value === undefined) return def;
  const n = value.trim() === '' ? NaN : Number(value);
  if (!Number.isFinite(n) || n < min || n > max) {
    throw new UsageError(`--${name} must be a number ${rangeText(min, max)} (got '${value}')`, { option: name });
  }
  return n;
}

/**
 * Parses `--retrieval-share`: the share of the context kept for the question's retrieval
 * section (`AskRequest.retrievalShare`), a number in [0, 1). Default: with the ranked or auto
 * packing the extension's (`reposnap.retrievalShare`, `DEFAULT_SETTINGS.retrievalShare`, 0.15),
 * so that the command line and VS Code ask the same prompt (auto uses it only when it chooses
 * ranked); otherwise 0 (retrieval quotes files the ranked packing left out of the full text).
 * @throws UsageError when the value is not a number in [0, 1).
 */
export function retrievalShareOption(value: string | undefined, packing: PackingFlag): number {
  if (value === undefined) return packing !== 'smallest-first' ? DEFAULT_SETTINGS.retrievalShare : 0;
  const n = value.trim() === '' ? NaN : Number(value);
  if (!Number.isFinite(n) || n < 0 || n >= 1) {
    throw new UsageError(`--retrieval-share must be a number with 0 <= F < 1, the share of the context for retrieved chunks (got '${value}'); e.g. --retrieval-share 0.15`, { option: 'retrieval-share' });
  }
  return n;
}

/**
 * Resolves `--repo` (default: the current directory) to an absolute path.
 * @throws UsageError when it does not exist or is not a directory (the path written by {@link quotePath}).
 */
export function repoOption(value: string | undefined): string {
  const repo = path.resolve(value ?? '.');
  let st: fs.Stats;
  try {
    st = fs.statSync(repo);
  } catch {
    throw new UsageError(`the repository ${quotePath(repo)} does not exist`, { option: 'repo' });
  }
  if (!st.isDirectory()) throw new UsageError(`the repository ${quotePath(repo)} is not a directory`, { option: 'repo' });
  return repo;
}

/**
 * Checks a `--model` that names a local file (not a model URI): it must exist and be a file.
 * @returns `spec` unchanged.
 * @throws UsageError (option `model`) naming the path as {@link quotePath} writes it.
 */
export function modelFileOption(spec: string): string {
  const st = fs.statSync(spec, { throwIfNoEntry: false });
  if (st === undefined) throw new UsageError(`the model file ${quotePath(spec)} does not exist`, { option: 'model' });
  if (!st.isFile()) throw new UsageError(`the model path ${quotePath(spec)} is not a file: give a .gguf file`, { option: 'model' });
  return spec;
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
    throw new UsageError(`--rpc: ${(e as Error).message}`, { option: 'rpc' });
  }
}

/** How `ask` and `pack` choose files: `PackOptions.packing`'s values (`PACKING_OPTIONS`, src/context/packing.ts). */
export type PackingFlag = PackingOption;

/** `--packing`'s help lines, the same in `reposnap ask --help` and `reposnap pack --help`. */
export const PACKING_HELP = `  --packing auto|smallest-first|ranked
                          how files are chosen when the repository does not fit (default auto);
                          smallest-first: the smallest files in full until the budget is used;
                          ranked: a file tree, files in full by PageRank, then a repository map of the rest;
                          auto: smallest-first when every file fits in full, else ranked (with retrieval)
`;

/**
 * Parses `--packing` for `ask` and `pack` alike (one parser, one help text: {@link PACKING_HELP}).
 * @returns `auto` when the flag is absent (`DEFAULT_SETTINGS.packing`, as the extension).
 * @throws UsageError naming the values for anything else.
 */
export function packingOption(value: string | undefined): PackingFlag {
  const packing = value ?? DEFAULT_SETTINGS.packing;
  if (!(PACKING_OPTIONS as readonly string[]).includes(packing)) throw new UsageError(`--packing must be auto, smallest-first or ranked (got '${packing}')`, { option: 'packing' });
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
      { option: 'thread' },
    );
  }
  if (threads !== undefined && !Number.isFinite(Number(threads.trim() === '' ? NaN : threads))) {
    throw new UsageError(`--threads must be a number of CPU threads (got '${threads}'); to name a conversation use --thread ${threads}`, { option: 'threads' });
  }
}
