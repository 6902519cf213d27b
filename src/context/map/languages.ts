import * as path from 'node:path';

/**
 * The tree-sitter grammars the repository map parses, by the name of their wasm file in
 * `@vscode/tree-sitter-wasm` (`tree-sitter-<id>.wasm`). C is parsed with the C++ grammar
 * (tree-sitter-cpp extends tree-sitter-c, and the package ships no C grammar): C code that
 * uses a C++ keyword as a name (`new`, `class`, `this`) parses with a local error there,
 * which tree-sitter recovers from.
 */
export type GrammarId = 'typescript' | 'tsx' | 'javascript' | 'python' | 'go' | 'rust' | 'java' | 'cpp';

/** Every grammar the map uses, in a fixed order (the wasm files `build.mjs` copies). */
export const GRAMMAR_IDS: readonly GrammarId[] = ['typescript', 'tsx', 'javascript', 'python', 'go', 'rust', 'java', 'cpp'];

/** File extension (lower case, with the dot) → grammar. */
const BY_EXTENSION: ReadonlyMap<string, GrammarId> = new Map<string, GrammarId>([
  ['.ts', 'typescript'],
  ['.mts', 'typescript'],
  ['.cts', 'typescript'],
  ['.tsx', 'tsx'],
  ['.js', 'javascript'],
  ['.mjs', 'javascript'],
  ['.cjs', 'javascript'],
  ['.jsx', 'javascript'],
  ['.py', 'python'],
  ['.pyi', 'python'],
  ['.go', 'go'],
  ['.rs', 'rust'],
  ['.java', 'java'],
  ['.c', 'cpp'],
  ['.h', 'cpp'],
  ['.cc', 'cpp'],
  ['.cpp', 'cpp'],
  ['.cxx', 'cpp'],
  ['.hh', 'cpp'],
  ['.hpp', 'cpp'],
  ['.hxx', 'cpp'],
]);

/**
 * The grammar that parses the file at `relPath` (`/`-separated, relative to the repository
 * root), chosen by its extension (case-insensitive; `.d.ts` is TypeScript), or `undefined`
 * when the map has no grammar for it (the file is then in the file tree only). Pure.
 */
export function grammarForPath(relPath: string): GrammarId | undefined {
  return BY_EXTENSION.get(path.posix.extname(relPath).toLowerCase());
}
