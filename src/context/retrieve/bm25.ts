import winkBM25 from 'wink-bm25-text-search';
import type { Chunk } from './chunks';
import { codeTerms } from './tokenize';

/** A chunk with its BM25 score for a question. */
export interface ScoredChunk {
  chunk: Chunk;
  /** BM25F score (> 0): higher is more relevant. */
  score: number;
}

/** BM25 parameters; the defaults are the usual ones (and wink-bm25-text-search's). */
export interface Bm25Options {
  /** Term-frequency saturation k1 ≥ 0. Default 1.2. */
  k1?: number;
  /** Length normalization b in [0, 1]. Default 0.75. */
  b?: number;
  /**
   * Weight of the name field (the defined name and the file's path) against the body (the
   * chunk's text, weight 1). Default 3: a question naming a function finds it before its callers.
   */
  nameWeight?: number;
}

/**
 * Ranks `chunks` for `question` with BM25F (wink-bm25-text-search: idf = ln((N − n + 0.5) /
 * (n + 0.5) + 1), term frequency and document length summed over fields times their weights,
 * each term's weight stored to 4 decimals) over `codeTerms` of two fields: `name` (the defined
 * name and the path) and `body` (the text). Returns the chunks that share at least one term with
 * the question, best first, ties in the order of `chunks`. Fewer than 3 chunks cannot be indexed
 * (BM25's idf needs a collection): then every chunk sharing a term with the question is returned
 * in its order, with score 1. Pure (a new index per call).
 */
export function rankChunks(chunks: readonly Chunk[], question: string, options: Bm25Options = {}): ScoredChunk[] {
  const wanted = new Set(codeTerms(question));
  if (wanted.size === 0) return [];
  if (chunks.length < 3) {
    return chunks.filter((c) => codeTerms(`${c.name} ${c.path} ${c.text}`).some((t) => wanted.has(t))).map((chunk) => ({ chunk, score: 1 }));
  }
  const engine = winkBM25();
  engine.defineConfig({ fldWeights: { name: options.nameWeight ?? 3, body: 1 }, bm25Params: { k1: options.k1 ?? 1.2, b: options.b ?? 0.75, k: 1 } });
  engine.definePrepTasks([codeTerms]);
  chunks.forEach((c, i) => engine.addDoc({ name: `${c.name} ${c.path}`, body: c.text }, i));
  engine.consolidate();
  return engine
    .search(question, chunks.length)
    .map(([id, score]) => ({ index: Number(id), score }))
    .sort((a, b) => b.score - a.score || a.index - b.index)
    .map(({ index, score }) => ({ chunk: chunks[index]!, score }));
}
