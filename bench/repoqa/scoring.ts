/**
 * Exact-match scoring of a model's answer (issue 13, part 3).
 *
 * Small models answer in a sentence that repeats the question's subject ("The function `charsets`
 * is defined in the `index.js` file."), so the answer's candidate is taken as follows:
 * 1. for a path: the first word or code span that looks like a path (holds a `/` or ends with a
 *    source-file extension);
 * 2. else the first line of a fenced code block, when the answer opens with one;
 * 3. else the first code span (`…`) whose content is not the question's subject;
 * 4. else the last word of the answer's first sentence (up to the first `. `, newline or the end):
 *    "The first parameter of charset is available." → `available`.
 * The candidate is then normalised: quotes, brackets, trailing punctuation (`.,;:!?`) and a
 * trailing call `()` / `(…)` removed, case folded, and by the kind of answer:
 *    - path (`file`): a leading `./` or `/` and a trailing `:line` (`:line:column`) dropped (the
 *      product's prompt asks for `path:line` citations); the expected file's name alone stands for
 *      its path when no other file of the repository has that name;
 *    - identifier (`doc`, `first-call`, `param`, and `return` of an identifier): a dotted
 *      candidate (`exports.log`) reduced to its last segment;
 *    - value (`constant`, `return`): numbers compared by value (`1e3` = `1000`), anything else as
 *      folded text (`'utf-8'` = `UTF-8`).
 * An answer is correct when its normalised candidate equals the normalised expected answer; two
 * answers agree when their normalised candidates are equal.
 *
 * {@link answerComplete} is the stop rule of the greedy answers (full attention and every
 * branch alike): an answer ends at the end of generation, at the token limit, or once its
 * candidate is settled (a newline after some text, a closed code span or path that the rules
 * above would take, or the end of the first sentence).
 */
import type { Question, QuestionKind } from './questions';

/** How an expected answer is compared. */
export type AnswerType = 'path' | 'identifier' | 'value';

/** The answer type of a question kind (a `return` of an identifier compares as an identifier). */
export function answerType(kind: QuestionKind, expected: string): AnswerType {
  if (kind === 'file') return 'path';
  if (kind === 'constant') return 'value';
  if (kind === 'return') return /^[A-Za-z_$][\w$]*$/.test(expected) && !['true', 'false', 'null', 'undefined'].includes(expected) ? 'identifier' : 'value';
  return 'identifier';
}

/** What the scorer needs to know about the question. */
export interface ScoringContext {
  kind: QuestionKind;
  /** The expected answer (decides the answer type). */
  expected: string;
  /** The function or constant the question names (a code span repeating it is skipped); '' for none. */
  subject: string;
  /** The repository's file paths (a unique file name stands for its path). */
  files: readonly string[];
}

/** The scoring context of a question: a `doc` question names no function (its answer is one). */
export function scoringContext(q: Pick<Question, 'kind' | 'answer' | 'subject'>, files: readonly string[]): ScoringContext {
  return { kind: q.kind, expected: q.answer, subject: q.kind === 'doc' ? '' : q.subject, files };
}

/** A path, optionally cited with `:line`, `:line:column` or a line range `:start-end` (the retrieval section shows ranges). */
const PATH_LIKE = /^[\w@.\-/]*(\/[\w@.\-]+|\.(c|m)?(js|ts)x?|\.json)(:\d+(-\d+)?){0,2}$/i;

/** Strips quotes, brackets, trailing punctuation and a trailing call. */
function strip(s: string): string {
  let c = s.trim();
  for (let prev = ''; prev !== c; ) {
    prev = c;
    c = c.replace(/[.,;:!?]+$/, '').trim();
    c = c.replace(/\([^()]*\)$/, '').trim();
    const unquoted = c.replace(/^(['"“‘(\[{<*_`])+/, '').replace(/(['"”’)\]}>*_`])+$/, '').trim();
    // an identifier made of underscores (`_`, a common unused parameter) is kept, not read as emphasis
    c = unquoted === '' && /^_+$/.test(c) ? c : unquoted;
  }
  return c;
}

/** Code spans of a text, in order (closed ones only). */
function codeSpans(text: string): string[] {
  const out: string[] = [];
  const re = /(`+)([^`]+?)\1(?!`)/g;
  for (let m = re.exec(text); m; m = re.exec(text)) out.push(m[2]!.trim());
  return out;
}

/** The answer's first sentence: up to the first `. ` / newline after some text, or all of it. */
function firstSentence(text: string): { sentence: string; ended: boolean } {
  const t = text.trimStart();
  const m = /\.\s|\n/.exec(t);
  return m ? { sentence: t.slice(0, m.index), ended: true } : { sentence: t, ended: false };
}

/** Whether a candidate repeats the question's subject. */
function isSubject(c: string, subject: string): boolean {
  return subject !== '' && strip(c).toLowerCase() === subject.toLowerCase();
}

/**
 * The candidate of an answer (rules 1–4 of the file's doc), stripped but not yet normalised;
 * `settled` says whether more text could change it (the stop rule).
 */
export function extractCandidate(answer: string, ctx: ScoringContext): { candidate: string; settled: boolean } {
  const text = answer.trim();
  const type = answerType(ctx.kind, ctx.expected);
  const spans = codeSpans(text);
  if (type === 'path') {
    const words = text.split(/\s+/).map(strip);
    const complete = /\s$/.test(answer) ? words : words.slice(0, -1);
    const inSpan = spans.map(strip).find((s) => PATH_LIKE.test(s));
    const inWords = complete.find((w) => PATH_LIKE.test(w));
    const p = inSpan ?? inWords;
    if (p) return { candidate: p, settled: true };
  }
  const fence = /^(`{3,}|~{3,})[^\n]*\n([\s\S]*)$/.exec(text);
  if (fence) {
    const lines = fence[2]!.split('\n');
    const line = lines.find((l) => l.trim() !== '' && !/^(`{3,}|~{3,})/.test(l.trim()));
    return { candidate: strip(line ?? ''), settled: line !== undefined && lines.indexOf(line) < lines.length - 1 };
  }
  const span = spans.find((s) => !isSubject(s, ctx.subject));
  if (span !== undefined) return { candidate: strip(span), settled: true };
  const { sentence, ended } = firstSentence(answer);
  // an open code span keeps the answer going
  const open = (sentence.match(/`/g)?.length ?? 0) % 2 === 1;
  const words = sentence.split(/\s+/).filter((w) => w !== '');
  const last = strip(words[words.length - 1] ?? '');
  return { candidate: isSubject(last, ctx.subject) ? '' : last, settled: ended && !open };
}

/** Whether the greedy answer can stop: its candidate is settled (see the file's doc). */
export function answerComplete(answer: string, ctx: ScoringContext): boolean {
  return extractCandidate(answer, ctx).settled;
}

/** Normalises a candidate (or the expected answer) for comparison. */
export function normalise(candidate: string, type: AnswerType, files: readonly string[] = []): string {
  let c = strip(candidate).toLowerCase();
  if (type === 'path') {
    c = c.replace(/^\.?\//, '').replace(/(:\d+(-\d+)?){1,2}$/, '');
    if (!c.includes('/')) {
      const same = files.filter((f) => f.toLowerCase() === c || f.toLowerCase().endsWith(`/${c}`));
      if (same.length === 1) c = same[0]!.toLowerCase();
    }
    return c;
  }
  if (type === 'identifier') {
    const parts = c.split('.');
    return parts[parts.length - 1]!;
  }
  if (c !== '' && !Number.isNaN(Number(c))) return String(Number(c));
  return c;
}

/** The normalised answer of a model's text. */
export function normalisedAnswer(answer: string, ctx: ScoringContext): string {
  return normalise(extractCandidate(answer, ctx).candidate, answerType(ctx.kind, ctx.expected), ctx.files);
}

/** Whether an answer matches the expected answer exactly after normalisation. */
export function isCorrect(answer: string, ctx: ScoringContext): boolean {
  const a = normalisedAnswer(answer, ctx);
  return a !== '' && a === normalise(ctx.expected, answerType(ctx.kind, ctx.expected), ctx.files);
}

/** Whether two answers to the same question agree (their normalised candidates are equal). */
export function agrees(a: string, b: string, ctx: ScoringContext): boolean {
  return normalisedAnswer(a, ctx) === normalisedAnswer(b, ctx);
}
