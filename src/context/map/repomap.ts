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

/** The repository map section: `REPOSITORY_MAP_TITLE` and a fenced block of `blocks` in the order given. Pure. */
export function formatRepositoryMap(blocks: readonly string[]): string {
  return formatFileSection(REPOSITORY_MAP_TITLE, blocks.join(''));
}
