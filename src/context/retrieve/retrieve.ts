import { raceAbort, throwIfAborted } from '../errors';
import type { FileSecretVerdicts } from '../secrets';
import type { SkippedFile } from '../types';
import { rankChunks, type ScoredChunk } from './bm25';
import type { Chunk } from './chunks';
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
  /** The chunks quoted, best first (their order in the section). */
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
  const fitted = await formatRetrievalSection(clean, options.budget, options.countTokens);
  const quoted = fitted.chosen.map((i) => clean[i]!.chunk);
  const spans: Retrieved['spans'] = [];
  if (quoted.length > 0) {
    let offset = await options.countTokens(`${RETRIEVAL_TITLE}\n`);
    for (const i of fitted.chosen) {
      const tokens = await options.countTokens(formatRetrievedChunk(clean[i]!));
      spans.push({ path: clean[i]!.chunk.path, tokens, offset });
      offset += tokens;
    }
  }
  return { text: fitted.text, tokens: fitted.tokens, chunks: quoted, spans, skipped };
}
