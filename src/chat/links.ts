/**
 * Finds file references in an answer's text (`src/pipeline/ask.ts`, `ask.ts:42`,
 * `src/a.ts:10:5`, `src/a.ts#L10`, `src/a.ts:10-20`) so the chat view can turn them into links
 * that open the file at that line. A bare file name counts only with a known source-file
 * extension (so "e.g." or "Node.js 20" stay text unless they look like files); a path with a
 * `/` counts with any extension. URLs are not file references.
 */

/** One reference found in a text. */
export interface FileReference {
  /** Offsets in the text [start, end) of the whole reference, line suffix included. */
  start: number;
  end: number;
  /** The path as written (relative or absolute, `/`-separated). */
  path: string;
  /** 1-based line, when given. */
  line?: number;
  /** 1-based column, when given. */
  column?: number;
}

/** Extensions that make a bare name (no `/`) a file reference. */
export const SOURCE_EXTENSIONS: ReadonlySet<string> = new Set([
  'ts', 'tsx', 'mts', 'cts', 'js', 'jsx', 'mjs', 'cjs', 'json', 'jsonc', 'md', 'py', 'pyi', 'rs', 'go', 'java', 'kt', 'kts',
  'c', 'h', 'cc', 'cpp', 'cxx', 'hpp', 'hh', 'cu', 'cuh', 'm', 'mm', 'swift', 'cs', 'fs', 'rb', 'php', 'lua', 'sh', 'bash',
  'zsh', 'ps1', 'yml', 'yaml', 'toml', 'ini', 'cfg', 'xml', 'html', 'htm', 'css', 'scss', 'less', 'vue', 'svelte', 'sql',
  'proto', 'graphql', 'gradle', 'cmake', 'txt', 'gguf', 'patch', 'diff', 'lock', 'scala', 'dart', 'ex', 'exs', 'erl',
  'hs', 'ml', 'mli', 'clj', 'zig', 'nim', 'r', 'jl', 'pl', 'tf', 'svg', 'ipynb',
]);

/** Library names that look like files but are not (`Node.js`); only bare names, compared case-insensitively. */
const NOT_FILES: ReadonlySet<string> = new Set(['node.js', 'vue.js', 'next.js', 'nuxt.js', 'express.js', 'three.js', 'd3.js', 'chart.js', 'react.js', 'angular.js', 'ember.js', 'backbone.js', 'deno.js', 'bun.js']);

// path: optional ./ ../ or /, segments of [\w@.+-], a final segment with an extension
// suffix: :line, :line:col, :line-line, #Lline
const REFERENCE = /(?<![\w@.+\-/\\:])((?:\.{1,2}\/|\/)?(?:[\w@.+-]+\/)*[\w@+-][\w@.+-]*\.([A-Za-z][A-Za-z0-9]{0,9}))(?::(\d+)(?::(\d+)|-\d+)?|#L(\d+)(?:-L?\d+)?)?(?![\w/@+-]|\.\w)/g;

/** Every file reference in `text`, in order. */
export function findFileReferences(text: string): FileReference[] {
  const out: FileReference[] = [];
  for (const m of text.matchAll(REFERENCE)) {
    const [whole, path, ext, line, column, hashLine] = m;
    const start = m.index!;
    // part of a URL (`https://host/x.ts`): the scheme's `//` sits right before the host
    if (/[A-Za-z][\w+.-]*:\/\/\S*$/.test(text.slice(Math.max(0, start - 200), start))) continue;
    const hasSlash = path!.includes('/');
    if (!hasSlash && (!SOURCE_EXTENSIONS.has(ext!.toLowerCase()) || NOT_FILES.has(path!.toLowerCase()))) continue;
    const ref: FileReference = { start, end: start + whole.length, path: path! };
    const l = line ?? hashLine;
    if (l !== undefined && Number(l) >= 1) ref.line = Number(l);
    if (column !== undefined && Number(column) >= 1) ref.column = Number(column);
    out.push(ref);
  }
  return out;
}
