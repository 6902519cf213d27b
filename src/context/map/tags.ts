import { existsSync } from 'node:fs';
import * as path from 'node:path';
// `require` so that esbuild bundles web-tree-sitter's CommonJS build (its ES module build locates
// its wasm through `import.meta.url`, which a CommonJS bundle does not have); a plain call rather
// than `import = require`, which the webview's ES-module type check (media/tsconfig.json) refuses
// eslint-disable-next-line @typescript-eslint/no-require-imports
const TreeSitter = require('web-tree-sitter') as typeof import('web-tree-sitter');
import type { Language, Node, Parser, Query, Tree } from 'web-tree-sitter';
import type { GrammarId } from './languages';
import { TAGS_QUERIES } from './queries';
import { createWorkerTagsParser, tagsWorkerScript } from './tags-worker-client';

/** What a definition is; see `TAGS_QUERIES` for the node types behind each kind per language. */
export type DefinitionKind = 'class' | 'function' | 'method' | 'const' | 'type' | 'interface';

/** One definition found in a source file. */
export interface Definition {
  kind: DefinitionKind;
  /** The defined name as written (`area`, `Circle`, `~Shape`). */
  name: string;
  /** 1-based line of the name. */
  line: number;
  /** 1-based last line of the definition (its body included): the end of its retrieval chunk. */
  endLine: number;
  /** The name's whole source line, trimmed, at most `SIGNATURE_MAX_CHARS` characters (cut with `…`). */
  signature: string;
}

/** What the map knows about one file: its definitions and the names it uses. */
export interface FileTags {
  grammar: GrammarId;
  /** Definitions in source order (line, then column of the name). */
  definitions: Definition[];
  /**
   * Names used in the file (identifier-like nodes that are not the name of one of its
   * definitions) with how often, as `[name, count]` sorted by name in code-unit order.
   */
  references: Array<[string, number]>;
}

/** Parses source text into tags. Implementations must be pure functions of their inputs. */
export interface TagsParser {
  /**
   * The tags of `text` parsed with `grammar`. Never runs the code; a syntax error gives the
   * tags of what tree-sitter recovered. Rejects when the grammar's wasm cannot be loaded.
   * `options.signal`: once it aborts, the caller no longer waits (the parse may finish in the
   * background, and the worker thread no longer keeps the process alive for it); the promise is
   * not rejected by it (callers race it with the signal: `raceAbort`).
   */
  parse(text: string, grammar: GrammarId, options?: { signal?: AbortSignal }): Promise<FileTags>;
}

/** Longest signature kept, in characters. */
export const SIGNATURE_MAX_CHARS = 200;

/** When one node matches several patterns, the kind with the highest priority is kept. */
const KIND_PRIORITY: Readonly<Record<DefinitionKind, number>> = { method: 5, class: 4, interface: 4, function: 3, type: 2, const: 1 };

/**
 * The folders holding `web-tree-sitter.wasm` (`runtime`) and the grammars
 * (`tree-sitter-<id>.wasm`, `grammars`): `$REPOSNAP_TREE_SITTER_DIR` for both when set; else
 * `tree-sitter/` next to the bundle (`dist/tree-sitter`, what `build.mjs` copies and the VSIX
 * ships); else the npm packages `web-tree-sitter` and `@vscode/tree-sitter-wasm` (running from
 * the sources). Throws, naming the places looked at and the fix, when none holds the files.
 */
export function treeSitterWasmDir(): { runtime: string; grammars: string } {
  const env = process.env.REPOSNAP_TREE_SITTER_DIR;
  if (env !== undefined && env !== '') return { runtime: env, grammars: env };
  const bundled = path.join(__dirname, 'tree-sitter');
  if (existsSync(path.join(bundled, 'web-tree-sitter.wasm'))) return { runtime: bundled, grammars: bundled };
  try {
    return {
      runtime: path.dirname(require.resolve('web-tree-sitter/web-tree-sitter.wasm')),
      grammars: path.dirname(require.resolve('@vscode/tree-sitter-wasm/wasm/tree-sitter-typescript.wasm')),
    };
  } catch {
    throw new Error(
      `tree-sitter's wasm files were found neither in ${bundled} nor in node_modules (web-tree-sitter, @vscode/tree-sitter-wasm): run \`npm ci && npm run build:ts\`, or set REPOSNAP_TREE_SITTER_DIR to a folder holding web-tree-sitter.wasm and tree-sitter-<language>.wasm`,
    );
  }
}

let runtimeReady: Promise<void> | undefined;
const grammars = new Map<GrammarId, Promise<{ language: Language; query: Query; parser: Parser }>>();

/**
 * Loads (once per process) the tree-sitter runtime and `grammar` with its compiled tags query and
 * a parser set to it (reused by every parse; {@link parseLock} keeps two from overlapping).
 */
function loadGrammar(grammar: GrammarId): Promise<{ language: Language; query: Query; parser: Parser }> {
  let loaded = grammars.get(grammar);
  if (loaded === undefined) {
    const dirs = treeSitterWasmDir();
    runtimeReady ??= TreeSitter.Parser.init({ locateFile: (file: string) => path.join(dirs.runtime, file) });
    loaded = runtimeReady.then(async () => {
      const language = await TreeSitter.Language.load(path.join(dirs.grammars, `tree-sitter-${grammar}.wasm`));
      const parser = new TreeSitter.Parser();
      parser.setLanguage(language);
      return { language, query: new TreeSitter.Query(language, TAGS_QUERIES[grammar]), parser };
    });
    // a failed load is retried by the next call rather than remembered
    loaded.catch(() => grammars.delete(grammar));
    grammars.set(grammar, loaded);
  }
  return loaded;
}

/**
 * How long one synchronous step of a parse may run before it gives the event loop a turn [ms].
 * A signal (Ctrl+C, SIGTERM, the extension's Stop) is delivered only between such steps, so this
 * bounds how long a cancelled pack waits for the parser: a 1.7 MB file of 40K definitions took
 * 2–4 s of uninterrupted CPU here (issue 29, item 7).
 */
export const PARSE_SLICE_MS = 25;

/** Serialises parses: a parse stopped by its progress callback resumes on its next `parse` call, so none may run on that parser in between. */
let parseLock: Promise<unknown> = Promise.resolve();

/** A promise that resolves after the event loop has run its pending callbacks (signals, timers, I/O). */
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Calls `nextTurn` once `PARSE_SLICE_MS` have passed since the last turn: `await pace()` in a loop. */
function pacer(): () => Promise<void> | undefined {
  let since = performance.now();
  return () => {
    if (performance.now() - since < PARSE_SLICE_MS) return undefined;
    return nextTurn().then(() => {
      since = performance.now();
    });
  };
}

/**
 * Parses `text` in steps of at most `PARSE_SLICE_MS`: tree-sitter's progress callback
 * (`ParseOptions.progressCallback`, `ts_parser_parse` with a cancellation) stops the parse when its
 * step is over, and the next `parse` call resumes it where it stopped (the parser is not reset).
 */
async function parseInSteps(parser: Parser, text: string, grammar: GrammarId): Promise<Tree> {
  let deadline = 0;
  // tree-sitter stops the parse when the callback returns true (the .d.ts declares it void)
  const progressCallback = (() => performance.now() > deadline) as (state: unknown) => void;
  for (;;) {
    deadline = performance.now() + PARSE_SLICE_MS;
    const tree = parser.parse(text, null, { progressCallback });
    if (tree !== null) return tree;
    if (performance.now() <= deadline) throw new Error(`tree-sitter (${grammar}) returned no tree`);
    await nextTurn();
  }
}

/**
 * The tags parser: on a worker thread (tags-worker-client.ts) where the worker's script is found
 * (the bundle's `dist/tags-worker.js`, or the sources through tsx), so that parsing a long file
 * never blocks the thread that packs (an abort is seen at once, issue 29 item 7) and runs beside
 * it; else, or with `REPOSNAP_TAGS_WORKER=0`, on this thread ({@link createInThreadTagsParser}).
 */
export function createTagsParser(): TagsParser {
  const script = process.env.REPOSNAP_TAGS_WORKER === '0' ? undefined : tagsWorkerScript();
  return script === undefined ? createInThreadTagsParser() : createWorkerTagsParser(script);
}

/**
 * The tree-sitter tags parser on this thread (`web-tree-sitter` with the grammars of
 * `@vscode/tree-sitter-wasm`; the wasm files are found by `treeSitterWasmDir`). The runtime and
 * each grammar load once per thread, on first use. A long file is parsed, and its matches read, in
 * steps of `PARSE_SLICE_MS` that let the event loop run between them, so that an abort is seen
 * soon; the query itself is one call (about 1 s for 40K definitions here). Parses run one at a
 * time. The worker thread runs this one.
 */
export function createInThreadTagsParser(): TagsParser {
  return {
    async parse(text, grammar) {
      const { query, parser } = await loadGrammar(grammar);
      const run = parseLock.then(async () => {
        const tree = await parseInSteps(parser, text, grammar);
        try {
          return await extractTags(tree.rootNode, query, text, grammar);
        } finally {
          tree.delete();
        }
      });
      parseLock = run.catch(() => undefined);
      return run;
    },
  };
}

/** Runs the tags query over `root` and turns its matches into `FileTags`, giving the event loop a turn every `PARSE_SLICE_MS`. */
async function extractTags(root: Node, query: Query, text: string, grammar: GrammarId): Promise<FileTags> {
  const lines = text.split('\n');
  const pace = pacer();
  const found = new Map<string, { kind: DefinitionKind; def: Node; name: Node }>();
  const referenceNodes: Node[] = [];
  // one call: a row-range query (QueryOptions.startPosition) walks the whole tree each time, so slicing it cost 4× (40K definitions: 4.0 s vs 1.0 s)
  for (const match of query.matches(root)) {
    await pace();
    let def: Node | undefined;
    let kind: DefinitionKind | undefined;
    let name: Node | undefined;
    for (const capture of match.captures) {
      if (capture.name === 'name') name = capture.node;
      else if (capture.name === 'reference') referenceNodes.push(capture.node);
      else if (capture.name.startsWith('definition.')) {
        def = capture.node;
        kind = capture.name.slice('definition.'.length) as DefinitionKind;
      }
    }
    if (def === undefined || kind === undefined || name === undefined) continue;
    if (!accepts(grammar, kind, def, name)) continue;
    const key = `${def.startIndex}:${def.endIndex}:${name.startIndex}`;
    const seen = found.get(key);
    if (seen === undefined || KIND_PRIORITY[kind] > KIND_PRIORITY[seen.kind]) found.set(key, { kind, def, name });
  }

  const nameStarts = new Set<number>();
  const definitions: Definition[] = [];
  for (const { kind, def, name } of [...found.values()].sort((a, b) => a.name.startIndex - b.name.startIndex)) {
    await pace();
    nameStarts.add(name.startIndex);
    const row = name.startPosition.row;
    // a node that ends at column 0 (a `#define` takes its newline) ends on the line before
    const end = def.endPosition.column === 0 && def.endPosition.row > def.startPosition.row ? def.endPosition.row : def.endPosition.row + 1;
    definitions.push({ kind, name: name.text, line: row + 1, endLine: end, signature: signatureOf(lines[row] ?? '') });
  }

  const counts = new Map<string, number>();
  const seenNodes = new Set<number>();
  for (const node of referenceNodes) {
    await pace();
    if (nameStarts.has(node.startIndex) || seenNodes.has(node.startIndex)) continue;
    seenNodes.add(node.startIndex);
    counts.set(node.text, (counts.get(node.text) ?? 0) + 1);
  }
  const references = [...counts.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return { grammar, definitions, references };
}

/** The filters queries cannot express (see `TAGS_QUERIES`). */
function accepts(grammar: GrammarId, kind: DefinitionKind, def: Node, name: Node): boolean {
  if (def.type === 'lexical_declaration') return def.child(0)?.type === 'const';
  if (kind !== 'const') return true;
  switch (grammar) {
    case 'python':
      return /^[A-Z][A-Z0-9_]*$/.test(name.text);
    case 'java': {
      const modifiers = def.children.find((c) => c?.type === 'modifiers')?.text.split(/\s+/) ?? [];
      return modifiers.includes('static') && modifiers.includes('final');
    }
    case 'cpp':
      if (def.type !== 'declaration') return true;
      return def.children.some((c) => c?.type === 'type_qualifier' && (c.text === 'const' || c.text === 'constexpr'));
    default:
      return true;
  }
}

/** A source line as a signature: trimmed and cut to `SIGNATURE_MAX_CHARS`. */
function signatureOf(line: string): string {
  const trimmed = line.trim();
  return trimmed.length <= SIGNATURE_MAX_CHARS ? trimmed : trimmed.slice(0, SIGNATURE_MAX_CHARS - 1) + '…';
}
