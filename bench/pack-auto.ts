/**
 * bench/pack-auto: `packRepository` with each packing (auto, ranked, smallest-first), this tree's
 * code next to a baseline checkout's, in one run, on the same repositories: the median wall time of
 * `--runs` interleaved runs (after one untimed warm-up run) and the median CPU time of the process
 * (user + system, all threads: less swayed by other load than wall time), the files opened (`open` calls through a counting `ContextFs`, the walk's
 * included) and the characters passed to the tokenizer, and whether the baseline packed the same
 * prompt (sections, skipped list, secret entries) byte for byte.
 *
 *   git worktree add /tmp/base <commit> && ln -s "$PWD/node_modules" /tmp/base/node_modules
 *   node --expose-gc --import tsx bench/pack-auto.ts [--baseline /tmp/base] [--repo dir]… [--huge-mb 50]
 *     [--budget 6000] [--runs 3] [--model file.gguf] [--max-file-bytes n]
 *
 * Repositories: `--repo` (repeatable; default this project and node_modules/ajv), and with
 * `--huge-mb` a generated one (under the OS temp directory, deleted after) holding one JavaScript
 * file of that many MB (one small function per 3 lines) and a small one. Each run gets a fresh
 * tags cache, as a CLI process has (parsing is part of the ranked packing's time). Tokenizer:
 * ceil(UTF-8 bytes / 4) as `reposnap pack` counts without a model, or `--model`'s. The page cache
 * is warm after the first run: these are not cold-disk numbers.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { nodeFs, type ContextFs } from '../src/context/fsapi';
import { loadModel } from '../src/engine/model';
import type { PackOptions, PackResult } from '../src/context/pack';

type PackFn = (root: string, options: PackOptions) => Promise<PackResult>;
interface Variant {
  name: string;
  packRepository: PackFn;
  newTagsCache: () => PackOptions['tagsCache'];
}

const { values } = parseArgs({
  options: {
    baseline: { type: 'string' },
    repo: { type: 'string', multiple: true },
    'huge-mb': { type: 'string' },
    budget: { type: 'string', default: '6000' },
    runs: { type: 'string', default: '3' },
    model: { type: 'string' },
    'max-file-bytes': { type: 'string' },
  },
});
const budget = Number(values.budget);
const runs = Number(values.runs);
if (!(budget >= 0) || !Number.isInteger(runs) || runs < 1) throw new RangeError('--budget must be a number >= 0 and --runs an integer >= 1');
const maxFileBytes = values['max-file-bytes'] !== undefined ? Number(values['max-file-bytes']) : undefined;

/** A variant's `packRepository` and `TagsCache`, from the checkout at `dir`. */
async function variant(name: string, dir: string): Promise<Variant> {
  const packMod = (await import(path.join(dir, 'src/context/pack.ts'))) as { packRepository: PackFn };
  const cacheMod = (await import(path.join(dir, 'src/context/map/cache.ts'))) as { TagsCache: new () => NonNullable<PackOptions['tagsCache']> };
  return { name, packRepository: packMod.packRepository, newTagsCache: () => new cacheMod.TagsCache() };
}

/** The real file system, counting `open` calls. */
function countingFs(): { fs: ContextFs; opens: () => number } {
  let opens = 0;
  return {
    opens: () => opens,
    fs: {
      ...nodeFs,
      open: (p, flags) => {
        opens++;
        return nodeFs.open(p, flags);
      },
    },
  };
}

/** What must not change between the variants: the prompt, the report's list, the secret entries. */
function fingerprint(r: PackResult): string {
  const secrets = r.skipped.map((s) => r.secrets.skippedEntry(s.path)).filter((e) => e !== undefined);
  return JSON.stringify({ packing: r.packing, auto: r.auto, sections: r.sections, files: r.files, skipped: r.skipped, mapped: r.mapped, retrievable: r.retrievable, totalTokens: r.totalTokens, secrets });
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

/** A repository with one JavaScript file of about `mb` MB and a small one, under the OS temp directory. */
function hugeRepo(mb: number): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-bench-huge-'));
  const fd = fs.openSync(path.join(root, 'huge.js'), 'w');
  let written = 0;
  for (let i = 0; written < mb * 1e6; i += 1000) {
    const chunk = Array.from({ length: 1000 }, (_, k) => `export function f${i + k}(a, b) {\n  return a + b * ${i + k};\n}\n`).join('');
    fs.writeSync(fd, chunk);
    written += chunk.length;
  }
  fs.closeSync(fd);
  fs.writeFileSync(path.join(root, 'small.js'), 'export const x = 1;\n');
  return root;
}

async function main(): Promise<void> {
  const project = path.resolve(__dirname, '..');
  const variants = [await variant('new', project)];
  if (values.baseline !== undefined) variants.unshift(await variant('baseline', path.resolve(values.baseline)));
  const repos: Array<[string, string]> = (values.repo ?? [project, path.join(project, 'node_modules/ajv')]).map((r) => [path.relative(process.cwd(), path.resolve(r)) || '.', path.resolve(r)]);
  const hugeMb = values['huge-mb'] !== undefined ? Number(values['huge-mb']) : undefined;
  const huge = hugeMb !== undefined ? hugeRepo(hugeMb) : undefined;
  if (huge !== undefined) repos.push([`one ${hugeMb} MB file`, huge]);
  let countTokens = (text: string): number => Math.ceil(Buffer.byteLength(text, 'utf8') / 4);
  let dispose = (): void => undefined;
  if (values.model !== undefined) {
    const model = await loadModel(values.model);
    countTokens = (text) => model.tokenize(text).length;
    dispose = () => model.dispose();
  }
  try {
    console.log(`budget ${budget} tokens, median of ${runs} interleaved runs, tokenizer ${values.model !== undefined ? path.basename(values.model) : 'bytes/4'}${maxFileBytes !== undefined ? `, max file ${maxFileBytes} B` : ''}`);
    console.log('| repository | packing | ' + variants.map((v) => `${v.name} ms`).join(' | ') + ' | ' + variants.map((v) => `${v.name} CPU ms`).join(' | ') + ' | ' + variants.map((v) => `${v.name} opens`).join(' | ') + ' | ' + variants.map((v) => `${v.name} chars tokenized`).join(' | ') + ' | same result |');
    console.log('|---|---|' + variants.map(() => '---:|---:|---:|---:|').join('') + '---|');
    for (const [label, root] of repos) {
      for (const packing of ['auto', 'ranked', 'smallest-first'] as const) {
        const ms = variants.map((): number[] => []);
        const cpu = variants.map((): number[] => []);
        const opens = variants.map(() => 0);
        const chars = variants.map(() => 0);
        const prints = variants.map(() => '');
        // run 0 warms up (JIT, each variant's grammars), untimed; later runs alternate who goes first
        for (let run = 0; run <= runs; run++) {
          for (const k of variants.map((_, j) => (run % 2 === 0 ? j : variants.length - 1 - j))) {
            const v = variants[k]!;
            // the previous run's garbage is collected before, not during, this one (with --expose-gc)
            (globalThis as { gc?: () => void }).gc?.();
            const counting = countingFs();
            let tokenized = 0;
            const t0 = performance.now();
            const c0 = process.cpuUsage();
            const r = await v.packRepository(root, {
              tokenBudget: budget,
              packing,
              fs: counting.fs,
              tagsCache: v.newTagsCache(),
              ...(maxFileBytes !== undefined ? { maxFileBytes } : {}),
              countTokens: (text) => {
                tokenized += text.length;
                return countTokens(text);
              },
            });
            if (run > 0) {
              ms[k]!.push(performance.now() - t0);
              const c = process.cpuUsage(c0);
              cpu[k]!.push((c.user + c.system) / 1000);
            }
            opens[k] = counting.opens();
            chars[k] = tokenized;
            prints[k] = fingerprint(r);
          }
        }
        const same = prints.every((p) => p === prints[0]) ? 'yes' : 'NO';
        console.log(`| ${label} | ${packing} | ${ms.map((m) => median(m).toFixed(0)).join(' | ')} | ${cpu.map((m) => median(m).toFixed(0)).join(' | ')} | ${opens.join(' | ')} | ${chars.join(' | ')} | ${same} |`);
      }
    }
  } finally {
    dispose();
    if (huge !== undefined) fs.rmSync(huge, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
