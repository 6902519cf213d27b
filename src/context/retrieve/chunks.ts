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
  /** 1-based first line (the name's line, see `Definition.line`). */
  startLine: number;
  /** 1-based last line, inclusive. */
  endLine: number;
  /** Lines `startLine … endLine` of the file, joined with `\n` (no final newline). */
  text: string;
}

/**
 * Longest header chunk of a type with methods, in UTF-16 code units (~4 per token in code, so
 * about 400 tokens): a header with more fields is cut after the last line that fits (its first
 * line always kept), so that it never crowds the question's retrieval section (921 tokens at a
 * 6,144-token context and the default share).
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
 *   member, cut to `HEADER_MAX_CHARS`. So a question naming a class finds the class's own
 *   declaration (`export default class ValidationError extends Error` and its `errors` field),
 *   not only its methods (ajv's ValidationError and MissingRefError were retrieved by their
 *   constructors, named `constructor`, and the model named a file that only used them);
 * - every constant that holds no function or method and lies in no other definition (a
 *   module-level `const` such as axios's `export const VERSION = "1.21.1";`: most files that are
 *   not in full are not in the repository map either at a small context, so without its chunk a
 *   constant's value was nowhere in the prompt; issue 15).
 *
 * No chunk holds another's lines, except a function or type nested in a function (inside its
 * function's chunk) and a header whose first method starts on the header's first line
 * (`class A { f() {} }`: both chunks are that line).
 * `text` is the file's content as packed (LF line ends). Pure.
 */
export function chunksOf(path: string, text: string, tags: FileTags): Chunk[] {
  const lines = text.split('\n');
  const defs = tags.definitions;
  const isCallable = (d: Definition): boolean => d.kind === 'function' || d.kind === 'method';
  const isType = (d: Definition): boolean => d.kind === 'class' || d.kind === 'interface' || d.kind === 'type';
  const holds = (outer: Definition, inner: Definition): boolean => outer !== inner && outer.line <= inner.line && outer.endLine >= inner.endLine;
  const chunks: Chunk[] = [];
  const push = (def: Definition, startLine: number, endLine: number, owner?: string): void => {
    chunks.push({ path, name: def.name, ...(owner !== undefined ? { owner } : {}), startLine, endLine, text: lines.slice(startLine - 1, endLine).join('\n') });
  };
  for (const def of defs) {
    if (def.kind === 'const' && defs.some((o) => o.kind !== 'const' && holds(o, def))) continue;
    const endLine = Math.min(Math.max(def.endLine, def.line), lines.length);
    if (isCallable(def)) {
      // the innermost type around it (the latest-starting one: types nest, they do not overlap)
      const around = defs.filter((o) => isType(o) && holds(o, def)).sort((a, b) => b.line - a.line)[0];
      push(def, def.line, endLine, around?.name ?? ownerInCode(tags.grammar, lines, def));
      continue;
    }
    const members = defs.filter((o) => holds(def, o) && (isCallable(o) || (isType(o) && defs.some((m) => isCallable(m) && holds(o, m)))));
    if (!isType(def) || members.length === 0) {
      if (members.length === 0) push(def, def.line, endLine);
      continue;
    }
    const first = Math.min(...members.map((m) => m.line));
    let last = Math.max(def.line, first - 1);
    while (last > def.line && LEAD_IN.test(lines[last - 1] ?? '')) last--;
    let chars = (lines[def.line - 1] ?? '').length;
    let cut = def.line;
    while (cut < last && chars + 1 + (lines[cut] ?? '').length <= HEADER_MAX_CHARS) chars += 1 + (lines[cut++] ?? '').length;
    push(def, def.line, Math.min(cut, lines.length));
  }
  return chunks;
}

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
