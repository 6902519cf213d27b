/**
 * `reposnap pack`: shows what `reposnap ask` would put in the prompt, without a model run:
 * every path with its tokens or the reason it was left out, and the totals.
 */
import path from 'node:path';
import { manifestEntries, manifestTotals, type ManifestEntry } from '../context/manifest';
import { packRepository, type PackResult } from '../context/pack';
import { autoPackingText } from '../pipeline/context-report';
import { defaultCacheRoot } from '../cache/location';
import { loadModel } from '../engine/model';
import { escapeControls, quotePath, terminalJson } from './terminal-text';
import { gpuLayersWarning } from './gpu-layers';
import { abortOnSignals } from './interrupt';
import { noticeText, PACK_FLAGS, packFlags, packFlagsHelp } from './pack-flags';
import { ArgumentChecks, intOption, modelFileOption, parseCommand, repoOption, UsageError } from './usage';

const HELP = `usage: reposnap pack [--repo <dir>] [options]

Lists what 'reposnap ask' would pack into the prompt: included files (in prompt order) with
their tokens, every other path with the reason it was left out, and the totals.

  --repo <dir>            repository to pack (default: the current directory)
  --list                  print the manifest, one line per path, before the totals
  --json                  print the manifest and the totals as one JSON object
  --model <file.gguf>     count tokens with this model's tokenizer (exact); without it the
                          count is approximate: ceil(UTF-8 bytes / 4) per section
  --budget <n>            token budget for the file sections (default: no limit); when the
                          repository is larger, --packing decides what is left out
${packFlagsHelp(`                          (ranked needs --budget: it chooses what fits one; 'reposnap ask' packs for
                          its context, this lists the same choice for the budget given; auto says
                          which it chose; ask keeps the retrieval share out of ranked's budget)
`)}  --cache-dir <dir>       the cache folder 'reposnap ask' uses (default: $REPOSNAP_CACHE_DIR or
                          ~/.cache/reposnap): left out, as ask leaves it out, when inside the repository
  --gpu-layers <n>        layers offloaded when loading --model on a GPU build (default 0)
  --quiet                 no progress on stderr
`;

/** Where `runPack` writes; defaults to the process's streams. */
export interface PackIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** Whether stderr is a terminal (progress is only drawn on one). */
  isTTY: boolean;
}

const processIo: PackIo = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  isTTY: process.stderr.isTTY === true,
};

/** How sections are counted without a model. */
const APPROXIMATE = 'approximate: ceil(UTF-8 bytes / 4) per section; pass --model <file.gguf> for exact counts';

/**
 * Runs `reposnap pack` with its arguments (after the command name); returns the exit code.
 * @throws UsageError for bad arguments or a missing repository; ModelLoadError when --model
 *   cannot be loaded; AbortError on SIGINT.
 */
export async function runPack(args: string[], io: PackIo = processIo): Promise<number> {
  const parsed = parseCommand({
    args,
    allowPositionals: false,
    options: {
      repo: { type: 'string' },
      list: { type: 'boolean' },
      json: { type: 'boolean' },
      model: { type: 'string' },
      'cache-dir': { type: 'string' },
      budget: { type: 'string' },
      ...PACK_FLAGS,
      'gpu-layers': { type: 'string' },
      quiet: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const o = parsed.values;
  if (io === processIo) {
    // `reposnap pack --list | head`: a closed pipe ends the output quietly.
    process.stdout.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE') process.exit(0);
      throw err;
    });
  }
  if (o.help) {
    io.stdout(HELP);
    return 0;
  }
  // every problem is found, the first one in argument order is reported
  const checks = new ArgumentChecks(args);
  const repo = checks.check('repo', () => repoOption(o.repo));
  const tokenBudget = o.budget === undefined ? Infinity : checks.check('budget', () => intOption('budget', o.budget, 0, 0)) ?? 0;
  const flags = packFlags(o, checks);
  if (flags.packing === 'ranked' && !Number.isFinite(tokenBudget)) {
    checks.check('packing', () => {
      throw new UsageError('--packing ranked needs --budget <n>: it chooses a file tree, files in full and a repository map that fit a budget (without one every file is in full)');
    });
  }
  const gpuLayers = checks.check('gpu-layers', () => intOption('gpu-layers', o['gpu-layers'], 0, 0)) ?? 0;
  if (o.model !== undefined) checks.check('model', () => modelFileOption(o.model!));
  checks.throwFirst();
  if (o.model !== undefined) {
    const warning = gpuLayersWarning(gpuLayers, false);
    if (warning !== undefined) io.stderr(`reposnap: ${warning}\n`);
  }

  const progress = (line: string): void => {
    if (!o.quiet && io.isTTY) io.stderr(`\r\x1b[2K${line}`);
  };
  const controller = new AbortController();
  const stopListening = abortOnSignals(controller);
  let result: PackResult;
  let tokenizer: string;
  let dispose = (): void => undefined;
  try {
    let countTokens = (text: string): number => Math.ceil(Buffer.byteLength(text, 'utf8') / 4);
    tokenizer = APPROXIMATE;
    if (o.model !== undefined) {
      const model = await loadModel(o.model, { gpuLayers });
      dispose = () => model.dispose();
      countTokens = (text) => model.tokenize(text).length;
      tokenizer = `${path.basename(o.model)} (exact)`;
    }
    result = await packRepository(repo!, {
      ...flags,
      tokenBudget,
      countTokens,
      cacheDirs: [o['cache-dir'] ?? defaultCacheRoot()],
      signal: controller.signal,
      onProgress: (p) =>
        progress(`packing: ${p.phase} ${p.done}${p.total !== undefined ? `/${p.total}` : ''}${p.section ? ` (${escapeControls(p.section.path)}: ${p.section.chars} of ${p.section.of} characters)` : ''}`),
    });
  } finally {
    progress('');
    stopListening();
    dispose();
  }

  const entries = manifestEntries(result);
  const totals = manifestTotals(result);
  if (o.json) {
    io.stdout(
      terminalJson({
        root: result.root,
        tokenizer: o.model !== undefined ? { kind: 'model', model: path.resolve(o.model) } : { kind: 'approximate', rule: 'ceil(utf8Bytes / 4) per section' },
        order: result.order,
        packing: result.packing,
        packingAuto: result.auto,
        tokenBudget: Number.isFinite(tokenBudget) ? tokenBudget : null,
        totals,
        notices: result.notices.map((n) => ({ code: n.code, message: n.message })),
        entries,
      }) + '\n',
    );
    return 0;
  }
  if (o.list) io.stdout(formatList(entries));
  io.stdout(formatTotals(result, totals, tokenizer));
  return 0;
}

/** The ranked packing's sections: each with its tokens (`file tree 120 tokens, files in full 900 tokens, repository map 300 tokens`). */
function rankedSummary(result: PackResult): string {
  const byKind = new Map<string, number>();
  for (const sec of result.sections) byKind.set(sec.kind, (byKind.get(sec.kind) ?? 0) + sec.tokens);
  const label: Record<string, string> = { tree: 'file tree', file: 'files in full', map: 'repository map' };
  return [...byKind].map(([kind, tokens]) => `${label[kind] ?? kind} ${tokens} tokens`).join(', ') || 'nothing fits';
}

/**
 * The totals' `packing` line: `ranked: <sections>` for the ranked packing, prefixed by what auto
 * chose when it chose (`auto chose ranked (not every file fits in full): …`); none for an explicit
 * smallest-first.
 */
function packingLines(result: PackResult): string[] {
  const auto = result.auto ? autoPackingText(result.packing) : undefined;
  if (result.packing === 'ranked') return [`packing     ${auto ?? 'ranked'}: ${rankedSummary(result)}`];
  return auto !== undefined ? [`packing     ${auto}`] : [];
}

/** The manifest as aligned text: tokens, status, path, detail in parentheses. */
function formatList(entries: ManifestEntry[]): string {
  const statusWidth = Math.max(8, ...entries.map((e) => e.status.length));
  const lines = [`${'tokens'.padStart(8)}  ${'status'.padEnd(statusWidth)}  path`];
  for (const e of entries) {
    const tokens = e.tokens === undefined ? '-' : String(e.tokens);
    const detail = e.detail === undefined ? '' : `  (${escapeControls(e.detail)})`;
    lines.push(`${tokens.padStart(8)}  ${e.status.padEnd(statusWidth)}  ${quotePath(e.path)}${detail}`);
  }
  return lines.join('\n') + '\n\n';
}

function formatTotals(result: PackResult, totals: ReturnType<typeof manifestTotals>, tokenizer: string): string {
  const byReason = Object.entries(totals.leftOut)
    .sort(([ra, a], [rb, b]) => b - a || (ra < rb ? -1 : ra > rb ? 1 : 0))
    .map(([reason, n]) => `${n} ${reason}`)
    .join(', ');
  const budget = Number.isFinite(result.tokenBudget)
    ? `${result.tokenBudget} tokens (${result.packing === 'ranked' ? 'files chosen by rank' : 'largest files left out first'})`
    : 'none';
  const orderText = result.order === 'mtime' ? 'mtime (least recently modified first, ties by path)' : 'path';
  return [
    `repository  ${quotePath(result.root)}`,
    `tokenizer   ${tokenizer}`,
    `order       ${orderText}`,
    ...packingLines(result),
    `budget      ${budget}`,
    `included    ${totals.files} files, ${totals.bytes} bytes, ${totals.tokens} tokens`,
    `left out    ${byReason === '' ? 'nothing' : byReason}`,
    ...result.notices.map((n) => `notice      ${noticeText(n)}`),
  ].join('\n') + '\n';
}
