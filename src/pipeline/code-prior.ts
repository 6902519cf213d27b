/**
 * Where the code-aware prior's flags go in a prompt (issue 16, item 4; the scorer is
 * src/engine/policies/code-prior.ts): which sequence positions hold a definition's signature line
 * ({@link PRIOR_DEFINITION}) and which an identifier the question names ({@link PRIOR_IDENTIFIER}).
 *
 * The prompt is a concatenation of runs tokenized alone (pipeline/ask.ts: the template's head,
 * each packed section, the retrieval section, the thread and the question), so a run's tokens
 * start at a known position and map back to its text exactly: token t of a run covers the UTF-8
 * bytes [o_t, o_{t+1}) of its text, o_t the summed byte lengths of the tokens before it (the
 * model's own pieces, `EngineModel.tokenBytes`). A run whose pieces do not spell its text (a
 * tokenizer that normalizes it) gets no flag rather than a guessed one; a SentencePiece
 * tokenizer's added leading space is allowed for.
 */
import { grammarForPath } from '../context/map/languages';
import type { TagsCache } from '../context/map/cache';
import type { PackSection } from '../context/ranked';
import { PRIOR_DEFINITION, PRIOR_IDENTIFIER } from '../engine/policies/code-prior';

/** One run of the prompt, tokenized alone. */
export interface PromptRun {
  /** Sequence position of its first token. */
  start: number;
  /** Its tokens, as tokenized alone (what the prompt holds at start…start + tokens.length − 1). */
  tokens: ArrayLike<number>;
  /** The text they were tokenized from. */
  text: string;
  /** 1-based lines of `text` that are definition signature lines (flagged from their first non-blank character to the line's end). */
  definitionLines?: readonly number[];
}

/** The flags of a prompt and what they cover. */
export interface CodePriorFlags {
  /** Per sequence position 0…L−1: PRIOR_DEFINITION | PRIOR_IDENTIFIER, 0 for none. */
  flags: Uint8Array;
  /** Positions flagged as definitions [tokens]. */
  definitionTokens: number;
  /** Positions flagged as identifiers the question names [tokens]. */
  identifierTokens: number;
  /** Runs left unflagged because their tokens' pieces do not spell their text. */
  unmappedRuns: number;
}

/**
 * Byte offsets of a run's tokens in its text's UTF-8: Int32Array [n + 1], token t covering bytes
 * [o[t], o[t+1]) (clamped to [0, bytes]); null when the pieces, joined, are neither the text nor
 * the text after one added space (SentencePiece's prefix, which is then given to the first token).
 * @param tokenBytes a token's raw UTF-8 bytes (`EngineModel.tokenBytes`)
 */
export function tokenByteOffsets(tokenBytes: (token: number) => Uint8Array, tokens: ArrayLike<number>, text: string): Int32Array | null {
  const want = Buffer.from(text, 'utf8');
  const pieces: Uint8Array[] = [];
  let total = 0;
  for (let t = 0; t < tokens.length; t++) {
    const b = tokenBytes(tokens[t]!);
    pieces.push(b);
    total += b.length;
  }
  const joined = Buffer.concat(pieces, total);
  let shift = 0;
  if (!joined.equals(want)) {
    if (joined.length === want.length + 1 && joined[0] === 0x20 && joined.subarray(1).equals(want)) shift = 1;
    else return null;
  }
  const o = new Int32Array(tokens.length + 1);
  let at = 0;
  for (let t = 0; t < tokens.length; t++) {
    o[t] = Math.max(0, at - shift);
    at += pieces[t]!.length;
  }
  o[tokens.length] = want.length;
  return o;
}

const IDENT = /[A-Za-z_$][A-Za-z0-9_$]*/g;

/**
 * The identifiers a question names: identifier-shaped words (ASCII letters, digits, `_`, `$`)
 * that are written as code: with `_`, `$` or a digit, with an upper-case letter after the first
 * character (`camelCase`, `PascalCase` with an inner capital), inside backticks, or followed by
 * `(`. Plain words (`function`, `Which`) are not. Unique, in order of first mention.
 */
export function questionIdentifiers(question: string): string[] {
  const out = new Set<string>();
  const ticked = new Set<string>();
  for (const m of question.matchAll(/`([^`]+)`/g)) for (const w of m[1]!.match(IDENT) ?? []) ticked.add(w);
  for (const m of question.matchAll(IDENT)) {
    const w = m[0];
    const call = question[m.index + w.length] === '(';
    if (/[_$0-9]/.test(w) || /[A-Z]/.test(w.slice(1)) || ticked.has(w) || call) out.add(w);
  }
  return [...out];
}

/** Whether an ASCII byte can continue an identifier. */
function identByte(b: number | undefined): boolean {
  return b !== undefined && ((b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a) || b === 0x5f || b === 0x24);
}

/** Sets `flag` on the tokens of run (offsets o, first position start) that overlap bytes [a, b). */
function flagBytes(flags: Uint8Array, start: number, o: Int32Array, a: number, b: number, flag: number): void {
  // first token whose end is past a
  let lo = 0;
  let hi = o.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (o[mid + 1]! > a) hi = mid;
    else lo = mid + 1;
  }
  for (let t = lo; t < o.length - 1 && o[t]! < b; t++) if (o[t + 1]! > a && start + t < flags.length) flags[start + t] |= flag;
}

/**
 * The prior's flags of a prompt of L positions made of `runs` (see the file's doc): the signature
 * lines each run names, and every whole-word occurrence of each identifier (case-sensitive, not
 * inside a longer identifier) in every run.
 * @param tokenBytes a token's raw UTF-8 bytes (`EngineModel.tokenBytes`)
 */
export function codePriorFlags(L: number, runs: readonly PromptRun[], identifiers: readonly string[], tokenBytes: (token: number) => Uint8Array): CodePriorFlags {
  const flags = new Uint8Array(L);
  let unmappedRuns = 0;
  const needles = identifiers.map((w) => Buffer.from(w, 'utf8'));
  for (const run of runs) {
    const o = tokenByteOffsets(tokenBytes, run.tokens, run.text);
    if (!o) {
      unmappedRuns++;
      continue;
    }
    const bytes = Buffer.from(run.text, 'utf8');
    if (run.definitionLines && run.definitionLines.length > 0) {
      const wanted = new Set(run.definitionLines);
      let line = 1;
      let from = 0;
      while (from <= bytes.length) {
        const nl = bytes.indexOf(0x0a, from);
        const end = nl < 0 ? bytes.length : nl;
        if (wanted.has(line)) {
          let a = from;
          while (a < end && (bytes[a] === 0x20 || bytes[a] === 0x09)) a++;
          if (a < end) flagBytes(flags, run.start, o, a, end, PRIOR_DEFINITION);
        }
        if (nl < 0) break;
        from = nl + 1;
        line++;
      }
    }
    for (const needle of needles) {
      if (needle.length === 0) continue;
      for (let at = bytes.indexOf(needle); at >= 0; at = bytes.indexOf(needle, at + 1)) {
        if (identByte(bytes[at - 1]) || identByte(bytes[at + needle.length])) continue;
        flagBytes(flags, run.start, o, at, at + needle.length, PRIOR_IDENTIFIER);
      }
    }
  }
  let definitionTokens = 0;
  let identifierTokens = 0;
  for (const f of flags) {
    if (f & PRIOR_DEFINITION) definitionTokens++;
    if (f & PRIOR_IDENTIFIER) identifierTokens++;
  }
  return { flags, definitionTokens, identifierTokens, unmappedRuns };
}

/** Lines of a file section's header before the file's first line: the path line and the opening fence (`formatFileSection`). */
const FILE_SECTION_HEADER_LINES = 2;

/** A line of the repository map that lists a definition: `  <line>: <signature>` (`formatMapBlock`). */
const MAP_DEFINITION_LINE = /^ {2}\d+: /;

/**
 * The 1-based lines of a packed section that are definition signature lines: for a file in full
 * (`kind: 'file'` in a language the repository map parses), each tags definition's name line
 * (tree-sitter, through `tags`) shifted past the section's header; for the repository map, every
 * `  <line>: <signature>` line; none for the file tree or a file in another language.
 * @throws the tags parser's error when a grammar cannot be loaded.
 */
export async function sectionDefinitionLines(section: Pick<PackSection, 'kind' | 'path' | 'text'>, tags: TagsCache): Promise<number[]> {
  if (section.kind === 'map') {
    const out: number[] = [];
    section.text.split('\n').forEach((l, i) => {
      if (MAP_DEFINITION_LINE.test(l)) out.push(i + 1);
    });
    return out;
  }
  if (section.kind !== 'file' || section.path === undefined) return [];
  const grammar = grammarForPath(section.path);
  if (!grammar) return [];
  // the file's text: after the path line and the opening fence, before the closing fence line
  const first = section.text.indexOf('\n');
  const second = section.text.indexOf('\n', first + 1);
  const closing = section.text.lastIndexOf('\n', section.text.length - 2);
  if (first < 0 || second < 0 || closing < second) return [];
  const content = section.text.slice(second + 1, closing + 1);
  return (await fileDefinitionLines(section.path, content, tags)).map((line) => line + FILE_SECTION_HEADER_LINES);
}

/**
 * The 1-based lines of a source file's own text (no section header) that hold a definition's name
 * line: the tree-sitter tags definitions (functions, methods, classes, types, constants) of the
 * language `relPath`'s extension names, unique, in the tags' order; [] for a language the
 * repository map does not parse. What {@link sectionDefinitionLines} flags in a packed file,
 * shifted past its header; the benchmarks call it on files they lay out themselves.
 * @param relPath the file's path (only its extension is read, `grammarForPath`)
 * @throws the tags parser's error when a grammar cannot be loaded.
 */
export async function fileDefinitionLines(relPath: string, content: string, tags: TagsCache): Promise<number[]> {
  const grammar = grammarForPath(relPath);
  if (!grammar) return [];
  const t = await tags.tags(content, grammar);
  return [...new Set(t.definitions.map((d) => d.line))];
}
