/**
 * bench/pack-large: speed of the ranked packing (issue 15) on repositories much larger than the
 * context: a generated 20,000-file source repository and a large real one.
 *
 *   node --import tsx bench/pack-large.ts [--files 20000] [--real DIR] [--budget 32768] [--out FILE]
 *
 * The generated repository (deterministic, under the OS temp directory, deleted after) holds
 * TypeScript, JavaScript, Python and Go files with functions, classes, methods, types and
 * constants, each file calling definitions of a few others (chosen with a power law, so that
 * some files are used by many: hubs for PageRank). The real one defaults to the patched
 * llama.cpp tree that `npm run build:native` unpacks (`native/build/llama.cpp`), else
 * `node_modules/typescript`.
 *
 * Rows, per repository:
 *   walk                     walkRepository (list, ignore rules, lstat)
 *   parse (tree-sitter)      TagsParser.parse on every text file with a grammar, texts in memory,
 *                            one after the other: files/s and MB/s of the parser alone
 *   rank (PageRank)          rankFiles over the parsed tags (graph build + power iteration)
 *   pack cold                packRepository (ranked) with an empty TagsCache: read + parse +
 *                            rank + tree + files + map, the approximate tokenizer (bytes / 4),
 *                            a `--budget`-token budget
 *   pack cold: read+parse    the part of `pack cold` until the last file was read and parsed
 *                            (its progress events)
 *   pack warm                the same again with the cache of `pack cold` (nothing parsed)
 *   pack after an edit       one file's text changed, then packed with the warm cache (one file
 *                            parsed: the row's `parsed` column)
 *   cancel                   a cold pack aborted after a tenth of the files were read: ms from
 *                            abort() to the rejection, and files parsed after the abort
 * and, for `pack cold`, the packing process's event-loop delay (monitorEventLoopDelay: its
 * max and p99, in ms), the most CPU time it spent between two turns of its event loop
 * (`loopMonitor`: the work done without a turn, which the OS's scheduling does not inflate), and
 * the longest single parse. Writes the rows as JSON (default
 * bench/results/pack-large.json) and prints a table.
 *
 * The files were just written or read: the page cache is warm, these are not cold-disk numbers.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { readTextFile } from '../src/context/filter';
import { TagsCache } from '../src/context/map/cache';
import { grammarForPath } from '../src/context/map/languages';
import { createTagsParser, type FileTags, type TagsParser } from '../src/context/map/tags';
import { packRepository, type PackOptions } from '../src/context/pack';
import { buildReferenceGraph } from '../src/context/rank/graph';
import { rankFiles } from '../src/context/rank/rank';
import { walkRepository } from '../src/context/walk';

/** One measurement. */
export interface Row {
  repo: string;
  phase: string;
  /** Files the phase went over. */
  files: number;
  /** Their bytes (on disk, or texts for the parser). */
  bytes: number;
  ms: number;
  /**
   * CPU time of this process during the phase (user + system, `process.cpuUsage`) [ms]: on a
   * machine shared with other jobs, wall time grows with their load and this much less.
   */
  cpuMs: number;
  /** Files parsed by tree-sitter during the phase (cache misses), where it applies. */
  parsed?: number;
  /** Other numbers of the phase (event-loop delay, edges, longest parse…). */
  notes?: Record<string, number | string>;
}

/** Starts a wall and CPU clock; the returned function reads both [ms]. */
function clock(): () => { ms: number; cpuMs: number } {
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  return () => {
    const c = process.cpuUsage(c0);
    return { ms: performance.now() - t0, cpuMs: (c.user + c.system) / 1000 };
  };
}

/**
 * Watches this thread's event loop with a 5 ms timer: `stop()` gives the longest wall gap
 * between two ticks and the longest CPU time this process used between two ticks [ms]. On a
 * machine whose cores are busy the wall gap also counts time the OS did not run the process;
 * the CPU gap is the work done without a turn of the event loop (plus any helper threads').
 */
export function loopMonitor(): () => { maxGapMs: number; maxCpuGapMs: number } {
  let lastWall = performance.now();
  let lastCpu = process.cpuUsage();
  let maxGapMs = 0;
  let maxCpuGapMs = 0;
  const timer = setInterval(() => {
    const wall = performance.now();
    const cpu = process.cpuUsage();
    maxGapMs = Math.max(maxGapMs, wall - lastWall);
    maxCpuGapMs = Math.max(maxCpuGapMs, (cpu.user - lastCpu.user + cpu.system - lastCpu.system) / 1000);
    lastWall = wall;
    lastCpu = cpu;
  }, 5);
  return () => {
    clearInterval(timer);
    return { maxGapMs: round(maxGapMs), maxCpuGapMs: round(maxCpuGapMs) };
  };
}

const approximate = (text: string): number => Math.ceil(Buffer.byteLength(text, 'utf8') / 4);

/** A deterministic PRNG (LCG), so that the generated repository is the same on every run. */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}

const VERBS = ['compute', 'load', 'parse', 'render', 'update', 'resolve', 'build', 'fetch', 'merge', 'validate', 'format', 'index'];
const NOUNS = ['Order', 'Invoice', 'Session', 'Token', 'Layout', 'Account', 'Report', 'Schedule', 'Cursor', 'Budget', 'Channel', 'Record'];
type Lang = 'ts' | 'js' | 'py' | 'go';

/** The names file `i` defines (deterministic from `i`): functions, a class with methods, a constant. */
function definedNames(i: number): { fns: string[]; cls: string; methods: string[]; konst: string } {
  const r = prng(1000 + i);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const n = 2 + Math.floor(r() * 4);
  const fns = Array.from({ length: n }, (_, k) => `${pick(VERBS)}${pick(NOUNS)}${i}x${k}`);
  const cls = `${pick(NOUNS)}${pick(NOUNS)}${i}`;
  const methods = Array.from({ length: 1 + Math.floor(r() * 3) }, (_, k) => `${pick(VERBS)}Part${k}`);
  return { fns, cls, methods, konst: `LIMIT_${i}` };
}

function snake(name: string): string {
  return name.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();
}

/** Source text of file `i` in `lang`, calling `calls` (names of other files' functions). */
function sourceFile(i: number, lang: Lang, calls: string[], rand: () => number): string {
  const d = definedNames(i);
  const bodyLines = (indent: string, extra: string[]): string[] => {
    const lines: string[] = [];
    const n = 3 + Math.floor(rand() * 12);
    for (let k = 0; k < n; k++) {
      const callee = extra.length > 0 && rand() < 0.5 ? extra[Math.floor(rand() * extra.length)]! : undefined;
      if (lang === 'py') lines.push(`${indent}value_${k} = ${callee ? `${snake(callee)}(value_${Math.max(0, k - 1)})` : `${k} * 3 + len(str(${k}))`}`);
      else if (lang === 'go') lines.push(`${indent}value${k} := ${callee ? `${callee[0]!.toUpperCase()}${callee.slice(1)}(${k})` : `${k}*3 + len("${k}")`}`);
      else lines.push(`${indent}const value${k} = ${callee ? `${callee}(${k})` : `${k} * 3 + String(${k}).length`};`);
    }
    return lines;
  };
  const out: string[] = [];
  switch (lang) {
    case 'ts':
    case 'js':
      out.push(`// module ${i}: generated for bench/pack-large`);
      for (const f of d.fns) {
        out.push(lang === 'ts' ? `export function ${f}(input: number): number {` : `export function ${f}(input) {`, ...bodyLines('  ', calls), '  return input;', '}', '');
      }
      out.push(`export class ${d.cls} {`);
      for (const m of d.methods) out.push(lang === 'ts' ? `  ${m}(count: number): number {` : `  ${m}(count) {`, ...bodyLines('    ', calls), '    return count;', '  }');
      out.push('}', '', `export const ${d.konst} = ${i};`);
      if (lang === 'ts') out.push('', `export interface ${d.cls}Options {`, '  limit: number;', '  name: string;', '}');
      break;
    case 'py':
      out.push(`"""Module ${i}: generated for bench/pack-large."""`, '', `${d.konst} = ${i}`, '');
      for (const f of d.fns) out.push(`def ${snake(f)}(value):`, ...bodyLines('    ', calls), '    return value', '', '');
      out.push(`class ${d.cls}:`);
      for (const m of d.methods) out.push(`    def ${snake(m)}(self, count):`, ...bodyLines('        ', calls), '        return count', '');
      break;
    case 'go':
      out.push(`// Package m${i} is generated for bench/pack-large.`, `package m${i}`, '', `const ${d.konst} = ${i}`, '');
      for (const f of d.fns) {
        const name = f[0]!.toUpperCase() + f.slice(1);
        out.push(`func ${name}(input int) int {`, ...bodyLines('\t', calls), '\treturn input', '}', '');
      }
      out.push(`type ${d.cls} struct {`, '\tLimit int', '}', '');
      for (const m of d.methods) out.push(`func (s *${d.cls}) ${m[0]!.toUpperCase()}${m.slice(1)}(count int) int {`, ...bodyLines('\t', calls), '\treturn count', '}', '');
      break;
  }
  return out.join('\n') + '\n';
}

/**
 * Writes a source repository of exactly `count` files under `root`: packages of 10 directories
 * of 100 files, 40 % TypeScript, 20 % JavaScript, 25 % Python, 15 % Go, plus a README per
 * package. Each file calls 1–5 functions of other files, picked with a power law (file j is
 * picked with weight ∝ 1 / (j + 1)), so early files are hubs. Deterministic.
 */
export function generateSourceRepo(root: string, count: number): void {
  const rand = prng(7);
  const langOf = (i: number): Lang => {
    const x = (i * 37) % 20;
    return x < 8 ? 'ts' : x < 12 ? 'js' : x < 17 ? 'py' : 'go';
  };
  let written = 0;
  const write = (rel: string, content: string): void => {
    const abs = path.join(root, rel);
    fs.mkdirSync(path.dirname(abs), { recursive: true });
    fs.writeFileSync(abs, content);
    written++;
  };
  write('.gitignore', 'node_modules/\ndist/\n');
  const pickTarget = (): number => Math.min(count - 1, Math.floor(Math.exp(rand() * Math.log(count))) - 1);
  let i = 0;
  for (let pkg = 0; written < count; pkg++) {
    write(`packages/p${pkg}/README.md`, `# Package ${pkg}\n\nGenerated for bench/pack-large.\n`);
    for (let dir = 0; dir < 10 && written < count; dir++) {
      for (let f = 0; f < 100 && written < count; f++, i++) {
        const lang = langOf(i);
        const calls: string[] = [];
        const n = 1 + Math.floor(rand() * 5);
        for (let k = 0; k < n; k++) {
          const j = pickTarget();
          if (j === i) continue;
          const fns = definedNames(j).fns;
          calls.push(fns[Math.floor(rand() * fns.length)]!);
        }
        write(`packages/p${pkg}/src/d${dir}/m${i}.${lang}`, sourceFile(i, lang, calls, rand));
      }
    }
  }
}

async function benchRepo(name: string, root: string, budget: number): Promise<Row[]> {
  const rows: Row[] = [];
  let stop = clock();
  const walked = await walkRepository(root);
  const candidateBytes = walked.files.reduce((n, f) => n + f.bytes, 0);
  rows.push({ repo: name, phase: 'walk', files: walked.files.length, bytes: candidateBytes, ...stop() });

  // the parser alone, texts in memory
  const texts: Array<{ path: string; text: string }> = [];
  for (const f of walked.files) {
    const v = await readTextFile(f.absPath, { expected: { bytes: f.bytes, mtimeMs: f.mtimeMs } });
    if (v.kind === 'text') texts.push({ path: f.path, text: v.text });
  }
  const parser: TagsParser = createTagsParser();
  const withGrammar = texts.filter((t) => grammarForPath(t.path) !== undefined);
  for (const g of new Set(withGrammar.map((t) => grammarForPath(t.path)!))) await parser.parse('', g); // load each grammar first
  const tags: FileTags[] = [];
  let longestParse = 0;
  let longestParsePath = '';
  stop = clock();
  for (const t of withGrammar) {
    const p0 = performance.now();
    tags.push(await parser.parse(t.text, grammarForPath(t.path)!));
    const ms = performance.now() - p0;
    if (ms > longestParse) [longestParse, longestParsePath] = [ms, t.path];
  }
  const parseBytes = withGrammar.reduce((n, t) => n + Buffer.byteLength(t.text), 0);
  rows.push({ repo: name, phase: 'parse (tree-sitter)', files: withGrammar.length, bytes: parseBytes, ...stop(), notes: { longestParseMs: round(longestParse), longestParsePath } });

  const graphFiles = texts.map((t) => {
    const i = withGrammar.indexOf(t);
    return { path: t.path, ...(i >= 0 ? { tags: tags[i]! } : {}) };
  });
  stop = clock();
  rankFiles(graphFiles);
  rows.push({ repo: name, phase: 'rank (PageRank)', files: graphFiles.length, bytes: 0, ...stop(), notes: { edges: buildReferenceGraph(graphFiles).length } });

  const cache = new TagsCache();
  const options: PackOptions = { tokenBudget: budget, countTokens: approximate, packing: 'ranked', tagsCache: cache };
  const delay = monitorEventLoopDelay({ resolution: 5 });
  let lastRead = { ms: 0, cpuMs: 0 };
  delay.enable();
  const gaps = loopMonitor();
  stop = clock();
  const cold = await packRepository(root, {
    ...options,
    onProgress: (p) => {
      if (p.phase === 'read') lastRead = stop();
    },
  });
  const coldTimes = stop();
  delay.disable();
  const gap = gaps();
  rows.push({
    repo: name,
    phase: 'pack cold',
    files: walked.files.length,
    bytes: candidateBytes,
    ...coldTimes,
    parsed: cache.parsed,
    notes: { eventLoopDelayMaxMs: round(delay.max / 1e6), eventLoopDelayP99Ms: round(delay.percentile(99) / 1e6), longestCpuWithoutTurnMs: gap.maxCpuGapMs, inFull: cold.files.length, mapped: cold.mapped.length, totalTokens: cold.totalTokens },
  });
  rows.push({ repo: name, phase: 'pack cold: read+parse', files: walked.files.length, bytes: candidateBytes, ...lastRead, parsed: cache.parsed });

  let parsed0 = cache.parsed;
  stop = clock();
  const warm = await packRepository(root, options);
  rows.push({ repo: name, phase: 'pack warm', files: walked.files.length, bytes: candidateBytes, ...stop(), parsed: cache.parsed - parsed0 });
  const prefix = (r: typeof warm) => r.sections.map((s) => s.text).join('');
  if (prefix(warm) !== prefix(cold)) throw new Error(`${name}: the warm pack's prefix differs from the cold one's`);

  // an edit: the first mapped source file gets one more line at its end
  const edited = walked.files.find((f) => f.path === (cold.mapped[0]?.path ?? withGrammar[0]!.path))!;
  fs.appendFileSync(edited.absPath, grammarForPath(edited.path) === 'python' ? '# edited\n' : '// edited\n');
  parsed0 = cache.parsed;
  stop = clock();
  await packRepository(root, options);
  rows.push({ repo: name, phase: 'pack after an edit', files: walked.files.length, bytes: candidateBytes, ...stop(), parsed: cache.parsed - parsed0, notes: { edited: edited.path } });

  // cancellation: abort a cold pack after a tenth of the files were read
  const controller = new AbortController();
  const fresh = new TagsCache();
  let abortedAt = 0;
  let parsedAtAbort = 0;
  const tenth = Math.max(1, Math.floor(walked.files.length / 10));
  const t0 = performance.now();
  const outcome = await packRepository(root, {
    ...options,
    tagsCache: fresh,
    signal: controller.signal,
    onProgress: (p) => {
      if (p.phase === 'read' && p.done === tenth && !controller.signal.aborted) {
        abortedAt = performance.now();
        parsedAtAbort = fresh.parsed;
        controller.abort();
      }
    },
  }).then(
    () => 'finished',
    (e: unknown) => (e instanceof Error ? e.name : String(e)),
  );
  rows.push({ repo: name, phase: 'cancel', files: tenth, bytes: 0, ms: performance.now() - abortedAt, cpuMs: 0, parsed: fresh.parsed - parsedAtAbort, notes: { outcome, msBeforeAbort: round(abortedAt - t0) } });
  return rows;
}

function round(x: number): number {
  return Math.round(x * 10) / 10;
}

/** The rows as a Markdown table. */
export function formatTable(rows: readonly Row[]): string {
  const header = ['repository', 'phase', 'files', 'MB', 'ms', 'CPU ms', 'files/s (CPU)', 'parsed', 'notes'];
  const body = rows.map((r) => [
    r.repo,
    r.phase,
    String(r.files),
    r.bytes > 0 ? (r.bytes / 1e6).toFixed(1) : '',
    r.ms.toFixed(0),
    r.cpuMs > 0 ? r.cpuMs.toFixed(0) : '',
    r.cpuMs > 0 && (r.bytes > 0 || r.phase.startsWith('pack')) ? Math.round((r.files / r.cpuMs) * 1000).toLocaleString('en-US') : '',
    r.parsed !== undefined ? String(r.parsed) : '',
    Object.entries(r.notes ?? {})
      .map(([k, v]) => `${k} ${v}`)
      .join(', '),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => row[i]!.length)));
  const left = (i: number) => i < 2 || i === 8;
  const line = (cells: string[]): string => '| ' + cells.map((c, i) => (left(i) ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ') + ' |';
  return [line(header), '|' + widths.map((w, i) => (left(i) ? ':' + '-'.repeat(w + 1) : '-'.repeat(w + 1) + ':')).join('|') + '|', ...body.map(line)].join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { files: { type: 'string' }, real: { type: 'string' }, budget: { type: 'string' }, out: { type: 'string' } } });
  const count = Number(values.files ?? 20_000);
  const budget = Number(values.budget ?? 32_768);
  const project = path.resolve(__dirname, '..');
  const realDefault = [path.join(project, 'native/build/llama.cpp'), path.join(project, 'node_modules/typescript')].find((d) => fs.existsSync(d));
  const real = values.real ?? realDefault;
  const out = values.out ?? path.join(project, 'bench/results/pack-large.json');
  const generated = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-bench-pack-large-'));
  try {
    let t0 = performance.now();
    generateSourceRepo(generated, count);
    console.error(`generated ${count} files under ${generated} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    const rows = await benchRepo(`generated (${count} files)`, generated, budget);
    if (real !== undefined) {
      // a copy, so that the edit row does not touch the real tree
      const copy = path.join(generated, '..', `${path.basename(generated)}-real`);
      t0 = performance.now();
      fs.cpSync(real, copy, { recursive: true, filter: (src) => path.basename(src) !== '.git' });
      console.error(`copied ${real} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
      try {
        rows.push(...(await benchRepo(path.relative(project, real) || real, copy, budget)));
      } finally {
        fs.rmSync(copy, { recursive: true, force: true });
      }
    }
    const machine = `node ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? 'unknown'}), ${os.platform()} ${os.release()}; warm page cache; token budget ${budget}, approximate tokenizer (bytes / 4)`;
    console.log(formatTable(rows));
    console.log(`\n${machine}`);
    fs.mkdirSync(path.dirname(out), { recursive: true });
    fs.writeFileSync(out, JSON.stringify({ machine, budget, rows }, null, 2) + '\n');
  } finally {
    fs.rmSync(generated, { recursive: true, force: true });
  }
}

if (require.main === module) {
  main().catch((e: unknown) => {
    console.error(e);
    process.exitCode = 1;
  });
}
