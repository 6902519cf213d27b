/**
 * `reposnap stats` and `reposnap cache clear`: the workspace cache store's entries and counters.
 */
import fs from 'node:fs';
import path from 'node:path';
import { defaultCacheRoot, workspaceCacheDir } from '../cache/location';
import { CacheError, CacheStore, type StoreStats } from '../cache/store';
import { count } from './count';
import { escapeControls, quotePath, quotePathIn, terminalJson } from './terminal-text';
import { parseCommand, repoOption, UsageError } from './usage';

/** `reposnap cache`'s usage, printed for `reposnap cache` alone and `reposnap cache --help`. */
const CACHE_HELP = `usage: reposnap cache clear [--repo <dir>] [--cache-dir <dir>]

  clear                   empty the repository's cache (its folder under the cache root goes too)
  --repo <dir>            the repository (default: the current directory; a repository since removed
                          still has its cache cleared)
  --cache-dir <dir>       cache root (default: $REPOSNAP_CACHE_DIR or ~/.cache/reposnap)

'reposnap stats' shows what the cache holds.
`;

/** `reposnap stats`' usage, printed for `reposnap stats --help` (or `-h`). */
const STATS_HELP = `usage: reposnap stats [--repo <dir>] [--cache-dir <dir>] [--json]

What the repository's cache holds: its prefix and thread entries (tokens, size, last use, hits),
the questions answered from it (hits, misses, tokens reused, prefill time saved) and the last ten.
Creates nothing.

  --repo <dir>            the repository (default: the current directory)
  --cache-dir <dir>       cache root (default: $REPOSNAP_CACHE_DIR or ~/.cache/reposnap)
  --json                  one JSON object on stdout instead of the text

'reposnap cache clear' empties it.
`;

/**
 * The store of `--repo` (default: the current folder) under `--cache-dir` (default: the cache
 * root), opened without creating anything.
 * @throws UsageError for bad arguments or a repository that does not exist (`cache clear` of a
 *   missing repository still clears a cache folder left for it).
 */
function openStore(args: string[], extra: Record<string, { type: 'boolean' | 'string' }> = {}, allowMissingRepo = false) {
  const parsed = parseCommand({ args, options: { repo: { type: 'string' }, 'cache-dir': { type: 'string' }, ...extra } });
  const root = path.resolve((parsed.values['cache-dir'] as string | undefined) ?? defaultCacheRoot());
  let repo: string;
  try {
    repo = repoOption(parsed.values.repo as string | undefined);
  } catch (e) {
    repo = path.resolve((parsed.values.repo as string | undefined) ?? '.');
    if (!allowMissingRepo || !fs.existsSync(workspaceCacheDir(root, repo))) throw e;
  }
  const dir = workspaceCacheDir(root, repo);
  return { store: CacheStore.open(dir, { create: false, onWarning: (m) => process.stderr.write(`reposnap: cache: ${quotePathIn(m, dir)}\n`) }), values: parsed.values };
}

const mib = (b: number) => `${(b / 2 ** 20).toFixed(1)} MiB`;
const age = (ms: number) => {
  const s = Math.max(0, (Date.now() - ms) / 1000);
  return s < 90 ? `${s.toFixed(0)} s` : s < 5400 ? `${(s / 60).toFixed(0)} min` : `${(s / 3600).toFixed(1)} h`;
};

/**
 * Human-readable report of a store's stats. A store whose folder does not exist (nothing was ever
 * cached for the repository, or a question that failed left nothing: `CacheStore.removeIfEmpty`)
 * is one line, `cache <dir>: none`. Paths and questions are printed with their control
 * characters escaped (terminal-text.ts).
 * @param exists whether the store's folder exists (default true).
 */
export function formatStoreStats(st: StoreStats, exists = true): string {
  const c = st.counters;
  if (!exists) return `cache ${quotePath(st.dir)}: none (nothing is cached for this repository)`;
  const lines = [`cache ${quotePath(st.dir)}${st.enabled ? '' : ' (disabled)'}: ${count(st.entries.length, 'entry', 'entries')}, ${mib(st.totalBytes)}`];
  const unmeasured = c.unmeasuredReuses > 0 ? ` (${count(c.unmeasuredReuses, 'question')} with no cold prefill of the same model and settings to measure against not counted)` : '';
  lines.push(
    `questions: ${count(c.fullHits, 'full hit')}, ${count(c.partialHits, 'partial hit')}, ${count(c.misses, 'miss', 'misses')}, ${c.continues} continued; ${count(c.tokensReused, 'token')} reused, ~${(c.prefillSavedMs / 1000).toFixed(1)} s of prefill saved${unmeasured}`,
  );
  for (const e of st.entries.sort((a, b) => b.lastUsed - a.lastUsed)) {
    if (e.kind === 'prefix') lines.push(`  prefix ${e.id}  ${count(e.tokens, 'token')}  ${mib(e.bytes)}  used ${age(e.lastUsed)} ago  hits ${e.hits}`);
    else lines.push(`  thread ${e.id}  ${count(e.turns.length, 'turn')}  L=${e.L} B=${e.B} ratio=${(e.B / e.L).toFixed(2)}  ${mib(e.bytes)}  used ${age(e.lastUsed)} ago`);
  }
  if (c.recent.length > 0) {
    lines.push('last questions:');
    for (const q of c.recent.slice(0, 10)) {
      lines.push(`  ${new Date(q.at).toISOString()}  ${q.outcome.padEnd(8)} L=${q.L} B=${q.B} reused=${q.reusedTokens} prefill_ms=${q.prefillMs.toFixed(0)} ttft_ms=${q.ttftMs.toFixed(0)}  ${escapeControls(JSON.stringify(q.question.slice(0, 60)))}`);
    }
  }
  return lines.join('\n');
}

/** `reposnap stats [--repo dir] [--cache-dir dir] [--json]`: creates nothing; a missing repository is a usage error; `--help` prints the usage. */
export async function runStats(args: string[]): Promise<number> {
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(STATS_HELP);
    return 0;
  }
  const { store, values } = openStore(args, { json: { type: 'boolean' } });
  const st = store.stats();
  process.stdout.write((values as { json?: boolean }).json ? `${terminalJson(st)}\n` : `${formatStoreStats(st, fs.existsSync(store.dir))}\n`);
  return 0;
}

/**
 * `reposnap cache clear [--repo dir] [--cache-dir dir]`: exit 0, or 1 with one line on stderr
 * when the cache cannot be cleared (a file in the folder's place, files that cannot be removed).
 * `reposnap cache` alone prints the usage (exit 2), with `--help` too (exit 0); a cache that does
 * not exist is said to be absent, nothing is cleared.
 */
export async function runCache(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === undefined || sub === '--help' || sub === '-h' || sub === 'help') {
    process.stdout.write(CACHE_HELP);
    return sub === undefined ? 2 : 0;
  }
  if (sub !== 'clear') throw new UsageError(`unknown cache command ${quotePath(sub)} (try: reposnap cache clear)`);
  if (rest.includes('--help') || rest.includes('-h')) {
    process.stdout.write(CACHE_HELP);
    return 0;
  }
  const { store } = openStore(rest, {}, true);
  if (!fs.existsSync(store.dir)) {
    process.stdout.write(`no cache at ${quotePath(store.dir)}: nothing to clear\n`);
    return 0;
  }
  try {
    const before = store.stats();
    await store.clear();
    // the emptied folder goes too, as a question that saved nothing leaves none
    await store.removeIfEmpty();
    process.stdout.write(`cleared ${count(before.entries.length, 'entry', 'entries')} (${mib(before.totalBytes)}) from ${quotePath(store.dir)}\n`);
    return 0;
  } catch (e) {
    if (!(e instanceof CacheError)) throw e;
    process.stderr.write(`reposnap: error: ${e.message}\n`);
    return 1;
  }
}
