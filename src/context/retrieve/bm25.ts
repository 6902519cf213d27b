import { createHash } from 'node:crypto';
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
 * The identifiers a question spells out, case kept: every word (a run of letters, digits, `_` and
 * `$`) inside a code span (`` `readBlob` ``), and anywhere else every word that is a compound
 * identifier: a lower-case letter followed by an upper-case one (`parseHeadOnSendHandlers`,
 * `isURL`) or an `_` between two letters or digits (`max_int`). Plain words (`name`, `Which`) are
 * not. Pure. Example: ``What does `end` do in parseStream?`` → {`end`, `parseStream`}.
 */
export function namedIdentifiers(question: string): Set<string> {
  const named = new Set<string>();
  const word = /[\p{L}\p{N}_$]+/gu;
  for (const span of question.matchAll(/`([^`]+)`/g)) for (const w of span[1]!.matchAll(word)) named.add(w[0]);
  for (const w of question.matchAll(word)) if (/\p{Ll}\p{Lu}|[\p{L}\p{N}]_[\p{L}\p{N}]/u.test(w[0])) named.add(w[0]);
  return named;
}

/**
 * Ranks `chunks` for `question`: first the chunks whose defined name the question spells out
 * (`namedIdentifiers`, exact and case-sensitive: `readBlob` in a question puts the chunk of
 * `readBlob` first, which BM25 alone ranked below chunks rich in the question's common words,
 * "name", "parameter", "function"; issue 15), those whose `owner` it spells out too first
 * (`Queue.push` before `Stack.push` for "`push` of `Queue`"), then the members of a type it spells
 * out (`ValidationError`'s header, then its `constructor`), then the others, each group by BM25F
 * score (best first; ties in the order of `chunks`). BM25F is wink-bm25-text-search's:
 * idf = ln((N − n + 0.5) / (n + 0.5) + 1), term frequency and document length summed over fields times their
 * weights, each term's weight stored to 4 decimals, over `codeTerms` of two fields: `name` (the
 * owner, the defined name and the path) and `body` (the text). Returns the named chunks and the
 * chunks that share at least one term with the question; a named chunk sharing no term (its name
 * is a stop word or one character) has score 0. When the question spells out names, the chunks
 * that neither define one, nor belong to one, nor use one (as a whole word of their text,
 * case-sensitive) are left out, even when that leaves none (the definition may be in a file in
 * full, which has no chunks): a question about `readBlob` then quotes `readBlob` and its callers,
 * not chunks that only share the question's plain words (the 1.5B coder answered `str`, a variable
 * of such a chunk quoted after readBlob's own; bench/repoqa/large, issue 15). Fewer than 3 chunks
 * cannot be indexed (BM25's idf needs a collection): then every chunk named or sharing a term with
 * the question is returned (with the same filter), named first, with score 1. The result depends
 * only on the arguments: the consolidated index of a chunk set is kept for the next call on the
 * same set ({@link chunkIndex}), so that a follow-up question on an unchanged repository does not
 * index it again (llama.cpp's 28,617 chunks: 8-9 s to index, 0.1-0.25 s warm; bench/retrieval.ts).
 */
export function rankChunks(chunks: readonly Chunk[], question: string, options: Bm25Options = {}): ScoredChunk[] {
  const named = namedIdentifiers(question);
  // 2: defines a name the question spells out; 1: a member of a type it spells out; both: 3
  const priority = (c: Chunk): number => (named.has(c.name) ? 2 : 0) + (c.owner !== undefined && named.has(c.owner) ? 1 : 0);
  const wanted = new Set(codeTerms(question));
  if (wanted.size === 0 && named.size === 0) return [];
  let scored: Array<{ index: number; score: number }>;
  if (chunks.length < 3) {
    scored = chunks.flatMap((c, index) => (priority(c) > 0 || codeTerms(`${nameField(c)} ${c.text}`).some((t) => wanted.has(t)) ? [{ index, score: 1 }] : []));
  } else {
    scored = wanted.size === 0 ? [] : chunkIndex(chunks, options).search(question, chunks.length).map(([id, score]) => ({ index: Number(id), score }));
    const found = new Set(scored.map((s) => s.index));
    chunks.forEach((c, index) => {
      if (priority(c) > 0 && !found.has(index)) scored.push({ index, score: 0 });
    });
  }
  if (named.size > 0) scored = scored.filter(({ index }) => priority(chunks[index]!) > 0 || usesName(chunks[index]!.text, named));
  return scored
    .sort((a, b) => priority(chunks[b.index]!) - priority(chunks[a.index]!) || b.score - a.score || a.index - b.index)
    .map(({ index, score }) => ({ chunk: chunks[index]!, score }));
}

/** The BM25 name field of a chunk: its owner (when it has one), its defined name and its path. */
function nameField(c: Chunk): string {
  return `${c.owner !== undefined ? `${c.owner} ` : ''}${c.name} ${c.path}`;
}

/** A consolidated BM25F index (wink-bm25-text-search) over a chunk set; document ids are the chunks' indices. */
type ChunkIndex = ReturnType<typeof winkBM25>;

/** The last index built, with the fingerprint of what it indexes ({@link chunkSetKey}). One only: a large repository's index takes ~150 MB of heap. */
let lastIndex: { key: string; index: ChunkIndex } | undefined;

/** Forgets the kept index (benchmarks: a cold ranking; tests: a fresh index). */
export function resetChunkIndex(): void {
  lastIndex = undefined;
}

/**
 * SHA-256 over the BM25 parameters and every chunk's path, name, owner, lines and text, in order: two
 * chunk sets with the same key give the same index. Hashing costs 2-5 ms per MB of text (llama.cpp's
 * chunks, 20.5 MB: 48-105 ms, against ~9 s to index them; bench/retrieval.ts).
 */
export function chunkSetKey(chunks: readonly Chunk[], options: Bm25Options = {}): string {
  const h = createHash('sha256');
  h.update(JSON.stringify([options.k1 ?? 1.2, options.b ?? 0.75, options.nameWeight ?? 3, chunks.length]));
  for (const c of chunks) h.update(`\0${c.path}\0${c.name}\0${c.owner ?? ''}\0${c.startLine}\0${c.endLine}\0${c.text.length}\0`).update(c.text);
  return h.digest('hex');
}

/**
 * The consolidated BM25F index of `chunks` (at least 3): `codeTerms` of two fields, `name` (the
 * owner, the defined name and the path, weight `nameWeight`) and `body` (the text, weight 1). The last one
 * built is kept and given again while {@link chunkSetKey} is unchanged; building takes most of a
 * ranking's time on a large repository (the terms of every chunk), searching little.
 */
function chunkIndex(chunks: readonly Chunk[], options: Bm25Options): ChunkIndex {
  const key = chunkSetKey(chunks, options);
  if (lastIndex?.key === key) return lastIndex.index;
  lastIndex = undefined; // let the old index go before the new one is built
  const engine = buildIndex(chunks, options);
  lastIndex = { key, index: engine };
  return engine;
}

/**
 * The BM25F score of each of `chunks` for `question` in an index of their own (as `rankChunks`'s:
 * the same fields, weights and terms), by position: 0 for a chunk sharing no term with the
 * question, and all 0 for fewer than 3 chunks or a question without terms. The index is built for
 * this call and not kept, so the one kept for `rankChunks` stays. For ranking the pieces of a
 * definition too large for the retrieval room among the other candidates (`retrieveChunks`). Pure.
 */
export function scoreChunks(chunks: readonly Chunk[], question: string, options: Bm25Options = {}): number[] {
  const scores = chunks.map(() => 0);
  if (chunks.length < 3 || codeTerms(question).length === 0) return scores;
  for (const [id, score] of buildIndex(chunks, options).search(question, chunks.length)) scores[Number(id)] = score;
  return scores;
}

/** A new consolidated BM25F index of `chunks` (at least 3), as `chunkIndex` describes. */
function buildIndex(chunks: readonly Chunk[], options: Bm25Options): ChunkIndex {
  const engine = winkBM25();
  engine.defineConfig({ fldWeights: { name: options.nameWeight ?? 3, body: 1 }, bm25Params: { k1: options.k1 ?? 1.2, b: options.b ?? 0.75, k: 1 } });
  engine.definePrepTasks([codeTerms]);
  chunks.forEach((c, i) => engine.addDoc({ name: nameField(c), body: c.text }, i));
  engine.consolidate();
  return engine;
}

/** Whether `text` holds one of `names` as a whole word (a run of letters, digits, `_` and `$`), case-sensitive. */
function usesName(text: string, names: ReadonlySet<string>): boolean {
  for (const w of text.matchAll(/[\p{L}\p{N}_$]+/gu)) if (names.has(w[0])) return true;
  return false;
}
