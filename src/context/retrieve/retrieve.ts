import { raceAbort, throwIfAborted } from '../errors';
import type { FileSecretVerdicts } from '../secrets';
import type { SkippedFile } from '../types';
import { rankChunks, scoreChunks, type ScoredChunk } from './bm25';
import type { Chunk } from './chunks';
import { piecesToFit } from './pieces';
import { codeTerms } from './tokenize';
import { formatRetrievalSection, formatRetrievedChunk, RETRIEVAL_TITLE } from './section';

/** Options for `retrieveChunks`. */
export interface RetrieveOptions {
  /** Tokens the retrieval section may take (its whole text as `countTokens` counts it), ≥ 0. */
  budget: number;
  /** The model's tokenizer: tokens in `text`. */
  countTokens: (text: string) => number | Promise<number>;
  /**
   * The pack's secret decision per file (`PackResult.secrets`): a chunk is quoted only when its
   * whole file holds no secret (`FileSecretVerdicts.verdictOf`), so a clean function of a file
   * with a secret elsewhere is never quoted. Every chunk's path must have been given to it
   * (`check` or `defer`); a disabled one (`skipSecrets: false`) lets every chunk through.
   */
  secrets: FileSecretVerdicts;
  /** Most ranked chunks considered (their files decided on and offered to the budget). Default 64. */
  maxCandidates?: number;
  signal?: AbortSignal;
}

/** The retrieval section for one question. */
export interface Retrieved {
  /** The section's text (`formatRetrievalSection`), `''` when nothing fits or matches. */
  text: string;
  /** `countTokens(text)`, ≤ `budget`. */
  tokens: number;
  /** The chunks quoted, best first (their order in the section): pieces (`Chunk.partOf`) of a chunk too large for the room. */
  chunks: Chunk[];
  /**
   * Where each quoted chunk lies in the section, in the order of `chunks`: its file, `tokens`
   * (`countTokens` of its block, `formatRetrievedChunk`: the `path:first-last` line and the fenced
   * lines) and `offset` (tokens from the section's start: the title line's plus those of the
   * blocks before it, each counted alone; a tokenizer that merges across a block boundary shifts
   * the true start by a token or so) [tokens].
   */
  spans: Array<{ path: string; tokens: number; offset: number }>;
  /**
   * Files of ranked chunks that were left out because the file holds a secret, as the packer
   * reports them (`FileSecretVerdicts.skippedEntry`: reason `'secret'`, the rule and where), in
   * the order found; merge them into the pack's manifest with `withRetrievalSkips`.
   */
  skipped: SkippedFile[];
}

/**
 * The question-dependent retrieval section (issue 15): `chunks` (e.g. `PackResult.retrievable`)
 * ranked for `question` by BM25 (`rankChunks`); of the best `maxCandidates`, those whose file
 * the pack's decision (`secrets`) finds clean, as many as fit `budget` (`formatRetrievalSection`).
 * A chunk whose block does not fit `budget` alone (axios's 372-token `shouldBypassProxy` in the
 * 307-token room of a 2,048-token context: nothing was quoted) is split into pieces that do
 * (`piecesToFit`), which take its place in the ranking: its first piece, with the signature,
 * unless BM25F ranks a later one higher for the question (among all the candidates, the pieces
 * carrying the definition's name and owner in the name field: `scoreChunks`) by a term the first
 * lacks (`withPieces`).
 * A file with a secret anywhere has none of its chunks quoted and is listed in `skipped`.
 * Rejects with an AbortError when `signal` aborts, with whatever `countTokens` throws, and as
 * `FileSecretVerdicts.verdictOf` (a chunk whose file it was never given).
 */
export async function retrieveChunks(chunks: readonly Chunk[], question: string, options: RetrieveOptions): Promise<Retrieved> {
  const { signal } = options;
  throwIfAborted(signal);
  const ranked = rankChunks(chunks, question).slice(0, options.maxCandidates ?? 64);
  const clean: ScoredChunk[] = [];
  const skipped: SkippedFile[] = [];
  for (const r of ranked) {
    if ((await raceAbort(options.secrets.verdictOf(r.chunk.path), signal)) !== undefined) {
      const entry = options.secrets.skippedEntry(r.chunk.path);
      if (entry !== undefined && !skipped.some((s) => s.path === entry.path)) skipped.push(entry);
      continue;
    }
    clean.push(r);
  }
  const candidates = await withPieces(clean, question, options);
  const fitted = await formatRetrievalSection(candidates, options.budget, options.countTokens);
  const quoted = fitted.chosen.map((i) => candidates[i]!.chunk);
  const spans: Retrieved['spans'] = [];
  if (quoted.length > 0) {
    let offset = await options.countTokens(`${RETRIEVAL_TITLE}\n`);
    for (const i of fitted.chosen) {
      const tokens = await options.countTokens(formatRetrievedChunk(candidates[i]!));
      spans.push({ path: candidates[i]!.chunk.path, tokens, offset });
      offset += tokens;
    }
  }
  return { text: fitted.text, tokens: fitted.tokens, chunks: quoted, spans, skipped };
}

/**
 * `ranked` with each chunk whose block does not fit `budget` alone, under the section's title
 * (as `fitSection` counts it: the title's and the block's tokens counted apart, and together),
 * replaced in its place by its pieces (`piecesToFit`): first the one that leads, then the others
 * in source order. The first piece leads unless a later one has a higher BM25F score among all
 * the candidates and pieces (`scoreChunks`) and holds a term of the question (`codeTerms`) that
 * the first lacks (the highest such); a piece keeps its chunk's `score`. (By score alone the
 * shorter last piece led for "Which file defines the function serializeSchemaProperties?" in ajv:
 * every piece has the name in its name field, and BM25 favours short documents.) A chunk whose
 * only piece is a single line too long for the room stays as it is. `ranked` itself when nothing
 * needs splitting or nothing could fit (a budget the title alone fills). Rejects as `countTokens`
 * and with an AbortError when `signal` aborts.
 */
async function withPieces(ranked: readonly ScoredChunk[], question: string, options: RetrieveOptions): Promise<readonly ScoredChunk[]> {
  const { budget, countTokens, signal } = options;
  const title = await countTokens(`${RETRIEVAL_TITLE}\n`);
  if (ranked.length === 0 || title >= budget) return ranked;
  // as `fitSection` takes a block first: the title's and the block's counts, each alone, and the section's
  const fits = async (chunk: Chunk): Promise<boolean> => {
    const block = formatRetrievedChunk({ chunk, score: 0 });
    return title + (await countTokens(block)) <= budget && (await countTokens(`${RETRIEVAL_TITLE}\n${block}`)) <= budget;
  };
  const groups: ScoredChunk[][] = [];
  let split = false;
  for (const r of ranked) {
    throwIfAborted(signal);
    if (await fits(r.chunk)) {
      groups.push([r]);
      continue;
    }
    const pieces = await piecesToFit(r.chunk, fits, signal);
    // one piece: a single line too long for the room, which the fitter leaves out whole
    if (pieces.length === 1) {
      groups.push([r]);
      continue;
    }
    split = true;
    groups.push(pieces.map((chunk) => ({ chunk, score: r.score })));
  }
  if (!split) return ranked;
  const scores = scoreChunks(groups.flat().map((s) => s.chunk), question);
  const wanted = new Set(codeTerms(question));
  const matched = (c: Chunk): Set<string> => new Set(codeTerms(c.text).filter((t) => wanted.has(t)));
  let at = 0;
  return groups.flatMap((group) => {
    const base = at;
    at += group.length;
    if (group.length === 1) return group;
    // the first piece leads unless a later one scores higher and matches a question term it lacks: the
    // pieces share the name field, so BM25's length normalization alone favours the shorter last piece
    const own = matched(group[0]!.chunk);
    let lead = 0;
    for (let i = 1; i < group.length; i++) {
      if (scores[base + i]! > scores[base + lead]! && [...matched(group[i]!.chunk)].some((t) => !own.has(t))) lead = i;
    }
    return [group[lead]!, ...group.filter((_, i) => i !== lead)];
  });
}
