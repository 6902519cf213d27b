import { escapePathForHeader, formatFileSection } from '../section';
import type { Definition } from './tags';

/**
 * The header line of the repository map section. It says what the numbers are without a
 * `line:` pattern: with the earlier title `(files not shown in full: line: definition)` the model
 * cited `lib/time.js:line:10` (bench/repoqa/large, issue 15).
 */
export const REPOSITORY_MAP_TITLE = 'Repository map (files not shown in full, each definition after its line number)';

/**
 * One file's block of the repository map: its path (escaped as in section headers) and a colon,
 * then one line per definition, `  <line>: <signature>`, in source order. Ends with a newline.
 * Pure.
 */
export function formatMapBlock(path: string, definitions: readonly Definition[]): string {
  return `${escapePathForHeader(path)}:\n${definitions.map((d) => `  ${d.line}: ${d.signature}\n`).join('')}`;
}

/**
 * What the secret scan of a map block reads: the whole source lines its signatures come from,
 * uncut and untrimmed, one per distinct definition line in source order, joined by `\n`. A
 * signature is cut at `SIGNATURE_MAX_CHARS`, so the block itself can hold the first part of a
 * secret the scanner no longer recognizes (a one-line PEM key, a token past column 190): the
 * scan reads the lines before the cut, and a block whose lines hold a secret is left out whole.
 * @param text the file's decoded text, as parsed (`parse(text)`: lines split at `\n`).
 * @param definitions the block's definitions (`FileTags.definitions`).
 * @returns `text`, the lines joined, and `lines`, the 1-based file line of each of them (so that
 *   a finding's line `k` is the file's line `lines[k - 1]`). Pure.
 */
export function mapBlockSource(text: string, definitions: readonly Definition[]): { text: string; lines: number[] } {
  const fileLines = text.split('\n');
  const lines = [...new Set(definitions.map((d) => d.line))].sort((a, b) => a - b);
  return { text: lines.map((l) => fileLines[l - 1] ?? '').join('\n'), lines };
}

/** The repository map section: `REPOSITORY_MAP_TITLE` and a fenced block of `blocks` in the order given. Pure. */
export function formatRepositoryMap(blocks: readonly string[]): string {
  return formatFileSection(REPOSITORY_MAP_TITLE, blocks.join(''));
}
