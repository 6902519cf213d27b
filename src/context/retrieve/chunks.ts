import type { GrammarId } from '../map/languages';
import type { Definition, FileTags } from '../map/tags';

/** A piece of a source file that retrieval can rank and quote: one function, method, type's header or small type. */
export interface Chunk {
  /** Path of the file, relative to the repository root (`/`-separated). */
  path: string;
  /** The defined name as written (`constructor`, `ValidationError`, `Push`). */
  name: string;
  /**
   * The name of the type a method belongs to (`ValidationError` for its `constructor`): the
   * innermost class, interface, struct or trait holding it, else for a method defined outside
   * its type the type its code names (Go's receiver `func (q *Queue) Push`, C++'s `Queue::push`,
   * Rust's `impl Queue` / `impl Trait for Queue` around it). Absent for everything else.
   */
  owner?: string;
  /**
   * 1-based first line: the first line of the definition's leading doc comment when it has one
   * (`leadingComment`), else the name's line (see `Definition.line`).
   */
  startLine: number;
  /**
   * The name's line (1-based, `Definition.line`) when the chunk starts above it, at its leading doc
   * comment (`startLine < nameLine <= endLine`), and on the piece of such a chunk that holds it
   * (`pieceOf`; the first, which may start on it); absent when the chunk starts at the name's line.
   */
  nameLine?: number;
  /** 1-based last line, inclusive. */
  endLine: number;
  /** Lines `startLine … endLine` of the file, joined with `\n` (no final newline). */
  text: string;
  /**
   * When the chunk is one of several consecutive pieces of a longer definition: that
   * definition's first and last lines (1-based, inclusive). Set on a type's header pieces after
   * the first (`chunksOf`) and on the pieces of a chunk too large for the retrieval room
   * (`piecesToFit`); the section says so in the piece's block (`formatRetrievedChunk`).
   */
  partOf?: { startLine: number; endLine: number };
}

/**
 * Longest header chunk of a type with methods, in UTF-16 code units (~4 per token in code, so
 * about 400 tokens): a header with more fields is cut after the last line that fits (its first
 * line always kept) and its remaining lines go on in further header chunks of at most this size,
 * so that no header crowds the question's retrieval section (921 tokens at a 6,144-token context
 * and the default share) and no field is left out.
 */
export const HEADER_MAX_CHARS = 1600;

/**
 * The retrieval chunks of one file, in source order:
 *
 * - every function and method, with its `owner` (the type it belongs to, see `Chunk.owner`);
 * - every class, interface or type that holds no function or method, whole;
 * - for a class, interface, struct or trait that holds methods, its header: from its name's line
 *   to the line before its first method or nested type (the declaration, its fields, a Python
 *   docstring), without the blank, comment, decorator and attribute lines that lead into that
 *   member, in pieces of at most `HEADER_MAX_CHARS` (the later ones with `partOf`, the type's
 *   lines); then, as further header pieces with `partOf`, every run of its lines after the first
 *   member that lies in no member (fields declared between or after methods), without leading
 *   blank and closing-bracket lines and trailing lead-in and closing-bracket lines (a run of
 *   only those, such as the type's closing `}`, is none). So a question naming a class finds the class's own
 *   declaration (`export default class ValidationError extends Error` and its `errors` field),
 *   not only its methods (ajv's ValidationError and MissingRefError were retrieved by their
 *   constructors, named `constructor`, and the model named a file that only used them);
 * - every constant that holds no function or method and lies in no other definition (a
 *   module-level `const` such as axios's `export const VERSION = "1.21.1";`: most files that are
 *   not in full are not in the repository map either at a small context, so without its chunk a
 *   constant's value was nowhere in the prompt; issue 15).
 *
 * Each chunk (a type's first header piece) starts at its definition's leading doc comment when it
 * has one (`leadingComment`: the JSDoc block or `//` / `#` run right above it, the decorators
 * between included; `nameLine` then gives the name's line), so that a question in the comment's
 * words ("Which function compares two levels?") matches its text; a member's comment is its own,
 * not its type header's.
 *
 * No chunk holds another's lines, except a function or type nested in a function (inside its
 * function's chunk) and a header whose first method starts on the header's first line
 * (`class A { f() {} }`: both chunks are that line).
 * `text` is the file's content as packed (LF line ends). Pure; O(n log n) in the definitions (a
 * sort, then one pass with a stack of enclosing ones: `definitionNesting`) and linear in the lines
 * (issue 29, item 7: each definition scanned all the others, 20 s of CPU for 40K one-line ones).
 */
export function chunksOf(path: string, text: string, tags: FileTags): Chunk[] {
  const lines = text.split('\n');
  const defs = tags.definitions;
  const nesting = definitionNesting(defs);
  const chunks: Chunk[] = [];
  const push = (def: Definition, startLine: number, endLine: number, owner?: string, partOf?: Chunk['partOf']): void => {
    const text = lines.slice(startLine - 1, endLine).join('\n');
    const nameLine = startLine < def.line && def.line <= endLine ? { nameLine: def.line } : {};
    chunks.push({ path, name: def.name, ...(owner !== undefined ? { owner } : {}), startLine, ...nameLine, endLine, text, ...(partOf !== undefined ? { partOf } : {}) });
  };
  for (const def of defs) {
    if (def.kind === 'const' && nesting.heldByNonConst(def)) continue;
    const endLine = Math.min(Math.max(def.endLine, def.line), lines.length);
    const first = leadingComment(tags.grammar, lines, def.line);
    if (isCallable(def)) {
      // the innermost type around it (the latest-starting one: types nest, they do not overlap)
      const around = nesting.innermostType(def);
      push(def, first, endLine, around?.name ?? ownerInCode(tags.grammar, lines, def));
      continue;
    }
    const members = nesting.members(def);
    if (!isType(def) || members.length === 0) {
      if (members.length === 0) push(def, first, endLine);
      continue;
    }
    const partOf = { startLine: first, endLine };
    // each member's lines from its doc comment (one on the type's first line: from that line)
    const spans = members.map((m): [number, number] => {
      const start = leadingComment(tags.grammar, lines, m.line);
      return [start > def.line ? start : m.line, m.endLine];
    });
    headerRuns(lines, def.line, endLine, spans).forEach(([runStart, runEnd], r) => {
      // the declaration's run from its doc comment; each run in pieces of at most HEADER_MAX_CHARS
      // (at least one line each; the first down to the name's line at least)
      for (let start = r === 0 ? first : runStart; start <= runEnd; ) {
        let chars = (lines[start - 1] ?? '').length;
        let cut = start;
        while (cut < runEnd && (cut < def.line || chars + 1 + (lines[cut] ?? '').length <= HEADER_MAX_CHARS)) chars += 1 + (lines[cut++] ?? '').length;
        push(def, start, cut, undefined, r === 0 && start === first ? undefined : partOf);
        start = cut + 1;
      }
    });
  }
  // a type's header pieces after its methods' lines: by first line (stable: a header before the
  // method starting on its line)
  return chunks.sort((a, b) => a.startLine - b.startLine);
}

/** Functions and methods: each is its own chunk. */
const isCallable = (d: Definition): boolean => d.kind === 'function' || d.kind === 'method';
/** Classes, interfaces and types: a header chunk when they hold members, else whole. */
const isType = (d: Definition): boolean => d.kind === 'class' || d.kind === 'interface' || d.kind === 'type';

/** How a file's definitions hold one another (`definitionNesting`); `holds(o, d)`: `o !== d`, `o.line <= d.line`, `o.endLine >= d.endLine`. */
export interface DefinitionNesting {
  /** Whether a definition other than a constant holds `def`. */
  heldByNonConst(def: Definition): boolean;
  /** The innermost type holding `def`: the latest-starting one, the first in source order among equals. */
  innermostType(def: Definition): Definition | undefined;
  /** The definitions `def` holds that are functions or methods, or types that hold one, in source order. */
  members(def: Definition): Definition[];
}

/**
 * The nesting of `defs` (one file's definitions, in source order), built in one pass: definitions
 * with the same line range form one group (they hold one another); groups sorted by first line,
 * then last line descending, so that a group's enclosing groups are the stack of those still open
 * when it starts, and the groups it holds follow it contiguously. Exact for ranges that nest or
 * are disjoint (a syntax tree's); a range that partly overlaps another is treated as ending where
 * the next one that it does not hold begins. O(n log n) to build; each query costs the depth of
 * the groups that share `def`'s first line (`innermostType`) or the number of definitions `def`
 * holds (`members`).
 */
export function definitionNesting(defs: readonly Definition[]): DefinitionNesting {
  interface Group {
    line: number;
    endLine: number;
    defs: Definition[];
    parent: Group | undefined;
    /** Index in `order`, and one past the last group it holds. */
    at: number;
    end: number;
    /** Whether a non-constant definition holds the group (an enclosing group has one). */
    nonConstAbove: boolean;
    /** Whether a group it holds has a function or method. */
    callableBelow: boolean;
  }
  const byRange = new Map<string, Group>();
  const groupOf = new Map<Definition, Group>();
  for (const d of defs) {
    const key = `${d.line}:${d.endLine}`;
    let g = byRange.get(key);
    if (g === undefined) {
      g = { line: d.line, endLine: d.endLine, defs: [], parent: undefined, at: 0, end: 0, nonConstAbove: false, callableBelow: false };
      byRange.set(key, g);
    }
    g.defs.push(d);
    groupOf.set(d, g);
  }
  const order = [...byRange.values()].sort((a, b) => a.line - b.line || b.endLine - a.endLine);
  const stack: Group[] = [];
  order.forEach((g, i) => {
    g.at = i;
    while (stack.length > 0 && stack[stack.length - 1]!.endLine < g.endLine) stack.pop()!.end = i;
    const parent = stack[stack.length - 1];
    g.parent = parent;
    g.nonConstAbove = parent !== undefined && (parent.nonConstAbove || parent.defs.some((d) => d.kind !== 'const'));
    if (g.defs.some(isCallable)) {
      for (let up: Group | undefined = parent; up !== undefined && !up.callableBelow; up = up.parent) up.callableBelow = true;
    }
    stack.push(g);
  });
  for (const g of stack) g.end = order.length;
  const rank = new Map<Definition, number>(defs.map((d, i) => [d, i]));
  const holdsCallable = (d: Definition): boolean => {
    const g = groupOf.get(d)!;
    return g.callableBelow || g.defs.some((o) => o !== d && isCallable(o));
  };
  return {
    heldByNonConst(def) {
      const g = groupOf.get(def)!;
      return g.nonConstAbove || g.defs.some((o) => o !== def && o.kind !== 'const');
    },
    innermostType(def) {
      const g = groupOf.get(def)!;
      // the latest first line among the holding types, then the first in source order
      let best: Definition | undefined;
      let bestLine = -Infinity;
      const consider = (o: Definition): void => {
        if (o === def || !isType(o)) return;
        if (o.line > bestLine || (o.line === bestLine && rank.get(o)! < rank.get(best!)!)) {
          best = o;
          bestLine = o.line;
        }
      };
      g.defs.forEach(consider);
      for (let up: Group | undefined = g.parent; up !== undefined && up.line >= bestLine; up = up.parent) up.defs.forEach(consider);
      return best;
    },
    members(def) {
      const g = groupOf.get(def)!;
      const found = g.defs.filter((o) => o !== def);
      for (let i = g.at + 1; i < g.end; i++) found.push(...order[i]!.defs);
      return found.filter((o) => isCallable(o) || (isType(o) && holdsCallable(o))).sort((a, b) => rank.get(a)! - rank.get(b)!);
    },
  };
}

/**
 * The header runs of a type spanning lines `first … last` (1-based, inclusive) whose members
 * (methods, nested types with methods) span the `[start, end]` line pairs `members` (from their
 * doc comments, `leadingComment`), as `[start, end]` line pairs in order: the declaration (its
 * first line always, to the line before the first member, less trailing lead-in lines), then each
 * run of later lines in no member, less leading blank and closing lines and trailing lead-in and
 * closing lines, when anything is left. Pure.
 */
function headerRuns(lines: readonly string[], first: number, last: number, members: ReadonlyArray<readonly [number, number]>): Array<[number, number]> {
  const firstMember = Math.min(...members.map(([start]) => start));
  let end = Math.min(Math.max(first, firstMember - 1), lines.length);
  while (end > first && LEAD_IN.test(lines[end - 1] ?? '')) end--;
  const runs: Array<[number, number]> = [[first, end]];
  // lines covered by a member, by a running count over the members' starts and ends: linear, not lines × members
  const last1 = Math.min(last, lines.length);
  const delta = new Int32Array(last1 + 2);
  for (const [start, stop] of members) {
    if (stop < start || start > last1) continue;
    delta[Math.max(start, 0)]!++;
    delta[Math.min(stop, last1) + 1]!--;
  }
  const covered = new Uint8Array(last1 + 2);
  for (let l = 0, n = 0; l <= last1; l++) covered[l] = (n += delta[l]!) > 0 ? 1 : 0;
  const inMember = (line: number): boolean => line >= 0 && line <= last1 && covered[line] === 1;
  for (let line = firstMember + 1; line <= Math.min(last, lines.length); line++) {
    if (inMember(line)) continue;
    let runEnd = line;
    while (runEnd < Math.min(last, lines.length) && !inMember(runEnd + 1)) runEnd++;
    let start = line;
    while (start <= runEnd && (BLANK.test(lines[start - 1]!) || CLOSING.test(lines[start - 1]!))) start++;
    let stop = runEnd;
    while (stop >= start && (LEAD_IN.test(lines[stop - 1]!) || CLOSING.test(lines[stop - 1]!))) stop--;
    if (start <= stop) runs.push([start, stop]);
    line = runEnd;
  }
  return runs;
}

/**
 * Longest leading doc comment a definition's chunk takes, in UTF-16 code units (~4 per token in
 * prose, so about 600 tokens): a longer run of comment lines above a definition (a licence banner,
 * commented-out code) is left out of its chunk, which then starts at the name's line as before.
 */
export const DOC_MAX_CHARS = 2400;

/**
 * The first line (1-based) of the doc comment directly above line `line` of `lines` (a
 * definition's name line): the comments right above it, with no blank line between, through the
 * decorator, annotation and attribute lines between them and the definition (`@Override`,
 * `@property`, Rust's `#[inline]`, which the chunk then holds too, as it holds the comment).
 * A comment is a run of whole-line comments: `//` lines (not Rust's inner `//!`) and whole-line
 * `/* … *\/` blocks (`/**` JSDoc and Javadoc), or in Python `#` lines (a docstring is inside the
 * body already). `line` itself when there is none, when only decorators lie above, or when the
 * comment lines above (decorators included) exceed `DOC_MAX_CHARS`. Pure.
 */
export function leadingComment(grammar: GrammarId, lines: readonly string[], line: number): number {
  const lineComment = grammar === 'python' ? /^\s*#(?!!)/ : /^\s*\/\/(?!!)/;
  const decorator = grammar === 'python' ? /^\s*@/ : grammar === 'rust' ? /^\s*#\[/ : grammar === 'cpp' || grammar === 'go' ? /(?!)/ : /^\s*@/;
  const block = grammar !== 'python';
  let first = line;
  let chars = 0;
  for (let i = line - 1; i >= 1; ) {
    const text = lines[i - 1] ?? '';
    let top = i;
    if (decorator.test(text)) {
      i--;
      chars += text.length + 1;
      continue;
    }
    if (lineComment.test(text)) top = i;
    else if (block && /\*\/\s*$/.test(text)) {
      // up to the line that opens the block, which must open it at its start
      while (top >= 1 && !(lines[top - 1] ?? '').includes('/*')) top--;
      if (top < 1 || !/^\s*\/\*(?!!)/.test(lines[top - 1]!)) break;
    } else break;
    for (let j = top; j <= i; j++) chars += (lines[j - 1] ?? '').length + 1;
    if (chars > DOC_MAX_CHARS) return line;
    first = top;
    i = top - 1;
  }
  return first;
}

/** A blank line. */
const BLANK = /^\s*$/;

/** A line that only closes brackets (`}`, `};`, `)],`) or a block (Ruby's and Lua's `end`). */
const CLOSING = /^\s*(?:[)\]}]+\s*[;,]?|end)\s*$/;

/**
 * A line that leads into the member after it rather than belonging to the type's header: blank,
 * a comment (`//`, `/*`, ` *`, `#`), a decorator or annotation (`@property`, `@Override`), a Rust
 * attribute (`#[inline]`).
 */
const LEAD_IN = /^\s*(?:$|\/\/|\/\*|\*|#|@)/;

/**
 * The type a method defined outside its type's body belongs to, from its code: Go's receiver
 * (`func (q *Queue[T]) Push(` → `Queue`), C++'s qualifier on the name's line
 * (`void Queue::push(` → `Queue`), Rust's `impl` block around it (`impl<T> Display for Queue<T>`
 * → `Queue`, the nearest `impl` line above it indented less). `undefined` when there is none.
 */
function ownerInCode(grammar: GrammarId, lines: readonly string[], def: Definition): string | undefined {
  const line = lines[def.line - 1] ?? '';
  switch (grammar) {
    case 'go':
      return /^\s*func\s*\(\s*(?:[\p{L}_][\p{L}\p{N}_]*\s+)?\*?\s*([\p{L}_][\p{L}\p{N}_]*)/u.exec(line)?.[1];
    case 'cpp': {
      const at = line.indexOf(`::${def.name}`);
      return at < 0 ? undefined : /([\p{L}_][\p{L}\p{N}_]*)\s*(?:<[^<>]*>)?$/u.exec(line.slice(0, at))?.[1];
    }
    case 'rust': {
      if (def.kind !== 'method') return undefined;
      const indent = (l: string): number => /^\s*/.exec(l)![0].length;
      const own = indent(line);
      for (let i = def.line - 2; i >= 0 && def.line - 2 - i < 400; i--) {
        const above = lines[i]!;
        if (above.trim() === '' || indent(above) >= own) continue;
        if (/^\s*(?:unsafe\s+)?impl\b/.test(above)) return rustImplType(above);
        if (indent(above) === 0 && !/^\s*(?:where\b|\{|[\p{L}_][\p{L}\p{N}_]*\s*:)/u.test(above)) return undefined;
      }
      return undefined;
    }
    default:
      return undefined;
  }
}

/** The type of a Rust `impl` line: `impl<T: Clone> fmt::Display for Queue<T> {` → `Queue`. */
function rustImplType(line: string): string | undefined {
  let plain = line;
  for (let before = ''; before !== plain; ) [before, plain] = [plain, plain.replace(/<[^<>]*>/g, '')];
  const m = /^\s*(?:unsafe\s+)?impl\s*(?:!?[\p{L}\p{N}_:]+\s+for\s+)?&?\s*(?:mut\s+)?(?:dyn\s+)?([\p{L}\p{N}_:]+)/u.exec(plain);
  return m?.[1]!.split('::').pop() || undefined;
}
