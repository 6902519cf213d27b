import * as path from 'node:path';
import { escapePathForHeader, formatFileSection } from '../section';
import { compareCodeUnits } from '../types';

/** The header line of the file tree section. */
export const FILE_TREE_TITLE = 'Repository file tree (one directory per line: its files)';

/**
 * The file tree's lines, one per directory that holds files, in code-unit order of the
 * directory: `dir/sub/: a.ts b.ts` (`./:` for the root; names escaped as in section headers,
 * and quoted with JSON string syntax when they hold a space or a `"`). `paths` are
 * `/`-separated and relative to the root; the result is the same for any order of `paths`.
 * Returns `{ dir, line }` pairs (`line` ends with a newline). Pure.
 */
export function fileTreeLines(paths: readonly string[]): Array<{ dir: string; line: string }> {
  const byDir = new Map<string, string[]>();
  for (const p of paths) {
    const dir = path.posix.dirname(p);
    const list = byDir.get(dir) ?? [];
    list.push(path.posix.basename(p));
    byDir.set(dir, list);
  }
  return [...byDir.keys()].sort(compareCodeUnits).map((dir) => {
    const names = byDir.get(dir)!.sort(compareCodeUnits).map(treeName);
    return { dir, line: `${dir === '.' ? '.' : escapePathForHeader(dir)}/: ${names.join(' ')}\n` };
  });
}

/**
 * The file tree section: `FILE_TREE_TITLE` and a fenced block of `lines` (the chosen ones of
 * `fileTreeLines`, in its order), with a last line `… N more files in M directories` when
 * `omittedFiles` > 0. Pure.
 */
export function formatFileTree(lines: readonly string[], omittedFiles: number, omittedDirs: number): string {
  const more = omittedFiles > 0 ? `… ${omittedFiles} more file${omittedFiles === 1 ? '' : 's'} in ${omittedDirs} director${omittedDirs === 1 ? 'y' : 'ies'}\n` : '';
  return formatFileSection(FILE_TREE_TITLE, lines.join('') + more);
}

function treeName(name: string): string {
  const escaped = escapePathForHeader(name);
  return /[\s"]/.test(escaped) ? JSON.stringify(escaped) : escaped;
}
