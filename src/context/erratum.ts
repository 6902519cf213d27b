/**
 * The erratum (issue 30, strategy (c); after "Models Take Notes at Prefill", arXiv 2606.17107): after
 * an edit, keep the cached prompt as it was and add, after it and before the question, the new
 * version of each changed file (or a unified diff of it), each under a one-line note that it
 * replaces the earlier text. The prefix cache then holds all of the prompt before the erratum, so
 * the next question prefills only the erratum and the question.
 */
import { escapePathForHeader } from './section';

/**
 * What a question does after the repository changed since the cached prefix was made
 * (`reposnap.afterEdit`, `--after-edit`): `exact`, pack the repository again and prefill from the
 * first changed token (a cold pack's prompt); `erratum`, the cached prompt plus the new text of
 * each changed file; `erratum-diff`, the cached prompt plus a unified diff of each.
 */
export const AFTER_EDIT_STRATEGIES = ['exact', 'erratum', 'erratum-diff'] as const;

/** One of {@link AFTER_EDIT_STRATEGIES}. */
export type AfterEdit = (typeof AFTER_EDIT_STRATEGIES)[number];

/** A file section as the erratum compares them: its path and its formatted text (`formatFileSection`). */
export interface ErratumFile {
  path: string;
  text: string;
}

/** One file that differs between the cached prompt and the repository now. */
export interface FileChange {
  path: string;
  kind: 'changed' | 'added' | 'deleted';
}

/** An erratum: its text and the files it covers. */
export interface Erratum {
  /** The text that goes after the cached prompt ('' when nothing changed). */
  text: string;
  /** The changed files, in the order of the erratum: changed and added as in `current`, then deleted as in `base`. */
  changes: FileChange[];
}

/** The files that differ between `base` (the cached prompt's) and `current`, by path and text. */
export function fileChanges(base: readonly ErratumFile[], current: readonly ErratumFile[]): FileChange[] {
  const before = new Map(base.map((f) => [f.path, f.text]));
  const now = new Set(current.map((f) => f.path));
  const changes: FileChange[] = [];
  for (const f of current) {
    const old = before.get(f.path);
    if (old === undefined) changes.push({ path: f.path, kind: 'added' });
    else if (old !== f.text) changes.push({ path: f.path, kind: 'changed' });
  }
  for (const f of base) if (!now.has(f.path)) changes.push({ path: f.path, kind: 'deleted' });
  return changes;
}

/**
 * The erratum that brings a prompt holding `base`'s file sections up to `current`'s: for a changed
 * file its new section (`form: 'file'`) or a unified diff of the section's lines with 3 lines of
 * context (`'diff'`); for an added file its section; for a deleted one a line saying so. Each is
 * under a one-line note naming the path. Pure.
 */
export function buildErratum(base: readonly ErratumFile[], current: readonly ErratumFile[], form: 'file' | 'diff'): Erratum {
  const changes = fileChanges(base, current);
  if (changes.length === 0) return { text: '', changes };
  const before = new Map(base.map((f) => [f.path, f.text]));
  const after = new Map(current.map((f) => [f.path, f.text]));
  const parts = ['The repository changed after the files above were read. What follows is the current version; where it differs from the text above, it replaces it.\n'];
  for (const c of changes) {
    const name = escapePathForHeader(c.path);
    if (c.kind === 'deleted') parts.push(`${name} was deleted: its text above no longer exists.\n`);
    else if (c.kind === 'added') parts.push(`${name} was added:\n${after.get(c.path)!}`);
    else if (form === 'file') parts.push(`${name} was edited; this replaces its earlier text above:\n${after.get(c.path)!}`);
    else parts.push(`${name} was edited; this diff of its text above gives the current text:\n${fenced(unifiedDiff(before.get(c.path)!, after.get(c.path)!, c.path))}`);
  }
  return { text: parts.join(''), changes };
}

/** `text` in a ```diff fence longer than any backtick run in it. */
function fenced(text: string): string {
  let longest = 0;
  for (const m of text.matchAll(/`+/g)) longest = Math.max(longest, m[0].length);
  const fence = '`'.repeat(Math.max(3, longest + 1));
  return `${fence}diff\n${text}${fence}\n`;
}

/** Longest files {@link unifiedDiff} diffs line by line [lines × lines]; larger pairs become one hunk of the whole text. */
const MAX_DIFF_CELLS = 4_000_000;

/**
 * A unified diff (`--- a/path`, `+++ b/path`, `@@ -s,n +s,n @@` hunks with `context` lines of
 * context) of two texts' lines, from a longest common subsequence (O(n·m); over
 * {@link MAX_DIFF_CELLS} one hunk replaces every line). Ends with a newline. Pure.
 */
export function unifiedDiff(a: string, b: string, path: string, context = 3): string {
  const x = splitLines(a);
  const y = splitLines(b);
  const ops = x.length * y.length <= MAX_DIFF_CELLS ? lcsOps(x, y) : [...x.map((l) => ({ op: '-' as const, line: l })), ...y.map((l) => ({ op: '+' as const, line: l }))];
  const out = [`--- a/${path}\n`, `+++ b/${path}\n`];
  // positions (1-based) in a and b at each op
  let ai = 1;
  let bi = 1;
  const pos = ops.map((o) => {
    const p = { a: ai, b: bi };
    if (o.op !== '+') ai++;
    if (o.op !== '-') bi++;
    return p;
  });
  let i = 0;
  while (i < ops.length) {
    if (ops[i]!.op === ' ') {
      i++;
      continue;
    }
    // a hunk: from `context` lines before the change to `context` after the last change within 2·context
    const start = Math.max(0, i - context);
    let end = i;
    let last = i;
    while (end < ops.length) {
      if (ops[end]!.op !== ' ') last = end;
      else if (end - last > 2 * context) break;
      end++;
    }
    end = Math.min(ops.length, last + context + 1);
    const hunk = ops.slice(start, end);
    const aLen = hunk.filter((o) => o.op !== '+').length;
    const bLen = hunk.filter((o) => o.op !== '-').length;
    const aStart = aLen === 0 ? pos[start]!.a - 1 : pos[start]!.a;
    const bStart = bLen === 0 ? pos[start]!.b - 1 : pos[start]!.b;
    out.push(`@@ -${aStart},${aLen} +${bStart},${bLen} @@\n`);
    for (const o of hunk) out.push(`${o.op}${o.line}\n`);
    i = end;
  }
  return out.join('');
}

/** Lines without their newlines (a final newline ends the last line, it does not start another). */
function splitLines(s: string): string[] {
  if (s === '') return [];
  const lines = s.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/** The edit script of a longest common subsequence of `x` and `y`: ' ' keep, '-' delete, '+' insert. */
function lcsOps(x: string[], y: string[]): { op: ' ' | '-' | '+'; line: string }[] {
  const n = x.length;
  const m = y.length;
  const w = m + 1;
  const len = new Uint32Array((n + 1) * w);
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) len[i * w + j] = x[i] === y[j] ? len[(i + 1) * w + j + 1]! + 1 : Math.max(len[(i + 1) * w + j]!, len[i * w + j + 1]!);
  }
  const ops: { op: ' ' | '-' | '+'; line: string }[] = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (x[i] === y[j]) {
      ops.push({ op: ' ', line: x[i]! });
      i++;
      j++;
    } else if (len[(i + 1) * w + j]! >= len[i * w + j + 1]!) ops.push({ op: '-', line: x[i++]! });
    else ops.push({ op: '+', line: y[j++]! });
  }
  while (i < n) ops.push({ op: '-', line: x[i++]! });
  while (j < m) ops.push({ op: '+', line: y[j++]! });
  return ops;
}
