/**
 * bench/pack: speed of the repository packer, phase by phase, on this project and on a
 * generated 20,000-file repository (written under the OS temp directory, deleted after).
 *
 *   node --import tsx bench/pack.ts [--files 20000] [--no-model] [--model file.gguf]
 *
 * Phases, each timed on its own over the same candidates:
 *   walk      walkRepository: list directories, apply ignore/exclude rules, lstat candidates
 *   filter    readTextFile on every candidate, 16 in flight (open, read, decode, classify)
 *   tokenize  formatFileSection + countTokens on every text file: the approximate tokenizer
 *             (UTF-8 bytes / 4) and, unless --no-model, a model's tokenizer (default: the
 *             tiny stories260K test model)
 *   pack      packRepository end to end (approximate tokenizer, no budget), for reference;
 *             and with the model's tokenizer and an 8192-token budget, as `reposnap ask`
 *             packs (files that cannot fit are not tokenized)
 * files/s counts candidate files (walk, filter, pack) or text files (tokenize); MB/s counts
 * their bytes on disk (walk, filter, pack) or section bytes (tokenize). The files were just
 * written or read, so the page cache is warm: these are not cold-disk numbers.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { readTextFile, type FileVerdict } from '../src/context/filter';
import { Limiter } from '../src/context/fsapi';
import { packRepository } from '../src/context/pack';
import { formatFileSection } from '../src/context/section';
import { walkRepository } from '../src/context/walk';
import { loadModel } from '../src/engine/model';
import { TINY_MODEL } from '../test/helpers/models';

interface Row {
  repo: string;
  phase: string;
  files: number;
  bytes: number;
  ms: number;
}

const approximate = (text: string): number => Math.ceil(Buffer.byteLength(text, 'utf8') / 4);

async function benchRepo(name: string, root: string, tokenizers: Array<[string, (text: string) => number]>): Promise<Row[]> {
  const rows: Row[] = [];
  let t0 = performance.now();
  const walked = await walkRepository(root);
  const walkMs = performance.now() - t0;
  const candidateBytes = walked.files.reduce((sum, f) => sum + f.bytes, 0);
  rows.push({ repo: name, phase: 'walk', files: walked.files.length, bytes: candidateBytes, ms: walkMs });

  const limiter = new Limiter(16);
  t0 = performance.now();
  const verdicts: FileVerdict[] = await Promise.all(walked.files.map((f) => limiter.run(() => readTextFile(f.absPath, { expected: { bytes: f.bytes, mtimeMs: f.mtimeMs } }))));
  rows.push({ repo: name, phase: 'filter', files: walked.files.length, bytes: candidateBytes, ms: performance.now() - t0 });

  const sections: string[] = [];
  verdicts.forEach((v, i) => {
    if (v.kind === 'text') sections.push(formatFileSection(walked.files[i]!.path, v.text));
  });
  const sectionBytes = sections.reduce((sum, s) => sum + Buffer.byteLength(s, 'utf8'), 0);
  for (const [label, count] of tokenizers) {
    t0 = performance.now();
    let tokens = 0;
    verdicts.forEach((v, i) => {
      if (v.kind === 'text') tokens += count(formatFileSection(walked.files[i]!.path, v.text));
    });
    rows.push({ repo: name, phase: `tokenize (${label})`, files: sections.length, bytes: sectionBytes, ms: performance.now() - t0 });
    if (tokens < 0) throw new Error('unreachable');
  }

  t0 = performance.now();
  const packed = await packRepository(root, { tokenBudget: Infinity, countTokens: approximate });
  rows.push({ repo: name, phase: 'pack (end to end)', files: walked.files.length, bytes: candidateBytes, ms: performance.now() - t0 });
  for (const [label, count] of tokenizers.slice(1)) {
    t0 = performance.now();
    const budgeted = await packRepository(root, { tokenBudget: 8192, countTokens: count });
    const ms = performance.now() - t0;
    rows.push({ repo: name, phase: `pack (${label}, 8192-token budget)`, files: walked.files.length, bytes: candidateBytes, ms });
    console.error(`${name}: with ${label} and an 8192-token budget, ${budgeted.files.length} files packed in ${budgeted.totalTokens} tokens`);
  }
  const reasons = new Map<string, number>();
  for (const s of [...packed.skipped, ...packed.ignored]) reasons.set(s.reason, (reasons.get(s.reason) ?? 0) + 1);
  console.error(
    `${name}: ${packed.files.length} files packed, ${packed.totalTokens} approximate tokens; left out: ` +
      ([...reasons].map(([r, n]) => `${n} ${r}`).join(', ') || 'nothing'),
  );
  return rows;
}

/** A deterministic PRNG (LCG), so that the generated repository is the same on every run. */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}

/**
 * Writes a repository of exactly `count` files under `root`: 20 packages × 10 directories of
 * source files (TypeScript, JSON, Markdown; 200 B to ~24 KiB, most a few KiB), with a few
 * hostile ones mixed in (PNG, a minified bundle, a generated file, empty files, a lockfile),
 * a .gitignore per package, and a node_modules tree that is excluded.
 */
function generateRepo(root: string, count: number): void {
  const rand = prng(42);
  const words = ['const', 'let', 'return', 'function', 'value', 'index', 'result', 'await', 'async', 'export', 'import', 'from', 'type', 'string', 'number', 'if', 'else', 'for', 'of', 'new'];
  const sourceText = (bytes: number): string => {
    const lines: string[] = [];
    let size = 0;
    while (size < bytes) {
      const n = 3 + Math.floor(rand() * 10);
      const line = '  '.repeat(Math.floor(rand() * 4)) + Array.from({ length: n }, () => words[Math.floor(rand() * words.length)]).join(' ') + ';';
      lines.push(line);
      size += line.length + 1;
    }
    return lines.join('\n') + '\n';
  };
  let written = 0;
  const write = (rel: string, content: string | Uint8Array): void => {
    const abs = path.join(root, rel);
    fs.mkdirSync(path.dirname(abs), { recursive: true });
    fs.writeFileSync(abs, content);
    written++;
  };
  write('.gitignore', 'node_modules/\n*.log\ncoverage/\n');
  write('package-lock.json', '{}\n');
  for (let i = 0; i < 50; i++) write(`node_modules/dep${i}/index.js`, sourceText(500));
  const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]);
  for (let pkg = 0; written < count; pkg++) {
    write(`packages/p${pkg}/.gitignore`, 'dist/\n*.tmp\n');
    for (let dir = 0; dir < 10 && written < count; dir++) {
      for (let f = 0; f < 100 && written < count; f++) {
        const base = `packages/p${pkg}/src/d${dir}/f${f}`;
        const roll = rand();
        if (roll < 0.01) write(`${base}.png`, png);
        else if (roll < 0.012) write(`${base}.js`, 'var a=1;'.repeat(2000));
        else if (roll < 0.015) write(`${base}.ts`, '// Code generated by bench. DO NOT EDIT.\n' + sourceText(1000));
        else if (roll < 0.02) write(`${base}.ts`, '');
        else if (roll < 0.03) write(`${base}.log`, 'log line\n');
        else if (roll < 0.1) write(`${base}.json`, JSON.stringify({ id: f, items: Array.from({ length: 20 }, (_, k) => k) }, null, 2) + '\n');
        else if (roll < 0.15) write(`${base}.md`, `# File ${f}\n\n` + sourceText(1500));
        else write(`${base}.ts`, sourceText(Math.floor(200 + 4000 * -Math.log(1 - rand() * 0.997))));
      }
    }
  }
}

function formatTable(rows: Row[]): string {
  const header = ['repository', 'phase', 'files', 'MB', 'ms', 'files/s', 'MB/s'];
  const body = rows.map((r) => [
    r.repo,
    r.phase,
    String(r.files),
    (r.bytes / 1e6).toFixed(2),
    r.ms.toFixed(1),
    Math.round((r.files / r.ms) * 1000).toLocaleString('en-US'),
    ((r.bytes / 1e6 / r.ms) * 1000).toFixed(1),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => row[i]!.length)));
  const line = (cells: string[]): string => '| ' + cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ') + ' |';
  return [line(header), '|' + widths.map((w, i) => (i < 2 ? ':' : '') + '-'.repeat(w + 1 - (i < 2 ? 1 : 0)) + (i >= 2 ? ':' : '-')).join('|') + '|', ...body.map(line)].join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { files: { type: 'string' }, 'no-model': { type: 'boolean' }, model: { type: 'string' } } });
  const count = Number(values.files ?? 20_000);
  const tokenizers: Array<[string, (text: string) => number]> = [['bytes/4', approximate]];
  let dispose = (): void => undefined;
  if (!values['no-model']) {
    const file = values.model ?? TINY_MODEL;
    const model = await loadModel(file);
    dispose = () => model.dispose();
    tokenizers.push([path.basename(file, '.gguf'), (text) => model.tokenize(text).length]);
  }
  const project = path.resolve(__dirname, '..');
  const generated = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-bench-pack-'));
  try {
    const t0 = performance.now();
    generateRepo(generated, count);
    console.error(`generated ${count} files under ${generated} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    await walkRepository(project); // warm up (JIT, page cache) so that the first row is not a cold start
    const rows = [...(await benchRepo('this project', project, tokenizers)), ...(await benchRepo(`generated (${count} files)`, generated, tokenizers))];
    console.log(formatTable(rows));
    console.log(`\nnode ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? 'unknown'}), ${os.platform()} ${os.release()}; warm page cache`);
  } finally {
    fs.rmSync(generated, { recursive: true, force: true });
    dispose();
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
