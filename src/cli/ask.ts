/**
 * `reposnap ask`: packs a repository, prefills it, compresses the KV cache with SnapKV, and
 * streams the answer to stdout; ends with one `stats: key=value …` line (or JSON) on stderr.
 */
import fs from 'node:fs';
import path from 'node:path';
import { loadModel, type EngineModel } from '../engine/model';
import { KV_CACHE_TYPES, loadAddon, type KvCacheType } from '../engine/native';
import { describeEngine, engineBackends } from '../engine/backends';
import { FINGERPRINT_MEMO } from '../engine/state-file';
import { defaultCacheRoot, workspaceCacheDir } from '../cache/location';
import { CacheStore } from '../cache/store';
import { askRepository, type AskStats, type FollowUpMode } from '../pipeline/ask';
import { BUDGET_ALLOCATIONS, budgetBelowWindow, SNAP_DEFAULTS, SNAP_LIMITS, SNAP_POOLINGS, SNAP_PRIORS, SNAP_SCORERS, type SnapOptions } from '../config/snap-options';
import { formatContextTable } from './context-table';
import { formatStats } from './stats-line';
import { ControlFilter, controlPolicy, escapeControls, quotePath, quotePathIn, terminalJson } from './terminal-text';
import { isModelUri, ModelResolveError, resolveModel } from '../models/resolve';
import { malformedModelUri } from '../models/hub';
import { defaultFetchedModel, NO_MODEL_MESSAGE } from '../models/fetched';
import { count } from './count';
import { gpuLayersWarning } from './gpu-layers';
import { abortOnSignals } from './interrupt';
import { noticeText, PACK_FLAGS, packFlags, packFlagsHelp } from './pack-flags';
import { ArgumentChecks, checkThreadFlags, intOption, modelFileOption, numberOption, parseCommand, repoOption, retrievalShareOption, rpcOption, UsageError } from './usage';
import { DEFAULT_MAX_TOKENS } from '../pipeline/context-size';

const HELP = `usage: reposnap ask --repo <dir> [--model <file.gguf>] [options] "<question>"

  --repo <dir>            repository to pack (default: the current directory)
  --model <file|uri>      GGUF model file, or hf:user/repo:quant / hf:user/repo/file.gguf / https URL
                          downloaded once into <cache-dir>/models and SHA-256 checked (or REPOSNAP_MODEL);
                          default: the model 'npm run models' fetched (the coding model, --model coder,
                          when it was fetched, else SmolLM2)
  --model-sha256 <hex>    expected SHA-256 of the model file (default for hf: URIs: the hub's LFS digest)
  --budget <B>            SnapKV budget: KV cells kept per layer and KV head, window included (default ${SNAP_DEFAULTS.budget})
  --window <w>            SnapKV observation window in tokens (default ${SNAP_DEFAULTS.window})
  --kernel <k>            SnapKV pooling kernel, odd (default ${SNAP_DEFAULTS.kernel})
  --pooling ${SNAP_POOLINGS.join('|')}       SnapKV pooling (default ${SNAP_DEFAULTS.pooling})
  --allocation ${BUDGET_ALLOCATIONS.join('|')}
                          how the budget is shared among layers and KV heads, same total (default ${SNAP_DEFAULTS.allocation};
                          adakv and pyramid hold up to ~2x the cells: see bench/results/allocation.json)
  --scorer ${SNAP_SCORERS.join('|')}
                          what ranks the prompt's tokens: snapkv, the question's attention; key-norm,
                          the lowest key norms, query-agnostic; key-norm-topup, half the budget by key norm,
                          the rest by snapkv (default ${SNAP_DEFAULTS.scorer}; see bench/results/*-keynorm.json)
  --prior ${SNAP_PRIORS.join('|')}      a prior over SnapKV's scores: code raises the tokens of definition signature
                          lines and of identifiers the question names (default ${SNAP_DEFAULTS.prior})
  --prior-bonus <b>       the code prior's bonus, in multiples of each head's mean score (default ${SNAP_DEFAULTS.priorBonus})
  --no-snap               answer with full attention (no compression)
  --context-size <n>      context size in tokens (default: the model's training context, at most 8192);
                          refused above the training context and above what the KV cache needs vs free memory
  --force-context-size    allow a context size above the model's training context (answers degrade past it)
  --max-tokens <n>        answer length limit (default ${DEFAULT_MAX_TOKENS}); does not change what is packed: up to
                          --answer-room it always fits, above it it is served from what the prompt leaves
                          free, or refused with the number that fits
  --answer-room <n>       tokens the packer keeps free for the answer (default ${DEFAULT_MAX_TOKENS}, at most an eighth
                          of the context; refused above half of it); changing it packs another prefix (a cold prefill)
  --temperature <t>       sampling temperature, 0 = greedy (default 0)
  --top-p <p>             nucleus sampling (default 1)
  --seed <n>              sampling seed
  --threads <n>           decode threads (default: measured, see docs/engine.md)
  --threads-batch <n>     prefill threads
  --flash-attention on|off|auto   (default auto)
  --kv-type f16|f32|q8_0|…        KV cache type (default f16)
  --gpu-layers <n>        layers offloaded to a GPU build, or with --rpc to the RPC servers (default 0; with --rpc all)
  --rpc <host:port,…>     spread the model's layers over llama.cpp RPC servers ('reposnap rpc-server'; docs/rpc.md)
${packFlagsHelp()}  --retrieval-share <F>   with --packing ranked (or auto, when it packs ranked): share of the context,
                          0 <= F < 1, for the question's retrieved chunks of files not in full (default 0.15,
                          as reposnap.retrievalShare; 0: none)
  --thread <id>           the conversation this question belongs to (follow-ups reuse its turns; needs the cache)
  --follow-up resnap|continue   resnap: restore the uncompressed repository prefix and re-run SnapKV
                          for the new question (default); continue: append to the thread's compressed cache
  --cache-dir <dir>       cache folder (default: $REPOSNAP_CACHE_DIR or ~/.cache/reposnap, one subfolder per repository)
  --no-cache              neither read nor write the cache
  --json                  print the stats as one JSON object instead of the key=value line
                          (with context.summary and context.files: [{path, status, tokens, keptShare}])
  --show-context          print what the model read on stderr: the packed files sorted by the share of
                          their KV positions SnapKV kept (over all layers and heads), then the files left out and why
  --raw                   write the answer as the model produced it; by default escape sequences are
                          removed (and on a terminal every control character but newline and tab)
  --quiet                 no progress on stderr
  --verbose               name the engine's CPU variant (chosen for this CPU at run time), GPU and
                          backends on stderr (REPOSNAP_VERBOSE=1 adds llama.cpp's own log)
`;

/** Runs `reposnap ask` with its arguments; returns the exit code. */
export async function runAsk(args: string[]): Promise<number> {
  const parsed = parseCommand({
    args,
    allowPositionals: true,
    options: {
      repo: { type: 'string' },
      model: { type: 'string' },
      'model-sha256': { type: 'string' },
      budget: { type: 'string' },
      window: { type: 'string' },
      kernel: { type: 'string' },
      pooling: { type: 'string' },
      allocation: { type: 'string' },
      scorer: { type: 'string' },
      prior: { type: 'string' },
      'prior-bonus': { type: 'string' },
      'no-snap': { type: 'boolean' },
      'context-size': { type: 'string' },
      'force-context-size': { type: 'boolean' },
      'max-tokens': { type: 'string' },
      'answer-room': { type: 'string' },
      temperature: { type: 'string' },
      'top-p': { type: 'string' },
      seed: { type: 'string' },
      threads: { type: 'string' },
      'threads-batch': { type: 'string' },
      'flash-attention': { type: 'string' },
      'kv-type': { type: 'string' },
      'gpu-layers': { type: 'string' },
      rpc: { type: 'string' },
      ...PACK_FLAGS,
      'retrieval-share': { type: 'string' },
      thread: { type: 'string' },
      'follow-up': { type: 'string' },
      'cache-dir': { type: 'string' },
      'no-cache': { type: 'boolean' },
      json: { type: 'boolean' },
      'show-context': { type: 'boolean' },
      raw: { type: 'boolean' },
      quiet: { type: 'boolean' },
      verbose: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const o = parsed.values;
  if (o.help) {
    process.stdout.write(HELP);
    return 0;
  }
  // every flag is checked before the model is resolved or loaded; of several problems, the
  // first in argument order is reported (a missing question or --model after any flag's)
  const checks = new ArgumentChecks(args);
  const repo = checks.check('repo', () => repoOption(o.repo));
  // without --model (or REPOSNAP_MODEL): the model `npm run models` fetched, if any (src/models/fetched.ts)
  const modelSpec = o.model ?? process.env.REPOSNAP_MODEL ?? defaultFetchedModel()?.file;
  if (modelSpec !== undefined && !isModelUri(modelSpec)) checks.check('model', () => modelFileOption(modelSpec));
  if (modelSpec !== undefined && isModelUri(modelSpec)) checks.check('model', () => modelUriOption(modelSpec));
  const sha256 = o['model-sha256'];
  if (sha256 !== undefined && !/^[0-9a-fA-F]{64}$/.test(sha256)) checks.check('model-sha256', () => fail('--model-sha256 must be 64 hex digits'));

  const snap = checks.check('budget', () => snapOptions(o));
  const fa = o['flash-attention'] ?? 'auto';
  if (fa !== 'on' && fa !== 'off' && fa !== 'auto') checks.check('flash-attention', () => fail(`--flash-attention must be on, off or auto`));
  const kvType = o['kv-type'] ?? 'f16';
  if (!(KV_CACHE_TYPES as readonly string[]).includes(kvType)) checks.check('kv-type', () => fail(`--kv-type must be one of ${KV_CACHE_TYPES.join(', ')}`));

  const flags = packFlags(o, checks);
  const retrievalShare = checks.check('retrieval-share', () => retrievalShareOption(o['retrieval-share'], flags.packing)) ?? 0;
  if (retrievalShare > 0 && flags.packing === 'smallest-first') {
    checks.check('retrieval-share', () => fail('--retrieval-share needs --packing ranked or auto (retrieval quotes files the ranked packing left out of the full text)'));
  }

  const followUp = o['follow-up'] ?? 'resnap';
  if (followUp !== 'resnap' && followUp !== 'continue') checks.check('follow-up', () => fail(`--follow-up must be resnap or continue (got '${escapeControls(followUp)}')`));
  // it says how a thread's next question is answered: without a thread it would do nothing, silently
  if (o['follow-up'] !== undefined && o.thread === undefined) checks.check('follow-up', () => fail(`--follow-up needs --thread <id>: it says how the next question of a thread is answered`));
  checks.check('thread', () => checkThreadFlags(o.thread, o.threads));
  if (o.thread !== undefined && !/^[A-Za-z0-9_-]{1,64}$/.test(o.thread)) checks.check('thread', () => fail('--thread must be 1-64 letters, digits, - or _'));
  // a thread's turns live in the cache: without it a follow-up would silently start a new thread
  if (o.thread !== undefined && o['no-cache']) checks.check('thread', () => fail('--thread needs the cache, where its turns are kept: drop --no-cache (or --thread for a one-off question)'));

  const contextSize = o['context-size'] === undefined ? undefined : checks.check('context-size', () => intOption('context-size', o['context-size'], 0, 64));
  const maxTokens = checks.check('max-tokens', () => intOption('max-tokens', o['max-tokens'], DEFAULT_MAX_TOKENS, 1)) ?? DEFAULT_MAX_TOKENS;
  const answerRoom = o['answer-room'] === undefined ? undefined : checks.check('answer-room', () => intOption('answer-room', o['answer-room'], 0, 0));
  const temperature = checks.check('temperature', () => numberOption('temperature', o.temperature, 0, 0, 10));
  const topP = checks.check('top-p', () => numberOption('top-p', o['top-p'], 1, 0, 1));
  const seed = o.seed === undefined ? undefined : checks.check('seed', () => intOption('seed', o.seed, 0, 0, 2 ** 32 - 1));
  const threads = o.threads === undefined ? undefined : checks.check('threads', () => intOption('threads', o.threads, 0, 1, 512));
  const threadsBatch = o['threads-batch'] === undefined ? undefined : checks.check('threads-batch', () => intOption('threads-batch', o['threads-batch'], 0, 1, 512));
  const rpcServers = checks.check('rpc', () => rpcOption(o.rpc)) ?? [];
  const gpuLayers = o['gpu-layers'] === undefined && rpcServers.length > 0 ? undefined : checks.check('gpu-layers', () => intOption('gpu-layers', o['gpu-layers'], 0, 0));

  // one question: words after it are a mistake the shell makes quietly (an unquoted `--include
  // *.py` expands to file names, the first one taken as the glob and the rest as the question)
  if (parsed.positionals.length > 1) {
    const shown = parsed.positionals.slice(0, 4).map((p) => `'${escapeControls(p)}'`).join(', ');
    checks.check(undefined, () => fail(`ask takes one question, got ${parsed.positionals.length} arguments (${shown}${parsed.positionals.length > 4 ? ', …' : ''}): quote the question, and quote globs so that the shell does not expand them (--include '*.py')`));
  }
  const question = (parsed.positionals[0] ?? '').trim();
  if (!question) checks.check(undefined, () => fail('ask needs a question'));
  // one line, no "--help for usage" after it: what to run is in the line
  if (!modelSpec) checks.check(undefined, () => {
    throw new UsageError(NO_MODEL_MESSAGE, { showUsage: false });
  });
  checks.throwFirst();
  const quiet = o.quiet || !process.stderr.isTTY;
  if (o.model === undefined && process.env.REPOSNAP_MODEL === undefined && !quiet) process.stderr.write(`reposnap: model ${quotePath(modelSpec!)} (fetched by 'npm run models'; --model chooses another)\n`);
  const gpuWarning = gpuLayersWarning(gpuLayers, rpcServers.length > 0);
  if (gpuWarning !== undefined) process.stderr.write(`reposnap: ${gpuWarning}\n`);
  // what the engine runs on: a GPU backend that could not be used is said once, the rest with --verbose
  const engine = engineBackends(loadAddon());
  for (const note of engine.notes) process.stderr.write(`reposnap: ${escapeControls(note)}${engine.gpus.length === 0 ? '; using the CPU' : ''}\n`);
  if (o.verbose) process.stderr.write(`reposnap: ${escapeControls(describeEngine(engine))}\n`);

  const progress = (line: string) => {
    if (!o.quiet && process.stderr.isTTY) process.stderr.write(`\r\x1b[2K${line}`);
  };

  // `reposnap ask … | head`: a closed pipe ends the answer quietly
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });

  // absolute, so that a message naming a folder in it names it whatever the working directory
  const cacheRoot = path.resolve(o['cache-dir'] ?? defaultCacheRoot());
  // a first question that saves nothing (cancelled, failed) takes the cache root it created along
  const cacheRootExisted = fs.existsSync(cacheRoot);

  const controller = new AbortController();
  const stopListening = abortOnSignals(controller);
  // the answer on stdout: control sequences from the model (copied from the repository) filtered
  // (terminal-text.ts), and whether its last line is still open, so that an error or "cancelled"
  // on stderr starts on a line of its own
  const answerOut = new AnswerWriter(process.stdout, new ControlFilter(controlPolicy(process.stdout.isTTY, o.raw ?? false)));
  let store: CacheStore | undefined;
  let model: EngineModel | undefined;
  let stats: AskStats;
  try {
    let modelPath: string;
    try {
      modelPath = await resolveModel(modelSpec!, {
        directory: path.join(cacheRoot, 'models'),
        sha256,
        signal: controller.signal,
        onProgress: (p) => progress(`${p.phase === 'verify' ? 'checking SHA-256' : 'downloading'} ${((100 * p.downloadedBytes) / Math.max(1, p.totalBytes)).toFixed(0)} % · ${(p.bytesPerSecond / 2 ** 20).toFixed(1)} MB/s`),
        onWarning: (m) => process.stderr.write(`reposnap: ${m}\n`),
      });
    } catch (e) {
      // docs/cli.md: a --model that cannot be resolved is a usage error (code usage, exit 2); a failed
      // download is not the user's typing, so no "--help for usage" follows it
      if (e instanceof ModelResolveError) throw new UsageError(escapeControls(e.message), { option: 'model', showUsage: e.kind !== 'download' });
      throw e;
    }
    model = await loadModel(modelPath, { gpuLayers, rpcServers });
    // opened once the model has loaded: a model that fails to load leaves no cache folder
    const storeDir = workspaceCacheDir(cacheRoot, repo!);
    store = o['no-cache'] ? undefined : CacheStore.open(storeDir, { onWarning: (m) => process.stderr.write(`reposnap: cache: ${quotePathIn(m, storeDir)}\n`) });
    stats = await askRepository(
      {
        repo: repo!,
        question,
        model,
        snap: snap!,
        contextSize,
        forceContextSize: o['force-context-size'] ?? false,
        maxTokens,
        answerRoom,
        temperature,
        topP,
        seed,
        maxFileBytes: flags.maxFileBytes,
        // the cache root (entries, fingerprints, models) is never packed, even when it lies inside the repository
        pack: { include: flags.include, exclude: flags.exclude, defaultExcludes: flags.defaultExcludes, skipGenerated: flags.skipGenerated, order: flags.order, packing: flags.packing, maxWalkEntries: flags.maxWalkEntries, cacheDirs: [cacheRoot] },
        retrievalShare,
        session: { threads, threadsBatch, flashAttention: fa as 'on' | 'off' | 'auto', kvCacheType: kvType as KvCacheType },
        store,
        threadId: o.thread,
        followUp: followUp as FollowUpMode,
        signal: controller.signal,
      },
      (e) => {
        switch (e.kind) {
          case 'pack':
            progress(`packing: ${e.phase} ${e.done}${e.total ? `/${e.total}` : ''}${e.section ? ` (${escapeControls(e.section.path)}: ${e.section.chars} of ${e.section.of} characters)` : ''}`);
            break;
          case 'packed':
            progress('');
            if (!quiet) process.stderr.write(`packed ${count(e.pack.files.length, 'file')} (${e.pack.skipped.length} skipped), ${count(e.promptTokens, 'prompt token')}\n`);
            for (const n of e.pack.notices) process.stderr.write(`reposnap: ${noticeText(n)}\n`);
            if (e.pack.sections.length === 0) {
              // an --include that matches nothing, a repository of binaries: say so rather than let the answer look informed
              process.stderr.write(
                `reposnap: nothing of the repository is in the prompt (${e.pack.skipped.length} left out, ${e.pack.ignoredCount} ignored; --show-context or 'reposnap pack --list' says why): the answer cannot come from it\n`,
              );
            }
            break;
          case 'prefill':
            progress(`prefill: ${Math.round((100 * e.done) / e.total)}% (${e.done}/${e.total} tokens, ${Math.round(e.tokensPerSecond)} tok/s)`);
            if (e.done === e.total) progress('');
            break;
          case 'snap':
            break;
          case 'notice':
            process.stderr.write(`reposnap: ${escapeControls(e.message)}\n`);
            break;
          case 'token':
            answerOut.write(e.text);
            break;
        }
      },
    );
  } catch (e) {
    // Ctrl+C (or any failure) while packing or prefilling: the progress line goes; in the middle
    // of the answer: end its line; either way the error starts a line of its own
    progress('');
    await answerOut.endLine();
    throw e;
  } finally {
    stopListening();
    // nothing half-made stays: a store that saved nothing (a failure or cancel before the prefix
    // was saved) goes, and so does the cache root this question created, with the fingerprint
    // memo it wrote there, when nothing else is in it
    if (store && (await store.removeIfEmpty()) && !cacheRootExisted) removeCreatedCacheRoot(cacheRoot);
    model?.dispose();
  }
  await answerOut.close();
  if (o['show-context'] && stats.context) process.stderr.write(`${formatContextTable(stats.context)}\n`);
  process.stderr.write(o.json ? `${terminalJson({ ...stats, engine })}\n` : `${formatStats(stats)}\n`);
  return 0;
}

/** @throws UsageError with `message`: one failed check, for {@link ArgumentChecks.check}. */
function fail(message: string): never {
  throw new UsageError(message);
}

/**
 * Checks a model URI's form before anything is downloaded.
 * @throws UsageError (option `model`) saying how it is malformed and the forms expected.
 */
function modelUriOption(spec: string): string {
  const problem = malformedModelUri(spec);
  if (problem !== undefined) throw new UsageError(escapeControls(problem), { option: 'model' });
  return spec;
}

/**
 * Removes the cache root `root` that this question created (it did not exist when the question
 * started) and that it leaves without a saved entry (cancelled, failed): the model fingerprint
 * memo in it goes first when it is all the root holds (written by this question once it packed,
 * `CacheStore.fingerprintMemo`; only a process started meanwhile could have written it too, and
 * that one only hashes its model again), then the folder when that leaves it empty. Anything else
 * in it (another repository's folder, models/) keeps the root and the memo as they are.
 */
function removeCreatedCacheRoot(root: string): void {
  try {
    const names = fs.readdirSync(root);
    if (names.length === 1 && names[0] === FINGERPRINT_MEMO) fs.unlinkSync(path.join(root, FINGERPRINT_MEMO));
  } catch {
    // gone, unreadable, or the memo already removed: removeEmptyFolder decides
  }
  removeEmptyFolder(root);
}

/** Removes `dir` when it is an empty folder (`rmdir`); anything else (files in it, gone, not ours) leaves it as it is. */
function removeEmptyFolder(dir: string): void {
  try {
    fs.rmdirSync(dir);
  } catch {
    // not empty (another process wrote meanwhile), gone, or not ours to remove: it stays
  }
}

/**
 * The answer as `reposnap ask` writes it to stdout: each piece through a {@link ControlFilter},
 * remembering whether the last character written was a newline.
 */
export class AnswerWriter {
  /** Whether the last character written was not a newline (a line is open). */
  private open = false;

  constructor(
    private readonly out: NodeJS.WritableStream,
    private readonly filter: ControlFilter,
  ) {}

  /** Writes one piece of the answer (filtered; a possibly unfinished escape sequence at its end is held back). */
  write(piece: string): void {
    this.emit(this.filter.push(piece));
  }

  /**
   * Writes what the filter still holds and, when the answer's last line is open, a newline; resolves
   * once written. For an answer that stops early (Ctrl+C, an error), so that the message on stderr
   * starts on its own line.
   */
  async endLine(): Promise<void> {
    this.emit(this.filter.end());
    if (this.open) this.emit('\n');
    await new Promise<void>((resolve) => this.out.write('', () => resolve()));
  }

  /** The end of a whole answer: what the filter still holds, then one newline (always, as before); resolves once written. */
  async close(): Promise<void> {
    this.emit(this.filter.end());
    this.open = false;
    await new Promise<void>((resolve) => this.out.write('\n', () => resolve()));
  }

  private emit(text: string): void {
    if (text === '') return;
    this.out.write(text);
    this.open = !text.endsWith('\n');
  }
}

/**
 * The SnapKV options of `reposnap ask`'s flags: `--window`, `--budget`, `--kernel`, `--pooling`,
 * `--allocation`, `--scorer`, `--prior`, `--prior-bonus`, `--no-snap`; a flag not given takes {@link SNAP_DEFAULTS},
 * ranges are {@link SNAP_LIMITS}.
 * @throws UsageError naming the flag for a value out of range, an even kernel, a budget below the
 *   window, or `--prior code` with a scorer other than snapkv.
 */
export function snapOptions(o: {
  window?: string;
  budget?: string;
  kernel?: string;
  pooling?: string;
  allocation?: string;
  scorer?: string;
  prior?: string;
  'prior-bonus'?: string;
  'no-snap'?: boolean;
}): SnapOptions {
  const pooling = o.pooling ?? SNAP_DEFAULTS.pooling;
  if (!(SNAP_POOLINGS as readonly string[]).includes(pooling)) throw new UsageError(`--pooling must be ${SNAP_POOLINGS.join(' or ')} (got '${pooling}')`, { option: 'pooling' });
  const allocation = o.allocation ?? SNAP_DEFAULTS.allocation;
  if (!(BUDGET_ALLOCATIONS as readonly string[]).includes(allocation)) {
    throw new UsageError(`--allocation must be ${BUDGET_ALLOCATIONS.slice(0, -1).join(', ')} or ${BUDGET_ALLOCATIONS.at(-1)} (got '${allocation}')`, { option: 'allocation' });
  }
  const window = intOption('window', o.window, SNAP_DEFAULTS.window, SNAP_LIMITS.window.min, SNAP_LIMITS.window.max);
  const budget = intOption('budget', o.budget, SNAP_DEFAULTS.budget, SNAP_LIMITS.budget.min, SNAP_LIMITS.budget.max);
  const belowWindow = budgetBelowWindow(budget, window, { budget: '--budget', window: '--window' });
  if (belowWindow) throw new UsageError(belowWindow, { option: 'budget' });
  const kernel = intOption('kernel', o.kernel, SNAP_DEFAULTS.kernel, SNAP_LIMITS.kernel.min, SNAP_LIMITS.kernel.max);
  if (kernel % 2 === 0) throw new UsageError(`--kernel must be odd (got ${kernel})`, { option: 'kernel' });
  const scorer = o.scorer ?? SNAP_DEFAULTS.scorer;
  if (!(SNAP_SCORERS as readonly string[]).includes(scorer)) throw new UsageError(`--scorer must be ${SNAP_SCORERS.slice(0, -1).join(', ')} or ${SNAP_SCORERS.at(-1)} (got '${scorer}')`, { option: 'scorer' });
  if (scorer === 'key-norm-topup' && allocation !== 'uniform') throw new UsageError(`--scorer key-norm-topup needs --allocation uniform (got '${allocation}')`, { option: 'scorer' });
  const prior = o.prior ?? SNAP_DEFAULTS.prior;
  if (prior === 'code' && scorer !== 'snapkv') throw new UsageError(`--prior code needs --scorer snapkv (got '${scorer}')`, { option: 'prior' });
  if (!(SNAP_PRIORS as readonly string[]).includes(prior)) throw new UsageError(`--prior must be ${SNAP_PRIORS.join(' or ')} (got '${prior}')`, { option: 'prior' });
  const priorBonus = o['prior-bonus'] === undefined ? SNAP_DEFAULTS.priorBonus : o['prior-bonus'].trim() === '' ? NaN : Number(o['prior-bonus']);
  if (!(Number.isFinite(priorBonus) && priorBonus >= SNAP_LIMITS.priorBonus.min && priorBonus <= SNAP_LIMITS.priorBonus.max)) {
    throw new UsageError(`--prior-bonus must be a number from ${SNAP_LIMITS.priorBonus.min} to ${SNAP_LIMITS.priorBonus.max} (got '${o['prior-bonus']}')`, { option: 'prior-bonus' });
  }
  return {
    enabled: !o['no-snap'],
    window,
    budget,
    kernel,
    pooling: pooling as SnapOptions['pooling'],
    allocation: allocation as SnapOptions['allocation'],
    scorer: scorer as SnapOptions['scorer'],
    prior: prior as SnapOptions['prior'],
    priorBonus,
  };
}
