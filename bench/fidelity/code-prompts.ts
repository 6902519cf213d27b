/**
 * Code prompts of the fidelity benchmark for real models (issue 13, item 4): real source files
 * that nobody here wrote, read from npm packages installed in node_modules (versions pinned by
 * package-lock.json, so every run on a clean `npm ci` reads the same bytes), concatenated per
 * package with a path comment before each file and cut to an exact token length. Nothing is
 * downloaded and nothing is run.
 *
 * Prompt i of n has length {@link codePromptLength} (evenly spaced between the shortest and the
 * longest), comes from corpus document i mod D (D = {@link CODE_CORPUS}.length) and starts at a
 * file that moves on with each round floor(i / D), so no two prompts open on the same file. A
 * document too short for its length is followed by the next documents in corpus order.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/** One corpus document: the source files under `dir` of an installed npm package. */
export interface CodeDocumentSpec {
  /** npm package name (its folder in node_modules). */
  package: string;
  /** Folder inside the package whose files are read, recursively ('' = the whole package). */
  dir: string;
}

/**
 * The corpus: readable (not minified) JavaScript and TypeScript of 16 installed packages, in a
 * fixed order. Files are `.js`, `.mjs`, `.cjs` and `.ts` (not `.d.ts`); a file with a line over
 * {@link MAX_LINE} characters (minified bundles, inline source maps) is left out.
 */
export const CODE_CORPUS: readonly CodeDocumentSpec[] = [
  { package: 'commander', dir: 'lib' },
  { package: 'js-yaml', dir: 'lib' },
  { package: 'undici', dir: 'lib/web/fetch' },
  { package: 'parse5', dir: 'dist/tokenizer' },
  { package: 'jszip', dir: 'lib' },
  { package: 'pako', dir: 'lib/zlib' },
  { package: 'ajv', dir: 'lib/compile' },
  { package: 'minimatch', dir: 'dist/esm' },
  { package: 'htmlparser2', dir: 'dist/esm' },
  { package: 'cheerio', dir: 'dist/esm' },
  { package: 'vega-lite', dir: 'src/compile' },
  { package: 'tar', dir: 'dist/esm' },
  { package: 'glob', dir: 'dist/esm' },
  { package: 'yargs', dir: 'build/lib' },
  { package: 'semver', dir: '' },
  { package: 'fast-glob', dir: 'out' },
];

/** Longest line [characters] a file may have to count as readable source. */
export const MAX_LINE = 400;

const SOURCE_EXT = /\.(?:m|c)?[jt]s$/;

/** One source file of a document, as it enters the prompt. */
export interface SourceFile {
  /** `<package>/<path inside the package>`, with forward slashes. */
  name: string;
  text: string;
}

/**
 * Whether a file's text reads as source a person wrote: no line longer than {@link MAX_LINE}
 * characters, once `//# sourceMappingURL=` lines are dropped, and at least one line.
 */
export function isReadableSource(text: string): boolean {
  const lines = text.split('\n').filter((l) => !l.startsWith('//# sourceMappingURL='));
  return lines.some((l) => l.trim() !== '') && lines.every((l) => l.length <= MAX_LINE);
}

/** Drops `//# sourceMappingURL=` lines (a reference to a file the prompt does not hold). */
export function stripSourceMap(text: string): string {
  return text
    .split('\n')
    .filter((l) => !l.startsWith('//# sourceMappingURL='))
    .join('\n');
}

/**
 * The readable source files of one corpus document, sorted by path (code-unit order), with
 * source-map lines dropped.
 * @throws Error naming the package when it is not installed or has no readable file there.
 */
export function readDocument(spec: CodeDocumentSpec, nodeModules: string): { version: string; files: SourceFile[] } {
  const root = path.join(nodeModules, spec.package);
  const pkgJson = path.join(root, 'package.json');
  if (!fs.existsSync(pkgJson)) throw new Error(`code prompts: the package ${spec.package} is not installed in ${nodeModules} (run npm ci)`);
  const version = (JSON.parse(fs.readFileSync(pkgJson, 'utf8')) as { version: string }).version;
  const base = path.join(root, spec.dir);
  const files: SourceFile[] = [];
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) {
        if (e.name !== 'node_modules') walk(p);
      } else if (e.isFile() && SOURCE_EXT.test(e.name) && !e.name.endsWith('.d.ts')) {
        const text = fs.readFileSync(p, 'utf8');
        if (isReadableSource(text)) files.push({ name: `${spec.package}/${path.relative(root, p).split(path.sep).join('/')}`, text: stripSourceMap(text) });
      }
    }
  };
  if (fs.existsSync(base)) walk(base);
  files.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  if (files.length === 0) throw new Error(`code prompts: no readable source under ${base}`);
  return { version, files };
}

/** A file as the prompt shows it: a path comment, then the file, then a blank line. */
export function fileBlock(f: SourceFile): string {
  return `// ${f.name}\n${f.text.endsWith('\n') ? f.text : f.text + '\n'}\n`;
}

/**
 * Cuts a prompt of exactly `length` tokens from files in order: adds whole files (as
 * {@link fileBlock}s) until the text has at least `charsPerToken · length` characters, tokenizes,
 * and adds more while the tokens fall short; returns the first `length` tokens, the files they
 * reach into, and the files whose blocks, concatenated, are the text that was tokenized
 * (`sources`: the tokens are its tokenization's first `length`).
 * @param tokenize the model's tokenizer (with BOS where the model adds one)
 * @throws Error when all the files together are shorter than `length` tokens.
 */
export function cutPrompt(files: readonly SourceFile[], tokenize: (text: string) => ArrayLike<number>, length: number, charsPerToken = 5): { tokens: number[]; files: string[]; sources: SourceFile[] } {
  let text = '';
  let used = 0;
  for (;;) {
    while (used < files.length && text.length < charsPerToken * length) text += fileBlock(files[used++]!);
    const tokens = tokenize(text);
    if (tokens.length >= length) return { tokens: Array.from(tokens).slice(0, length), files: filesReached(files.slice(0, used), tokenize, text, length), sources: files.slice(0, used) };
    if (used >= files.length) throw new Error(`code prompts: ${files.length} files hold ${tokens.length} tokens, fewer than ${length}`);
    text += fileBlock(files[used++]!);
  }
}

/**
 * Names of the files whose blocks start within the characters that the first `length` tokens
 * cover (the shortest prefix of `text` with at least `length` tokens, found by bisection).
 */
function filesReached(files: readonly SourceFile[], tokenize: (text: string) => ArrayLike<number>, text: string, length: number): string[] {
  let lo = 0;
  let hi = text.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (tokenize(text.slice(0, mid)).length < length) lo = mid + 1;
    else hi = mid;
  }
  const reached: string[] = [];
  let at = 0;
  for (const f of files) {
    if (at >= lo) break;
    reached.push(f.name);
    at += fileBlock(f).length;
  }
  return reached;
}

/** Target length [tokens] of prompt i of n: evenly spaced from minTokens to maxTokens, rounded. */
export function codePromptLength(minTokens: number, maxTokens: number, i: number, n: number): number {
  return n <= 1 ? minTokens : Math.round(minTokens + ((maxTokens - minTokens) * i) / (n - 1));
}

/**
 * The files prompt i reads, in order: document i mod D rotated to start at file
 * floor(i / D) · ⌈files / 3⌉ (mod files), then the following documents whole (for a long prompt
 * on a short document).
 */
export function promptFiles(docs: readonly SourceFile[][], i: number): SourceFile[] {
  const D = docs.length;
  const d = i % D;
  const round = Math.floor(i / D);
  const first = docs[d]!;
  const start = (round * Math.ceil(first.length / 3)) % first.length;
  const out = [...first.slice(start), ...first.slice(0, start)];
  for (let k = 1; k < D; k++) out.push(...docs[(d + k) % D]!);
  return out;
}

/** One code prompt, as recorded in the results (the tokens are rebuilt from node_modules on each run). */
export interface CodePrompt {
  id: number;
  /** `package@version` of the document the prompt starts in. */
  source: string;
  /** The files the prompt reaches into, in order. */
  files: string[];
  /** Token ids (BOS first where the model adds one), `tokens.length` = L. */
  tokens: number[];
  /** sha256 (hex) of the token ids as little-endian int32: the same hash = the same prompt. */
  tokensSha256: string;
  /**
   * The files whose {@link fileBlock}s, concatenated, were tokenized (`tokens` are the first L of
   * that tokenization): what the code-aware prior maps its spans from (./code-prior.ts). Not
   * written to the results.
   */
  sources: SourceFile[];
}

/** Settings of {@link codePrompts}. */
export interface CodePromptOptions {
  n: number;
  minTokens: number;
  maxTokens: number;
  /** node_modules folder to read (default: the project's). */
  nodeModules?: string;
  corpus?: readonly CodeDocumentSpec[];
}

/** sha256 of token ids as little-endian int32 (hex). */
export function tokensSha256(tokens: readonly number[]): string {
  return createHash('sha256').update(Buffer.from(Int32Array.from(tokens).buffer)).digest('hex');
}

/** Builds the n code prompts for a model's tokenizer. */
export function codePrompts(tokenize: (text: string) => ArrayLike<number>, opts: CodePromptOptions): { prompts: CodePrompt[]; packages: string[] } {
  if (!(opts.minTokens >= 64 && opts.maxTokens >= opts.minTokens)) throw new Error(`code prompts: lengths ${opts.minTokens}–${opts.maxTokens} (need 64 ≤ min ≤ max)`);
  const nodeModules = opts.nodeModules ?? path.resolve(__dirname, '..', '..', 'node_modules');
  const corpus = opts.corpus ?? CODE_CORPUS;
  const read = corpus.map((spec) => ({ spec, ...readDocument(spec, nodeModules) }));
  const docs = read.map((r) => r.files);
  const prompts: CodePrompt[] = [];
  for (let i = 0; i < opts.n; i++) {
    const L = codePromptLength(opts.minTokens, opts.maxTokens, i, opts.n);
    const { tokens, files, sources } = cutPrompt(promptFiles(docs, i), tokenize, L);
    const r = read[i % read.length]!;
    prompts.push({ id: i, source: `${r.spec.package}@${r.version}`, files, tokens, tokensSha256: tokensSha256(tokens), sources });
  }
  return { prompts, packages: read.map((r) => `${r.spec.package}@${r.version}${r.spec.dir ? ` (${r.spec.dir})` : ''}: ${r.files.length} files`) };
}
