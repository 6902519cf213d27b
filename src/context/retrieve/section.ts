import { fitSection, type FittedSection } from '../budget';
import { escapePathForHeader, longestBacktickRun } from '../section';
import type { ScoredChunk } from './bm25';

/** The header line of the retrieval section. */
export const RETRIEVAL_TITLE = 'Code retrieved for the question (path:first-last line)';

/**
 * One retrieved chunk as a block: `path:start-end`, then its lines in a fence longer than any
 * backtick run in them. A piece of a longer definition (`Chunk.partOf`) says so after its lines,
 * naming the definition (`Owner.name` for a method) and its lines: `(beginning of
 * shouldBypassProxy, lines 453-520)` for its first piece (the one starting at the definition's
 * first line or holding its name's line, `Chunk.nameLine`), `(… continued: Pool, lines 1-16)` for
 * the others. Pure.
 */
export function formatRetrievedChunk(scored: ScoredChunk): string {
  const { chunk } = scored;
  const fence = '`'.repeat(Math.max(3, longestBacktickRun(chunk.text) + 1));
  let part = '';
  if (chunk.partOf !== undefined) {
    const whole = `${chunk.owner !== undefined ? `${chunk.owner}.` : ''}${chunk.name}, lines ${chunk.partOf.startLine}-${chunk.partOf.endLine}`;
    part = chunk.startLine === chunk.partOf.startLine || chunk.nameLine !== undefined ? ` (beginning of ${whole})` : ` (… continued: ${whole})`;
  }
  return `${escapePathForHeader(chunk.path)}:${chunk.startLine}-${chunk.endLine}${part}\n${fence}\n${chunk.text}\n${fence}\n`;
}

/**
 * The question-dependent retrieval section (issue 15; it goes after the cached prefix and before
 * the thread): `RETRIEVAL_TITLE`, then the best chunks of `ranked` (best first, as `rankChunks`
 * returns them) while the whole section's `countTokens` stays within `budget` tokens (see
 * `fitSection`: a chunk that does not fit is skipped and the next tried). `text` is `''` when no
 * chunk fits. Rejects with whatever `countTokens` throws.
 */
export function formatRetrievalSection(
  ranked: readonly ScoredChunk[],
  budget: number,
  countTokens: (text: string) => number | Promise<number>,
): Promise<FittedSection> {
  const blocks = ranked.map(formatRetrievedChunk);
  return fitSection(blocks, (chosen) => `${RETRIEVAL_TITLE}\n${chosen.map((i) => blocks[i]!).join('')}`, budget, countTokens);
}
