import type { FileTags } from '../map/tags';

/** A piece of a source file that retrieval can rank and quote: one function, method or small type. */
export interface Chunk {
  /** Path of the file, relative to the repository root (`/`-separated). */
  path: string;
  /** The defined name. */
  name: string;
  /** 1-based first line (the name's line, see `Definition.line`). */
  startLine: number;
  /** 1-based last line, inclusive. */
  endLine: number;
  /** Lines `startLine … endLine` of the file, joined with `\n` (no final newline). */
  text: string;
}

/**
 * The retrieval chunks of one file: every function and method, every class, interface or type
 * that contains no function or method (a class with methods is retrieved method by method, so no
 * chunk holds another), and every constant that holds no function or method and lies in no
 * other chunk (a module-level `const` such as axios's `export const VERSION = "1.21.1";`: most files
 * that are not in full are not in the repository map either at a small context, so without its
 * chunk a constant's value was nowhere in the prompt; issue 15). Chunks are in source order.
 * `text` is the file's content as packed (LF line ends). Pure.
 */
export function chunksOf(path: string, text: string, tags: FileTags): Chunk[] {
  const lines = text.split('\n');
  const callables = tags.definitions.filter((d) => d.kind === 'function' || d.kind === 'method');
  const chunks: Chunk[] = [];
  const inOther = (def: (typeof tags.definitions)[number]): boolean =>
    tags.definitions.some((o) => o !== def && o.kind !== 'const' && o.line <= def.line && o.endLine >= def.endLine);
  for (const def of tags.definitions) {
    if (def.kind === 'const' && inOther(def)) continue;
    if (def.kind !== 'function' && def.kind !== 'method') {
      const holdsCallable = callables.some((c) => c.line >= def.line && c.endLine <= def.endLine && c !== def);
      if (holdsCallable) continue;
    }
    const endLine = Math.min(Math.max(def.endLine, def.line), lines.length);
    chunks.push({ path, name: def.name, startLine: def.line, endLine, text: lines.slice(def.line - 1, endLine).join('\n') });
  }
  return chunks;
}
