import * as path from 'node:path';
import { escapePathForHeader, formatFileSection } from '../section';
import { compareCodeUnits } from '../types';

/** The header line of the file tree section. */
export const FILE_TREE_TITLE = 'Repository file tree (one directory per line: its files)';

/** Most file names on one line of the file tree; a larger directory takes several lines. */
export const TREE_NAMES_PER_LINE = 16;

/**
 * The file tree's lines: per directory that holds files, in code-unit order of the directory,
 * its file names in code-unit order, `TREE_NAMES_PER_LINE` to a line: `dir/sub/: a.ts b.ts`
 * (`./:` for the root; names escaped as in section headers, and quoted with JSON string syntax
 * when they hold white space or a `"`). `paths` are `/`-separated and relative to the root;
 * the result is the same for any order of `paths`. Returns each line (ending with a newline)
 * with its directory and the paths it lists, so that a budget can keep some lines. Pure.
 */
export function fileTreeLines(paths: readonly string[]): Array<{ dir: string; paths: string[]; line: string }> {
  const byDir = new Map<string, string[]>();
  for (const p of paths) {
    const dir = path.posix.dirname(p);
    const list = byDir.get(dir) ?? [];
    list.push(p);
    byDir.set(dir, list);
  }
  const lines: Array<{ dir: string; paths: string[]; line: string }> = [];
  for (const dir of [...byDir.keys()].sort(compareCodeUnits)) {
    const all = byDir.get(dir)!.sort(compareCodeUnits);
    for (let i = 0; i < all.length; i += TREE_NAMES_PER_LINE) {
      const some = all.slice(i, i + TREE_NAMES_PER_LINE);
      const names = some.map((p) => treeName(path.posix.basename(p)));
      lines.push({ dir, paths: some, line: `${dir === '.' ? '.' : escapePathForHeader(dir)}/: ${names.join(' ')}\n` });
    }
  }
  return lines;
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

/**
 * The compacted file tree's lines, for when not even one line of `fileTreeLines` fits the tree's
 * budget: one line per directory that holds files, in code-unit order of the directory, with its
 * file count instead of its names: `dir/sub/: 12 files` (`./:` for the root). Each line carries
 * every path of its directory, so that a budget can keep some directories. Pure.
 */
export function compactTreeLines(paths: readonly string[]): Array<{ dir: string; paths: string[]; line: string }> {
  const byDir = new Map<string, string[]>();
  for (const line of fileTreeLines(paths)) byDir.set(line.dir, [...(byDir.get(line.dir) ?? []), ...line.paths]);
  return [...byDir].map(([dir, all]) => ({ dir, paths: all, line: `${dir === '.' ? '.' : escapePathForHeader(dir)}/: ${all.length} file${all.length === 1 ? '' : 's'}\n` }));
}

function treeName(name: string): string {
  const escaped = escapePathForHeader(name);
  return /[\s"]/.test(escaped) ? JSON.stringify(escaped) : escaped;
}
