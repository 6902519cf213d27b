import { raceAbort, throwIfAborted } from '../errors';
import { findSecret } from '../secrets';
import { rankChunks, type ScoredChunk } from './bm25';
import type { Chunk } from './chunks';
import { formatRetrievalSection, formatRetrievedChunk, RETRIEVAL_TITLE } from './section';

/** Options for `retrieveChunks`. */
export interface RetrieveOptions {
  /** Tokens the retrieval section may take (its whole text as `countTokens` counts it), ≥ 0. */
  budget: number;
  /** The model's tokenizer: tokens in `text`. */
  countTokens: (text: string) => number | Promise<number>;
  /** Leave out chunks holding a secret (`findSecret`). Default true. */
  skipSecrets?: boolean;
  /** Most ranked chunks considered (scanned and offered to the budget). Default 64. */
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
}

/**
 * The question-dependent retrieval section (issue 15): `chunks` (e.g. `PackResult.retrievable`)
 * ranked for `question` by BM25 (`rankChunks`), the best `maxCandidates` scanned for secrets
 * (a chunk holding one is never quoted), then as many as fit `budget` (`formatRetrievalSection`).
 * Rejects with an AbortError when `signal` aborts and with whatever `countTokens` throws.
 */
export async function retrieveChunks(chunks: readonly Chunk[], question: string, options: RetrieveOptions): Promise<Retrieved> {
  const { signal } = options;
  throwIfAborted(signal);
  const ranked = rankChunks(chunks, question).slice(0, options.maxCandidates ?? 64);
  const clean: ScoredChunk[] = [];
  for (const r of ranked) {
    if ((options.skipSecrets ?? true) && (await raceAbort(findSecret(r.chunk.text, r.chunk.path), signal)) !== undefined) continue;
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
  return { text: fitted.text, tokens: fitted.tokens, chunks: quoted, spans };
}
