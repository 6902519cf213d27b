import { raceAbort, throwIfAborted } from './errors';
import { readTextFile, type FileVerdict } from './filter';
import { createYielder, type ContextFs } from './fsapi';
import { fitSection, type FittedSection } from './budget';
import { MAX_PARSE_CHARS, parserLimitDetail, TagsCache } from './map/cache';
import { grammarForPath } from './map/languages';
import { formatMapBlock, formatRepositoryMap, REPOSITORY_MAP_TITLE } from './map/repomap';
import type { FileTags } from './map/tags';
import { compactTreeLines, fileTreeLines, formatFileTree } from './map/tree';
import { rankFilesPaced } from './rank/rank';
import { chunksOf, type Chunk } from './retrieve/chunks';
import { secretDetail, type FileSecretVerdicts } from './secrets';
import { countUpTo, PREFIX_MARGIN_TOKENS } from './prefix-count';
import { formatFileSection } from './section';
import { compareCodeUnits, type SkippedFile } from './types';
import type { WalkedFile } from './walk';

/** Shares of the token budget for the ranked packing (`PackOptions.rankedShares`). */
export interface RankedShares {
  /** Most of the budget the file tree may take, in [0, 1]. Default 0.1. */
  tree?: number;
  /** Most of the budget the tree and the files in full may take together, in [0, 1]. Default 0.6. */
  full?: number;
  /**
   * The part of `full`, in [0, `full`], kept for files chosen smallest first (as the smallest-first
   * packing keeps them) after the files chosen by rank: those take the tree and files up to
   * `full − smallest` of the budget, then the smallest remaining files fill up to `full`. Small
   * files cost few tokens each, and questions are often about them (the inside subset of
   * bench/repoqa/large). Default 0: every file in full is chosen by rank. Measured in
   * bench/repoqa/large (issue 15; 38 questions over pino, axios and fastify at a 2,048-token
   * context, with retrieval): 0.3 answered 78.3 % outside and 86.7 % inside, 0 answered 69.6 % and
   * 93.3 % (smallest-first: 93.3 % inside): with 0 the small files are retrieved next to the
   * question instead of sitting in full in the prefix.
   */
  smallest?: number;
}

/** Default `RankedShares`. */
export const DEFAULT_RANKED_SHARES: Required<RankedShares> = { tree: 0.1, full: 0.6, smallest: 0 };

/** A section of the packed prompt, in prompt order (`PackResult.sections`). */
export interface PackSection {
  /** `'tree'`: the file tree; `'file'`: one file in full; `'map'`: the repository map. */
  kind: 'tree' | 'file' | 'map';
  /** For `'file'`: the file's path. */
  path?: string;
  /** The section's text, ending with a newline. */
  text: string;
  /** `countTokens(text)`. */
  tokens: number;
}

/** A file whose definitions are in the repository map (not in full). */
export interface MappedFile {
  path: string;
  /** Definitions listed. */
  definitions: number;
  /** PageRank of the file (see `rankFiles`). */
  rank: number;
  /** `countTokens` of the file's map block (`formatMapBlock`: its path line and definition lines) [tokens]. */
  tokens: number;
  /**
   * Where the block starts in the map section [tokens from the section's start]: the tokens of
   * the section's header lines (title and opening fence) plus those of the blocks before it,
   * each counted alone. A tokenizer that merges across a block boundary shifts the true start
   * by a token or so; the context report clamps spans to the section.
   */
  offset: number;
}

/** A file kept in full by the ranked packing. */
export interface RankedFile {
  path: string;
  bytes: number;
  tokens: number;
  text: string;
  mtimeMs: number;
  verdict: Extract<FileVerdict, { kind: 'text' }>;
  rank: number;
}

/** What `packRanked` needs from `packRepository`. */
export interface RankedInput {
  candidates: readonly WalkedFile[];
  tokenBudget: number;
  countTokens: (text: string) => number | Promise<number>;
  maxFileBytes: number;
  skipGenerated: boolean;
  /** The pack's secret decision per file (disabled when secrets are not skipped). */
  secrets: FileSecretVerdicts;
  readAhead: number;
  recentFiles: readonly string[];
  shares: Required<RankedShares>;
  tagsCache: TagsCache;
  signal?: AbortSignal;
  fs?: ContextFs;
  onProgress?: (p: { phase: 'read' | 'tokenize'; done: number; total?: number }) => void;
  /**
   * Reads already made or in flight, by index into `candidates` (`packRepository`'s `'auto'`: its
   * smallest-first pass, with the same `readTextFile` options): used instead of reading the file
   * again; the other indices are read here. Default none.
   */
  reads?: ReadonlyArray<Promise<FileVerdict> | undefined>;
  /** `'read'` progress already reported for the first this many candidates (by `reads`' owner): not reported again. Default 0. */
  readReported?: number;
}

/** What `packRanked` produced (merged into `PackResult` by `packRepository`). */
export interface RankedOutput {
  full: RankedFile[];
  tree: { text: string; tokens: number };
  map: { text: string; tokens: number };
  mapped: MappedFile[];
  skipped: SkippedFile[];
  /**
   * Retrieval chunks (`chunksOf`) of the parsed files not in full and not known to hold a
   * secret, in rank order of their files. Files never secret-scanned are among them: their
   * whole text is deferred to `secrets` (`FileSecretVerdicts.defer`), which retrieval asks
   * before quoting any chunk of theirs (`retrieveChunks`).
   */
  chunks: Chunk[];
}

/** Longest stretch of work between two turns of the event loop, in ms. */
const YIELD_EVERY_MS = 10;

/**
 * The ranked packing (issue 15), question-independent so that its prompt is a cacheable prefix:
 *
 * 1. Read every candidate (`readTextFile`; skipped ones keep their reasons) and parse each file
 *    with a grammar into tags (`TagsCache`: by content hash, so an unchanged file is not parsed
 *    again).
 * 2. Rank files by PageRank over the definition → reference graph (`rankFiles`), personalized
 *    to `recentFiles`; ties: smaller first, then fewer directory levels, then path.
 * 3. File tree (every candidate's path) within `shares.tree` of the budget (`fitSection`;
 *    directories of higher-ranked files first when it does not fit). When it does not fit
 *    whole, the compacted tree (`compactTreeLines`: a file count per directory) is used instead
 *    if it fits whole, or if not one detailed line fits (then as many of its directories as fit);
 *    when not one compacted line fits the share either, the compacted tree may take twice the
 *    share (capped by `shares.full`): at a small context the tree is the only sign of most files.
 * 4. Files in full by rank (formatted, tokenized, and secret-scanned when they fit), while the
 *    tree and the files stay within `shares.full − shares.smallest` of the budget; a file that
 *    does not fit is skipped and the next tried, and one whose text is so long that even half the
 *    lowest tokens-per-character rate seen so far exceeds the room left is skipped without
 *    tokenizing. Then, when `shares.smallest` > 0, the other files smallest first (smallest-first's
 *    keep order) the same way, while the tree and the files stay within `shares.full`.
 * 5. Repository map of the other parsed files (their definitions with line numbers and
 *    signatures), by rank, within what is left of the budget; the files of the blocks the fit
 *    chooses are secret-scanned whole (`secrets.check`: a file with a secret anywhere is left out
 *    entirely, not only one whose signatures hold it), and one holding a secret is left out as
 *    `'secret'` and the map fitted again (files of blocks never chosen are not scanned here: at
 *    20,000 files scanning every one took seconds).
 * 6. Spill: budget the map did not use goes to more files in full (by rank), and the map is
 *    fitted again without them.
 *
 * Every section's tokens are counted whole by `countTokens`; tree + files + map ≤ `tokenBudget`.
 * The work turns the event loop at least every `YIELD_EVERY_MS` (10 ms) between files, blocks
 * and steps of the reference graph (`rankFilesPaced`), and checks `signal` there; single parses,
 * token counts and the power iteration run in one go.
 * Rejects like `packRepository` (abort, `countTokens` errors), and with the parser's error when a
 * grammar cannot be loaded.
 */
export async function packRanked(input: RankedInput): Promise<RankedOutput> {
  const { candidates, tokenBudget, countTokens, signal } = input;
  const count = async (text: string): Promise<number> => {
    const n = await raceAbort(Promise.resolve(countTokens(text)), signal);
    if (typeof n !== 'number' || !Number.isFinite(n) || n < 0) throw new TypeError(`countTokens must return a finite number >= 0, got ${String(n)}`);
    return n;
  };
  const skipped: SkippedFile[] = [];
  const texts: Array<{ file: WalkedFile; verdict: Extract<FileVerdict, { kind: 'text' }>; tags?: FileTags }> = [];
  const maybeYield = createYielder(YIELD_EVERY_MS);

  // 1. read (what `input.reads` has not read yet) and parse
  const reads: Array<Promise<FileVerdict> | undefined> = input.reads === undefined ? new Array(candidates.length) : [...input.reads];
  const readReported = input.readReported ?? 0;
  let nextRead = 0;
  const startReads = (upTo: number): void => {
    for (; nextRead < Math.min(candidates.length, upTo); nextRead++) {
      if (reads[nextRead] !== undefined) continue;
      const file = candidates[nextRead]!;
      reads[nextRead] = readTextFile(file.absPath, {
        maxFileBytes: input.maxFileBytes,
        detectGenerated: input.skipGenerated,
        expected: { bytes: file.bytes, mtimeMs: file.mtimeMs },
        ...(input.fs !== undefined ? { fs: input.fs } : {}),
      });
    }
  };
  for (let i = 0; i < candidates.length; i++) {
    await maybeYield();
    throwIfAborted(signal);
    startReads(i + input.readAhead);
    const file = candidates[i]!;
    const verdict = await raceAbort(reads[i]!, signal);
    reads[i] = undefined;
    if (verdict.kind === 'skip') skipped.push({ path: file.path, reason: verdict.reason, detail: verdict.detail });
    else if (grammarForPath(file.path) !== undefined && verdict.text.length > MAX_PARSE_CHARS) {
      // never handed to tree-sitter, which aborts the process on such a file (issue 29, item 8)
      skipped.push({ path: file.path, reason: 'too-large', detail: parserLimitDetail(verdict.text.length) });
    } else {
      const grammar = grammarForPath(file.path);
      const tags = grammar === undefined ? undefined : await raceAbort(input.tagsCache.tags(verdict.text, grammar, signal), signal);
      texts.push({ file, verdict, ...(tags !== undefined ? { tags } : {}) });
    }
    if (i >= readReported) input.onProgress?.({ phase: 'read', done: i + 1, total: candidates.length });
  }

  // 2. rank, turning the event loop while the reference graph is built (about a second of CPU for
  // 20,000 files on a loaded machine)
  await maybeYield();
  throwIfAborted(signal);
  const ranks = await rankFilesPaced(texts.map((t) => ({ path: t.file.path, ...(t.tags !== undefined ? { tags: t.tags } : {}) })), input.recentFiles, maybeYield, signal);
  const order = texts.map((_, i) => i).sort((a, b) => ranks[b]! - ranks[a]! || compareKeep(texts[a]!.file, texts[b]!.file));
  const rankOfPath = new Map(texts.map((t, i) => [t.file.path, ranks[i]!]));
  await maybeYield();
  throwIfAborted(signal);
  const pace = { maybeYield, ...(signal !== undefined ? { signal } : {}) };

  // 3. file tree, lines of the best-ranked files first; when not one line fits, the compacted
  // tree (a file count per directory) so that the model still sees the repository's shape, and
  // when not even that fits the tree's share, the compacted tree within twice the share
  const fitTree = async (lines: ReturnType<typeof fileTreeLines>, budget: number): Promise<FittedSection> => {
    // the whole tree has no "… more files" line, which fitSection's estimate counts: try it first
    // (unless it is so long that no tokenizer could fit it: 16 characters per token at most)
    const whole = formatFileTree(lines.map((l) => l.line), 0, 0);
    if (lines.length > 0 && budget > 0 && whole.length <= 16 * budget) {
      const tokens = await count(whole);
      if (tokens <= budget) return { text: whole, tokens, chosen: lines.map((_, i) => i) };
    }
    const lineRank = lines.map((l) => Math.max(0, ...l.paths.map((p) => rankOfPath.get(p) ?? 0)));
    const linePriority = lines.map((_, i) => i).sort((a, b) => lineRank[b]! - lineRank[a]! || a - b);
    return fitSection(
      linePriority.map((i) => lines[i]!.line),
      (chosen) => {
        const shown = chosen.map((c) => linePriority[c]!).sort((a, b) => a - b);
        const shownSet = new Set(shown);
        const omitted = lines.filter((_, i) => !shownSet.has(i));
        const omittedFiles = omitted.reduce((n, l) => n + l.paths.length, 0);
        return formatFileTree(shown.map((i) => lines[i]!.line), omittedFiles, new Set(omitted.map((l) => l.dir)).size);
      },
      budget,
      count,
      pace,
    );
  };
  const treePaths = candidates.map((c) => c.path);
  const treeBudget = Math.floor(tokenBudget * input.shares.tree);
  const detailedLines = fileTreeLines(treePaths);
  const compactLines = compactTreeLines(treePaths);
  let tree = await fitTree(detailedLines, treeBudget);
  if (tree.chosen.length < detailedLines.length) {
    const compact = await fitTree(compactLines, treeBudget);
    if (compact.chosen.length === compactLines.length || tree.chosen.length === 0) tree = compact;
  }
  if (tree.chosen.length === 0) tree = await fitTree(compactLines, Math.min(2 * treeBudget, Math.floor(tokenBudget * input.shares.full)));

  // 4. files in full, by rank, within the full share
  const full: RankedFile[] = [];
  const sectionTokens = new Map<number, number>();
  const secretOf = new Map<number, string>();
  let used = tree.tokens;
  let tokenized = 0;
  // Lowest tokens per character of any section counted so far: a file whose text would need
  // more than half that rate's tokens than the room left is not tokenized (as in smallest-first).
  let minTokensPerChar = Infinity;
  // Files found over a room by a prefix alone (`countUpTo`): at least this many tokens.
  const atLeast = new Map<number, number>();
  /** Keeps file `i` in full when its section fits `room` tokens and holds no secret. */
  const tryFull = async (i: number, room: number): Promise<boolean> => {
    const { file, verdict } = texts[i]!;
    if (secretOf.has(i)) return false;
    const text = formatFileSection(file.path, verdict.text);
    let tokens = sectionTokens.get(i);
    if (tokens === undefined) {
      if (Number.isFinite(minTokensPerChar) && Math.floor(0.5 * minTokensPerChar * text.length) > room) return false;
      if ((atLeast.get(i) ?? 0) > room) return false;
      // never more of the file than can decide whether it fits `room` (a prefix sized from it)
      const fit = await countUpTo(text, room, countTokens, signal !== undefined ? { signal } : {});
      input.onProgress?.({ phase: 'tokenize', done: ++tokenized });
      if (fit.kind === 'over') {
        atLeast.set(i, fit.prefixTokens - PREFIX_MARGIN_TOKENS);
        return false;
      }
      tokens = fit.tokens;
      sectionTokens.set(i, tokens);
      if (text.length > 0) minTokensPerChar = Math.min(minTokensPerChar, tokens / text.length);
    }
    if (tokens > room) return false;
    // scanned only when it would be kept (50-100 ms per MB)
    const secret = await raceAbort(input.secrets.check(file.path, verdict.text), signal);
    if (secret !== undefined) {
      secretOf.set(i, secretDetail(secret));
      return false;
    }
    full.push({ path: file.path, bytes: verdict.bytes, tokens, text, mtimeMs: verdict.mtimeMs, verdict, rank: ranks[i]! });
    return true;
  };
  const inFull = new Set<number>();
  const fullBudget = Math.floor(tokenBudget * input.shares.full);
  const rankedBudget = Math.floor(tokenBudget * (input.shares.full - input.shares.smallest));
  for (const i of order) {
    await maybeYield();
    throwIfAborted(signal);
    if (rankedBudget - used <= 0) break;
    if (await tryFull(i, rankedBudget - used)) {
      inFull.add(i);
      used += full[full.length - 1]!.tokens;
    }
  }
  if (input.shares.smallest > 0) {
    const bySize = texts.map((_, i) => i).sort((a, b) => compareKeep(texts[a]!.file, texts[b]!.file));
    for (const i of bySize) {
      await maybeYield();
      throwIfAborted(signal);
      if (fullBudget - used <= 0) break;
      if (inFull.has(i)) continue;
      if (await tryFull(i, fullBudget - used)) {
        inFull.add(i);
        used += full[full.length - 1]!.tokens;
      }
    }
  }

  // 5. the map of the other parsed files; a block's file is secret-scanned only once the fit
  // chooses the block (scanning all of them took seconds at 20,000 files), and the map is fitted
  // again without the blocks of files found holding one
  const blockOf = new Map<number, string>();
  for (const i of order) {
    await maybeYield();
    throwIfAborted(signal);
    const t = texts[i]!;
    if (inFull.has(i) || secretOf.has(i) || t.tags === undefined || t.tags.definitions.length === 0) continue;
    blockOf.set(i, formatMapBlock(t.file.path, t.tags.definitions));
  }
  const fitMapOnce = (budget: number) => {
    const candidatesForMap = order.filter((i) => blockOf.has(i) && !inFull.has(i));
    return fitSection(
      candidatesForMap.map((i) => blockOf.get(i)!),
      (chosen) => formatRepositoryMap(chosen.map((c) => candidatesForMap[c]!).sort((a, b) => compareCodeUnits(texts[a]!.file.path, texts[b]!.file.path)).map((i) => blockOf.get(i)!)),
      budget,
      count,
      pace,
    ).then((fitted) => ({ ...fitted, files: fitted.chosen.map((c) => candidatesForMap[c]!) }));
  };
  const fitMap = async (budget: number) => {
    for (;;) {
      const fitted = await fitMapOnce(budget);
      let clean = true;
      for (const i of fitted.files) {
        // the whole file: its policy is the file's, not its signatures' (a cut signature could hide
        // a secret's end too); `secrets` scans each file once and answers again from its memo
        const secret = await raceAbort(input.secrets.check(texts[i]!.file.path, texts[i]!.verdict.text), signal);
        if (secret !== undefined) {
          secretOf.set(i, secretDetail(secret));
          blockOf.delete(i);
          clean = false;
        }
      }
      if (clean) return fitted;
    }
  };
  let map = await fitMap(tokenBudget - used);

  // 6. spill what the map left to more files in full, then fit the map again
  let spare = tokenBudget - used - map.tokens;
  if (spare > 0) {
    const inMap = new Set(map.files);
    let moved = false;
    for (const i of order) {
      if (inFull.has(i) || spare <= 0) continue;
      await maybeYield();
      throwIfAborted(signal);
      if (secretOf.has(i)) continue;
      const freed = inMap.has(i) ? await count(blockOf.get(i)!) : 0;
      if (await tryFull(i, Math.min(spare + freed, tokenBudget - used))) {
        inFull.add(i);
        used += full[full.length - 1]!.tokens;
        spare -= full[full.length - 1]!.tokens - freed;
        moved = true;
      }
    }
    if (moved) map = await fitMap(tokenBudget - used);
  }
  throwIfAborted(signal);

  const mappedSet = new Set(map.files);
  // each block's tokens and start in the map, in the map's (path) order
  const placed = new Map<number, { tokens: number; offset: number }>();
  if (map.files.length > 0) {
    const titleEnd = map.text.indexOf('\n', REPOSITORY_MAP_TITLE.length + 1) + 1;
    let offset = await count(map.text.slice(0, titleEnd));
    for (const i of [...map.files].sort((a, b) => compareCodeUnits(texts[a]!.file.path, texts[b]!.file.path))) {
      const tokens = await count(blockOf.get(i)!);
      placed.set(i, { tokens, offset });
      offset += tokens;
    }
  }
  const mapped: MappedFile[] = map.files.map((i) => ({ path: texts[i]!.file.path, definitions: texts[i]!.tags!.definitions.length, rank: ranks[i]!, ...placed.get(i)! }));
  for (let i = 0; i < texts.length; i++) {
    if (inFull.has(i)) continue;
    const path = texts[i]!.file.path;
    const secret = secretOf.get(i);
    if (secret !== undefined) skipped.push({ path, reason: 'secret', detail: secret });
    else if (mappedSet.has(i)) skipped.push({ path, reason: 'over-budget', detail: `in the repository map only (${texts[i]!.tags!.definitions.length} definitions; files in full are chosen by rank)` });
    else {
      const tokens = sectionTokens.get(i);
      skipped.push({ path, reason: 'over-budget', ...(tokens !== undefined ? { tokens } : {}), detail: 'neither in full nor in the repository map (files are chosen by rank)' });
    }
  }
  const chunks: Chunk[] = [];
  for (const i of order) {
    await maybeYield();
    throwIfAborted(signal);
    const t = texts[i]!;
    if (inFull.has(i) || secretOf.has(i) || t.tags === undefined) continue;
    const own = chunksOf(t.file.path, t.verdict.text, t.tags);
    if (own.length === 0) continue;
    input.secrets.defer(t.file.path, t.verdict.text);
    chunks.push(...own);
  }
  return { full, tree: { text: tree.text, tokens: tree.tokens }, map: { text: map.text, tokens: map.tokens }, mapped, skipped, chunks };
}

/** Keep rank of the smallest-first packing: smaller first, then fewer directory levels, then path. */
function compareKeep(a: WalkedFile, b: WalkedFile): number {
  return a.bytes - b.bytes || a.path.split('/').length - b.path.split('/').length || compareCodeUnits(a.path, b.path);
}

