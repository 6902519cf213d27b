/**
 * What `@reposnap` attaches to an answer (issue 32, item 1): the packed files as
 * `stream.reference`s, highest kept share first (the order of the webview's Context line,
 * src/chat/context-line.ts), and the answer's `path:line` places (and the files it names without a line) as `stream.anchor`s (found as
 * the webview finds its file links, src/chat/links.ts). Plain TypeScript: paths only, the
 * participant makes the `vscode.Uri`s and `vscode.Location`s.
 */
import { byKeptShare, type ContextReport } from '../../pipeline/context-report';
import { findFileReferences } from '../links';

/** Packed files given as references per answer; the rest are in the Context line of the RepoSnap view. */
export const MAX_REFERENCES = 20;

/** A packed file as a reference: its repository-relative path and the share of its KV positions SnapKV kept (null: not known). */
export interface PackedReference {
  path: string;
  keptShare: number | null;
}

/**
 * The files in the prompt (full, retrieved or in the repository map; not the left-out ones),
 * highest kept share first (`byKeptShare`), at most `max`.
 */
export function packedReferences(report: ContextReport | undefined, max = MAX_REFERENCES): PackedReference[] {
  if (!report) return [];
  return byKeptShare(report.files)
    .filter((f) => f.status !== 'left-out')
    .slice(0, max)
    .map((f) => ({ path: f.path, keptShare: f.keptShare }));
}

/** A place named in an answer: a `path:line` (1-based line and column), or a file named without a line (`line` absent). */
export interface AnswerPlace {
  path: string;
  line?: number;
  column?: number;
}

/**
 * The places an answer names, in order, each once: its `path:line` references first, then the
 * files it names without a line that no `path:line` already points into (anchored at the file).
 */
export function answerPlaces(text: string): AnswerPlace[] {
  const seen = new Set<string>();
  const lines: AnswerPlace[] = [];
  const files: AnswerPlace[] = [];
  const refs = findFileReferences(text);
  const withLine = new Set(refs.filter((r) => r.line !== undefined).map((r) => r.path));
  for (const r of refs) {
    const key = r.line === undefined ? r.path : `${r.path}:${r.line}`;
    if (seen.has(key) || (r.line === undefined && withLine.has(r.path))) continue;
    seen.add(key);
    if (r.line === undefined) files.push({ path: r.path });
    else lines.push({ path: r.path, line: r.line, ...(r.column !== undefined ? { column: r.column } : {}) });
  }
  return [...lines, ...files];
}
