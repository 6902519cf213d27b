import { throwIfAborted, raceAbort } from './errors';
import { DEFAULT_MAX_FILE_BYTES, readTextFile, type FileVerdict, type TextEncodingName } from './filter';
import { createYielder, type ContextFs } from './fsapi';
import { FileSecretVerdicts, secretDetail } from './secrets';
import { countUpTo } from './prefix-count';
import { formatFileSection } from './section';
import { compareCodeUnits, type IgnoredEntry, type SkippedFile } from './types';
import { DEFAULT_MAX_WALK_ENTRIES, walkRepository, type WalkedFile, type WalkTruncation } from './walk';
import { processTagsCache, type TagsCache } from './map/cache';
import { DEFAULT_RANKED_SHARES, packRanked, type MappedFile, type PackSection, type RankedShares } from './ranked';
import type { Chunk } from './retrieve/chunks';
import { PACKING_OPTIONS, type Packing, type PackingOption } from './packing';
import { orderFiles, PACK_ORDERS, type PackOrder } from './pack-order';

export type { IgnoredEntry, SkipReason, SkippedFile } from './types';
export type { TextEncodingName } from './filter';
export type { MappedFile, PackSection, RankedShares } from './ranked';
export type { Chunk } from './retrieve/chunks';
export { PACKING_OPTIONS, type Packing, type PackingOption } from './packing';
export { FileSecretVerdicts } from './secrets';

/**
 * The order of the sections in the packed prompt (`PackResult.files`); see pack-order.ts:
 * `'git'` (rarely changed files first, by git history; no git: `'mtime'`), `'mtime'` (default:
 * least recently modified first, ties by path; an edited file moves to the end, so the prompt
 * before its old position is unchanged and a prefix cache stays valid up to there) or `'path'`.
 */
export type { PackOrder } from './pack-order';

/** Options for `packRepository`. */
export interface PackOptions {
  /**
   * Tokens available for all file sections together (as counted by `countTokens`, summed
   * per section). Must be a number ≥ 0; `Infinity` means no limit.
   */
  tokenBudget: number;
  /**
   * The model's tokenizer: the number of tokens in `text` (a whole formatted section). May
   * be async. Must return a finite number ≥ 0. Errors it throws reject `packRepository`.
   */
  countTokens: (text: string) => number | Promise<number>;
  /**
   * Per-file cap in bytes; larger files are skipped as `'too-large'` (or `'binary'`,
   * `'generated'`, `'minified'` when their first 8 KiB say so). Default 262144 (256 KiB).
   */
  maxFileBytes?: number;
  /**
   * Aborting rejects `packRepository` with an `AbortError` (engine/errors.ts; the signal's
   * reason when it is one, else a new one with the reason as its `cause`), also while waiting
   * for `countTokens` or the file system. The packer yields to the event loop at least every
   * 10 ms of work, so an abort from a timer or signal handler is seen even while a
   * synchronous `countTokens` keeps it busy.
   */
  signal?: AbortSignal;
  /**
   * Progress callback. `'walk'`: `done` = candidate files found so far (no `total`), after
   * each directory. `'read'`: `done` of `total` candidate files read and classified.
   * `'tokenize'`: `done` sections tokenized (no `total`; tokenizing stops once the budget is
   * used up); inside a long section (a prefix tried, or over 1M characters), also `section`:
   * its path and the characters about to be tokenized, of its length (`countUpTo`).
   * Errors it throws reject `packRepository`.
   */
  onProgress?: (p: { phase: 'walk' | 'read' | 'tokenize'; done: number; total?: number; section?: { path: string; chars: number; of: number } }) => void;
  /**
   * Only pack files matched by one of these patterns (gitignore syntax, relative to the
   * root: `src/`, `*.ts`, `/README.md`; the last matching pattern decides and `!src/gen/`
   * subtracts). Absent or empty: every file. Never overrides `.gitignore` or excludes. See
   * `createIncludeMatcher`.
   */
  include?: readonly string[];
  /**
   * Extra exclude patterns (gitignore syntax, relative to the root), evaluated after the
   * default excludes with the last match winning: `'*.md'` excludes, `'!dist/'` re-includes
   * a default-excluded directory. VS Code's `files.exclude` converts with
   * `excludesFromVsCodeSetting`.
   */
  exclude?: readonly string[];
  /** Apply `DEFAULT_EXCLUDES` (lockfiles, build output, dependencies, bundles). Default true. */
  defaultExcludes?: boolean;
  /**
   * Leave out secrets. Default true: credential files by name (`SECRET_EXCLUDES`: `.env`,
   * keys, registry and cloud credentials, …; `'excluded'`, never read, applied even with
   * `defaultExcludes: false`; a negation in `exclude` such as `'!.env.example'` brings one
   * back), and any file whose content holds a high-confidence secret (`'secret'`; see
   * `findSecret`). Only files about to be tokenized are scanned. Names too: an entry whose
   * file or folder name holds a secret is left out (`'secret'`, path redacted; `findNameSecrets`).
   */
  skipSecrets?: boolean;
  /** Leave out minified and generated files (`'minified'`, `'generated'`). Default true. */
  skipGenerated?: boolean;
  /**
   * The most entries the walk records before it stops (see `WalkOptions.maxEntries`), an
   * integer ≥ 1 or `Infinity`. Default `DEFAULT_MAX_WALK_ENTRIES` (100,000). When it is
   * reached the pack covers only the part of the tree seen so far (breadth-first, so the
   * shallowest files) and `PackResult.notices` says so.
   */
  maxWalkEntries?: number;
  /** Section order; see `PackOrder` (pack-order.ts). Default `'mtime'`. */
  order?: PackOrder;
  /** Match patterns case-insensitively. Default false (git's default on Linux). */
  ignoreCase?: boolean;
  /**
   * RepoSnap's cache folders in use (the CLI's `--cache-dir`, the extension's cache root): left out
   * of the walk when inside the repository (see `WalkOptions.cacheDirs`). Default none.
   */
  cacheDirs?: readonly string[];
  /** The file system. Default: the real one. Tests inject failures through it. */
  fs?: ContextFs;
  /** File reads kept in flight ahead of tokenization, an integer ≥ 1. Default 16. */
  readAhead?: number;
  /** How files are chosen; see `PackingOption`. Default `'smallest-first'` (the product's default, `'auto'`, is passed by the CLI and the extension). */
  packing?: PackingOption;
  /**
   * `'auto'` only: the token budget when auto packs ranked, a number in [0, `tokenBudget`]
   * [tokens]; the pipeline keeps the retrieval section's room out of it, as it does for an explicit
   * `'ranked'`. Whether smallest-first fits is always decided against `tokenBudget`. Default
   * `tokenBudget`.
   */
  rankedTokenBudget?: number;
  /**
   * `'ranked'` only: paths (relative to the root, `/`-separated) of files the user has open or
   * edited recently; PageRank is personalized towards them. Default none (uniform).
   */
  recentFiles?: readonly string[];
  /** `'ranked'` only: budget shares of the tree and of the files in full; see `RankedShares`. */
  rankedShares?: RankedShares;
  /**
   * `'ranked'` only: the parse cache (by content hash). Pass the same cache to every pack of a
   * window or process so that only edited files are parsed again. Default: the process's
   * (`processTagsCache`).
   */
  tagsCache?: TagsCache;
}

/** One file included in the packed prompt. */
export interface PackedFile {
  /** Path relative to the repository root, `/`-separated. */
  path: string;
  /** Size of the file on disk, in bytes. */
  bytes: number;
  /** Tokens of `text`, as returned by `countTokens`. */
  tokens: number;
  /** The formatted section (`formatFileSection(path, content)`), ending with a newline. */
  text: string;
  /** Modification time of the content packed, in ms since the epoch. */
  mtimeMs: number;
  /** The encoding the content was decoded from (see `decodeText`). */
  encoding: TextEncodingName;
  /** What was done to the bytes (BOM removed, CRLF → LF, decoded as Shift_JIS (detected, confidence 100)); may be empty. */
  notes: string[];
}

/**
 * Something about a pack as a whole that the user should be told next to the manifest.
 * `'walk-limit'`: the walk stopped at `maxWalkEntries` entries, so files beyond them were
 * never considered (`truncation` says where).
 */
export interface PackNotice {
  code: 'walk-limit';
  /** One line for humans, naming the bound and how to narrow the repository. */
  message: string;
  /** Where the walk stopped. */
  truncation: WalkTruncation;
}

/** What `packRepository` produced: the manifest of the repository. */
export interface PackResult {
  /** The absolute, resolved repository root. */
  root: string;
  /** Included files, in prompt order (see `PackOrder`). */
  files: PackedFile[];
  /**
   * Every section of the prompt, in prompt order; concatenating their `text` gives the prompt.
   * `'smallest-first'`: the files' sections (as `files`). `'ranked'`: the file tree (when any of
   * it fits), the files in full (as `files`), then the repository map (when any of it fits).
   */
  sections: PackSection[];
  /** `'ranked'` only: files whose definitions are in the repository map, by rank; else empty. */
  mapped: MappedFile[];
  /**
   * `'ranked'` only: the chunks (functions, methods, small types, module-level constants; see `chunksOf`) of parsed files not in full,
   * for question-time retrieval (`retrieveChunks`); else empty.
   */
  retrievable: Chunk[];
  /**
   * The secret decision on each file, made once on its whole text (`FileSecretVerdicts`):
   * question-time retrieval asks it before quoting a chunk of `retrievable` (`retrieveChunks`),
   * so that a file with a secret anywhere is never quoted, and reports such a file as this pack
   * reports its own (`skippedEntry`; see `withRetrievalSkips`).
   */
  secrets: FileSecretVerdicts;
  /** How files were chosen (with `packing: 'auto'`, the one auto chose). */
  packing: Packing;
  /**
   * true when `packing` was chosen by `PackOptions.packing: 'auto'` (smallest-first: every
   * packable file fit `tokenBudget` in full; ranked: one did not).
   */
  auto: boolean;
  /** Files (and directories) looked at but not included, with reasons, in code-unit order of `path`. */
  skipped: SkippedFile[];
  /** Entries left out by `.gitignore`, excludes or includes (never read), in code-unit order of `path`. */
  ignored: IgnoredEntry[];
  /** Sum of `sections[i].tokens`, in tokens; always ≤ `tokenBudget`. */
  totalTokens: number;
  /** Sum of `files[i].bytes`, in bytes. */
  totalBytes: number;
  /** `ignored.length`. An ignored directory counts as one entry (it is not entered); `.git` is not counted. */
  ignoredCount: number;
  /** The order of `files` (`'git'` asked without a readable git history is `'mtime'`). */
  order: PackOrder;
  /** The budget packed against, in tokens (`Infinity` when unlimited); auto's ranked: `rankedTokenBudget`. */
  tokenBudget: number;
  /** Notices about the whole pack (empty when there is nothing to say); see `PackNotice`. */
  notices: PackNotice[];
}

/** Tokens a section has at least with real tokenizers (a header line and two fences). */
const MIN_SECTION_TOKENS = 4;

/**
 * Safety margin of the "cannot fit" estimate: a file is left untokenized only when half the
 * lowest token density seen so far already exceeds the tokens left.
 */
const ESTIMATE_MARGIN = 0.5;

/** Sections longer than this (UTF-16 code units) report progress inside their tokenization (`PackOptions.onProgress`'s `section`). */
const LONG_SECTION_CHARS = 1_000_000;

/** Longest stretch of work between two turns of the event loop, in ms. */
const YIELD_EVERY_MS = 10;

/** Default number of file reads in flight ahead of tokenization. */
const READ_AHEAD = 16;

/**
 * Packs the repository at `root` into formatted file sections that fit a token budget.
 *
 * 1. Walk (`walkRepository`): `.gitignore` at every level, `.git/info/exclude`, then the
 *    default excludes, `exclude` and `include`; `.git` is never entered; symlinks, FIFOs,
 *    sockets and devices are reported, never followed or opened.
 *    Credential files (`SECRET_EXCLUDES`) are excluded by name. The walk stops after
 *    `maxWalkEntries` entries, with a notice.
 * 2. Read and classify each candidate (`readTextFile`): binary, too large, empty, minified,
 *    generated, unreadable, vanished or changed during the pack are skipped with a reason.
 * 3. Fit the budget. Files are considered in *keep rank*: smallest on disk first, ties by
 *    fewer directory levels, then path. Each text file is formatted (`formatFileSection`)
 *    scanned for secrets (`findSecret`; a hit is skipped as `'secret'`, with the rule and the
 *    line but never the value), tokenized (`countTokens`) and kept while the running total
 *    stays ≤ `tokenBudget`;
 *    one that does not fit is skipped as `'over-budget'` and the next is tried. So when the
 *    repository is larger than the budget, the largest files are dropped first (ties: the
 *    deepest, then the last by path) and as many files as possible are kept. Files that
 *    cannot fit are skipped without being tokenized, to save the tokenizer's time: all of
 *    them once fewer tokens are left than the smallest section so far (at most 4), and any
 *    whose content is so long that even half the lowest tokens-per-character ratio seen so
 *    far exceeds the tokens left (their detail says "not tokenized"). A long section is
 *    tokenized a prefix at a time (`countUpTo`): once a prefix alone needs more tokens than
 *    are left, the rest is never tokenized ("not tokenized in full").
 * 4. Order the kept sections for the prompt (`order`, default least recently modified
 *    first; see `PackOrder`).
 *
 * With `packing: 'ranked'`, step 3 is `packRanked`'s instead. With `packing: 'auto'`, step 3 runs
 * as smallest-first's until the first file left out as `'over-budget'`: none, and the result is
 * smallest-first's (`auto: true`); one, and the walked files are packed ranked against
 * `rankedTokenBudget`, reusing what the smallest-first pass read (texts and reads in flight: no file
 * is read twice; `'read'` progress goes on from where it was) and its secret verdicts.
 *
 * Units: sizes in bytes, budget and counts in tokens. `totalTokens` is the sum of per-section
 * counts, which may differ slightly from the token count of the concatenated sections.
 *
 * Errors: rejects with `RangeError`/`TypeError` for invalid options or a `countTokens`
 * result that is not a finite number ≥ 0; with `PatternError` (one line, naming the option
 * and the pattern) for an `include`/`exclude` pattern that can never match; with the fs
 * error if `root` cannot be listed;
 * with an AbortError (`name === 'AbortError'`) when `signal` aborts; with whatever
 * `countTokens` or `onProgress` throw. Problems with individual entries never reject: they
 * are reported in `skipped`.
 */
export async function packRepository(root: string, options: PackOptions): Promise<PackResult> {
  const { tokenBudget, countTokens, signal, onProgress } = options;
  const maxFileBytes = options.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES;
  const order = options.order ?? 'mtime';
  const readAhead = options.readAhead ?? READ_AHEAD;
  if (typeof tokenBudget !== 'number' || Number.isNaN(tokenBudget) || tokenBudget < 0) {
    throw new RangeError(`tokenBudget must be a number >= 0, got ${String(tokenBudget)}`);
  }
  if (!Number.isSafeInteger(maxFileBytes) || maxFileBytes < 0) {
    throw new RangeError(`maxFileBytes must be an integer >= 0, got ${String(maxFileBytes)}`);
  }
  if (!(PACK_ORDERS as readonly string[]).includes(order)) throw new RangeError(`order must be 'git', 'mtime' or 'path', got ${String(order)}`);
  if (!Number.isInteger(readAhead) || readAhead < 1) throw new RangeError(`readAhead must be an integer >= 1, got ${String(readAhead)}`);
  if (typeof countTokens !== 'function') throw new TypeError('countTokens must be a function');
  const skipSecrets = options.skipSecrets ?? true;
  const maxWalkEntries = options.maxWalkEntries ?? DEFAULT_MAX_WALK_ENTRIES;
  const packing = options.packing ?? 'smallest-first';
  const secrets = new FileSecretVerdicts(skipSecrets);
  if (!PACKING_OPTIONS.includes(packing)) throw new RangeError(`packing must be 'auto', 'smallest-first' or 'ranked', got ${String(packing)}`);
  const rankedTokenBudget = options.rankedTokenBudget ?? tokenBudget;
  if (typeof rankedTokenBudget !== 'number' || !(rankedTokenBudget >= 0 && rankedTokenBudget <= tokenBudget)) {
    throw new RangeError(`rankedTokenBudget must be a number in [0, tokenBudget = ${String(tokenBudget)}], got ${String(rankedTokenBudget)}`);
  }
  const shares = { ...DEFAULT_RANKED_SHARES, ...options.rankedShares };
  if (!(shares.tree >= 0 && shares.tree <= 1 && shares.full >= 0 && shares.full <= 1)) {
    throw new RangeError(`rankedShares.tree and rankedShares.full must be in [0, 1], got ${String(shares.tree)} and ${String(shares.full)}`);
  }
  if (!(shares.smallest >= 0 && shares.smallest <= shares.full)) {
    throw new RangeError(`rankedShares.smallest must be in [0, rankedShares.full = ${String(shares.full)}], got ${String(shares.smallest)}`);
  }
  throwIfAborted(signal);

  const walked = await walkRepository(root, {
    ...(signal !== undefined ? { signal } : {}),
    ...(options.include !== undefined ? { include: options.include } : {}),
    ...(options.exclude !== undefined ? { exclude: options.exclude } : {}),
    ...(options.defaultExcludes !== undefined ? { defaultExcludes: options.defaultExcludes } : {}),
    ...(options.ignoreCase !== undefined ? { ignoreCase: options.ignoreCase } : {}),
    ...(options.fs !== undefined ? { fs: options.fs } : {}),
    ...(options.cacheDirs !== undefined ? { cacheDirs: options.cacheDirs } : {}),
    secretExcludes: skipSecrets,
    secretNames: skipSecrets,
    maxEntries: maxWalkEntries,
    onProgress: (filesFound) => onProgress?.({ phase: 'walk', done: filesFound }),
  });
  const notices: PackNotice[] = [];
  if (walked.truncated !== undefined) notices.push(walkLimitNotice(walked.truncated));
  const candidates = [...walked.files].sort(compareKeepRank);
  const total = candidates.length;
  /** The ranked packing of the walked files against `budget`. */
  const packRankedResult = async (budget: number, auto: boolean, handover?: { reads: ReadonlyArray<Promise<FileVerdict> | undefined>; readReported: number }): Promise<PackResult> => {
    const ranked = await packRanked({
      ...handover,
      candidates,
      tokenBudget: budget,
      countTokens,
      maxFileBytes,
      skipGenerated: options.skipGenerated ?? true,
      secrets,
      readAhead,
      recentFiles: options.recentFiles ?? [],
      shares,
      tagsCache: options.tagsCache ?? processTagsCache(),
      ...(signal !== undefined ? { signal } : {}),
      ...(options.fs !== undefined ? { fs: options.fs } : {}),
      ...(onProgress !== undefined ? { onProgress } : {}),
    });
    const ordered = await orderFiles(walked.root, ranked.full.map((f) => ({ path: f.path, bytes: f.bytes, tokens: f.tokens, text: f.text, mtimeMs: f.mtimeMs, encoding: f.verdict.encoding, notes: f.verdict.notes })), order, signal !== undefined ? { signal } : {});
    const files: PackedFile[] = ordered.files;
    const sections: PackSection[] = [
      ...(ranked.tree.text !== '' ? [{ kind: 'tree' as const, text: ranked.tree.text, tokens: ranked.tree.tokens }] : []),
      ...files.map((f) => ({ kind: 'file' as const, path: f.path, text: f.text, tokens: f.tokens })),
      ...(ranked.map.text !== '' ? [{ kind: 'map' as const, text: ranked.map.text, tokens: ranked.map.tokens }] : []),
    ];
    const skipped = [...walked.skipped, ...ranked.skipped].sort((a, b) => compareCodeUnits(a.path, b.path));
    return {
      root: walked.root,
      files,
      sections,
      mapped: ranked.mapped,
      retrievable: ranked.chunks,
      secrets,
      packing: 'ranked',
      auto,
      skipped,
      ignored: walked.ignored,
      totalTokens: sections.reduce((n, s) => n + s.tokens, 0),
      totalBytes: files.reduce((n, f) => n + f.bytes, 0),
      ignoredCount: walked.ignoredCount,
      order: ordered.order,
      tokenBudget: budget,
      notices,
    };
  };
  if (packing === 'ranked') return packRankedResult(tokenBudget, false);

  const kept: PackedFile[] = [];
  const skipped: SkippedFile[] = [...walked.skipped];
  let totalTokens = 0;
  let totalBytes = 0;
  let tokenized = 0;
  // Stop tokenizing once fewer tokens are left than a section can have: at most
  // MIN_SECTION_TOKENS (a header and two fences), or the smallest section seen so far.
  let smallestSection = Infinity;
  let budgetExhausted = tokenBudget <= 0;
  // Lowest tokens per character of any section so far: a file whose content alone would
  // need more than ESTIMATE_MARGIN times that many tokens than are left is not tokenized.
  let minTokensPerChar = Infinity;
  const budgetNote = 'larger files are dropped first';
  // 'auto' stops at the first file left out for the budget and packs ranked instead
  let overBudget = false;
  const skipOverBudget = (entry: SkippedFile): void => {
    overBudget = true;
    skipped.push(entry);
  };

  // Reads never reject (failures are verdicts), so starting them early is safe even if we abort.
  // 'auto' keeps them (settled or in flight) for its ranked pass, which then reads no file twice.
  const reads: Array<Promise<FileVerdict> | undefined> = new Array(total);
  let readReported = 0;
  let nextRead = 0;
  const startReads = (upTo: number): void => {
    for (; nextRead < Math.min(total, upTo); nextRead++) {
      const file = candidates[nextRead]!;
      reads[nextRead] = readTextFile(file.absPath, {
        maxFileBytes,
        detectGenerated: options.skipGenerated ?? true,
        expected: { bytes: file.bytes, mtimeMs: file.mtimeMs },
        ...(options.fs !== undefined ? { fs: options.fs } : {}),
      });
    }
  };

  // A synchronous tokenizer with reads already done would never give timers, I/O and
  // signal handlers (Ctrl-C → abort) a turn: yield to the event loop every few ms.
  const maybeYield = createYielder(YIELD_EVERY_MS);
  for (let i = 0; i < total && !(packing === 'auto' && overBudget); i++) {
    await maybeYield();
    throwIfAborted(signal);
    startReads(i + readAhead);
    const file = candidates[i]!;
    const verdict = await raceAbort(reads[i]!, signal);
    if (packing !== 'auto') reads[i] = undefined;
    onProgress?.({ phase: 'read', done: i + 1, total });
    readReported = i + 1;

    if (verdict.kind === 'skip') {
      skipped.push({ path: file.path, reason: verdict.reason, detail: verdict.detail });
      continue;
    }
    const left = tokenBudget - totalTokens;
    if (budgetExhausted) {
      skipOverBudget({ path: file.path, reason: 'over-budget', detail: `not tokenized: ${left} of ${tokenBudget} tokens left (${budgetNote})` });
      continue;
    }

    const estimate = Number.isFinite(minTokensPerChar) ? Math.floor(ESTIMATE_MARGIN * minTokensPerChar * verdict.text.length) : 0;
    if (estimate > left) {
      skipOverBudget({ path: file.path, reason: 'over-budget', detail: `not tokenized: needs about ${estimate}+ tokens, ${left} of ${tokenBudget} left (${budgetNote})` });
      continue;
    }

    if (skipSecrets) {
      const secret = await raceAbort(secrets.check(file.path, verdict.text), signal);
      if (secret !== undefined) {
        skipped.push({ path: file.path, reason: 'secret', detail: secretDetail(secret) });
        continue;
      }
    }

    const text = formatFileSection(file.path, verdict.text);
    // never more of the file than can decide whether it fits (a prefix sized from the tokens left)
    const fit = await countUpTo(text, left, countTokens, {
      ...(signal !== undefined ? { signal } : {}),
      onStep: (chars, of) => {
        if (chars < of || of > LONG_SECTION_CHARS) onProgress?.({ phase: 'tokenize', done: tokenized, section: { path: file.path, chars, of } });
      },
    }).catch((err: unknown) => {
      if (err instanceof TypeError) throw new TypeError(`${err.message} for ${file.path}`);
      throw err;
    });
    tokenized++;
    onProgress?.({ phase: 'tokenize', done: tokenized });
    if (fit.kind === 'over') {
      const floor = Math.min(MIN_SECTION_TOKENS, smallestSection);
      budgetExhausted = left < floor;
      skipOverBudget({
        path: file.path,
        reason: 'over-budget',
        detail: `not tokenized in full: its first ${fit.prefixChars} of ${text.length} characters alone need ${fit.prefixTokens} tokens, ${left} of ${tokenBudget} left (${budgetNote})`,
      });
      continue;
    }
    const tokens = fit.tokens;

    smallestSection = Math.min(smallestSection, tokens);
    if (text.length > 0) minTokensPerChar = Math.min(minTokensPerChar, tokens / text.length);
    const floor = Math.min(MIN_SECTION_TOKENS, smallestSection);
    if (tokens <= left) {
      kept.push({ path: file.path, bytes: verdict.bytes, tokens, text, mtimeMs: verdict.mtimeMs, encoding: verdict.encoding, notes: verdict.notes });
      totalTokens += tokens;
      totalBytes += verdict.bytes;
      budgetExhausted = tokenBudget - totalTokens < floor;
    } else {
      budgetExhausted = left < floor;
      skipOverBudget({ path: file.path, reason: 'over-budget', tokens, detail: `needs ${tokens} tokens, ${left} of ${tokenBudget} left (${budgetNote})` });
    }
  }
  throwIfAborted(signal);
  if (packing === 'auto' && overBudget) return packRankedResult(rankedTokenBudget, true, { reads, readReported });

  const ordered = await orderFiles(walked.root, kept, order, signal !== undefined ? { signal } : {});
  throwIfAborted(signal);
  skipped.sort((a, b) => compareCodeUnits(a.path, b.path));
  return {
    root: walked.root,
    files: ordered.files,
    sections: ordered.files.map((f) => ({ kind: 'file', path: f.path, text: f.text, tokens: f.tokens })),
    mapped: [],
    retrievable: [],
    secrets,
    packing: 'smallest-first',
    auto: packing === 'auto',
    skipped,
    ignored: walked.ignored,
    totalTokens,
    totalBytes,
    ignoredCount: walked.ignoredCount,
    order: ordered.order,
    tokenBudget,
    notices,
  };
}

/** The notice for a walk that stopped at its bound. */
function walkLimitNotice(truncation: WalkTruncation): PackNotice {
  const unlisted = truncation.unlistedDirectories > 0 ? `, leaving at least ${truncation.unlistedDirectories} directories unlisted` : '';
  return {
    code: 'walk-limit',
    truncation,
    message:
      `the walk stopped after ${truncation.maxEntries} entries at depth ${truncation.depth}${unlisted}: ` +
      'only the part of the tree seen until then was packed (narrow it with include/exclude patterns, or raise the entry bound)',
  };
}

/** Keep rank: smaller files first, then fewer directory levels, then path. */
function compareKeepRank(a: WalkedFile, b: WalkedFile): number {
  return a.bytes - b.bytes || depth(a.path) - depth(b.path) || compareCodeUnits(a.path, b.path);
}

function depth(p: string): number {
  let n = 0;
  for (let i = p.indexOf('/'); i >= 0; i = p.indexOf('/', i + 1)) n++;
  return n;
}

/**
 * `pack` with the files that question-time retrieval found holding a secret (`Retrieved.skipped`)
 * reported as the packer reports its own: each one's entry in `skipped` (there as
 * `'over-budget'`, "neither in full nor in the repository map") replaced by the `'secret'` entry
 * (`FileSecretVerdicts.skippedEntry`), in the same code-unit order of paths. `pack` itself is not
 * changed; returns it unchanged when `found` is empty.
 */
export function withRetrievalSkips(pack: PackResult, found: readonly SkippedFile[]): PackResult {
  if (found.length === 0) return pack;
  const byPath = new Map(found.map((s) => [s.path, s]));
  const skipped = pack.skipped.filter((s) => !byPath.has(s.path)).concat(found).sort((a, b) => compareCodeUnits(a.path, b.path));
  return { ...pack, skipped };
}
