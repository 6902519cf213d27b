/**
 * `reposnap stats` and `reposnap cache clear`: the workspace cache store's entries and counters.
 */
import fs from 'node:fs';
import path from 'node:path';
import { defaultCacheRoot, workspaceCacheDir } from '../cache/location';
import { CacheError, CacheStore, type StoreStats } from '../cache/store';
import { escapeControls, quotePath, terminalJson } from './terminal-text';
import { parseCommand, repoOption, UsageError } from './usage';

/**
 * The store of `--repo` (default: the current folder) under `--cache-dir` (default: the cache
 * root), opened without creating anything.
 * @throws UsageError for bad arguments or a repository that does not exist (`cache clear` of a
 *   missing repository still clears a cache folder left for it).
 */
function openStore(args: string[], extra: Record<string, { type: 'boolean' | 'string' }> = {}, allowMissingRepo = false) {
  const parsed = parseCommand({ args, options: { repo: { type: 'string' }, 'cache-dir': { type: 'string' }, ...extra } });
  const root = (parsed.values['cache-dir'] as string | undefined) ?? defaultCacheRoot();
  let repo: string;
  try {
    repo = repoOption(parsed.values.repo as string | undefined);
  } catch (e) {
    repo = path.resolve((parsed.values.repo as string | undefined) ?? '.');
    if (!allowMissingRepo || !fs.existsSync(workspaceCacheDir(root, repo))) throw e;
  }
  const dir = workspaceCacheDir(root, repo);
  return { store: CacheStore.open(dir, { create: false, onWarning: (m) => process.stderr.write(`reposnap: cache: ${m}\n`) }), values: parsed.values };
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
  const lines = [`cache ${quotePath(st.dir)}${st.enabled ? '' : ' (disabled)'}: ${st.entries.length} entries, ${mib(st.totalBytes)}`];
  const unmeasured = c.unmeasuredReuses > 0 ? ` (${c.unmeasuredReuses} question${c.unmeasuredReuses === 1 ? '' : 's'} with no cold prefill of the same model and settings to measure against not counted)` : '';
  lines.push(
    `questions: ${c.fullHits} full hits, ${c.partialHits} partial hits, ${c.misses} misses, ${c.continues} continued; ${c.tokensReused} tokens reused, ~${(c.prefillSavedMs / 1000).toFixed(1)} s of prefill saved${unmeasured}`,
  );
  for (const e of st.entries.sort((a, b) => b.lastUsed - a.lastUsed)) {
    if (e.kind === 'prefix') lines.push(`  prefix ${e.id}  ${e.tokens} tokens  ${mib(e.bytes)}  used ${age(e.lastUsed)} ago  hits ${e.hits}`);
    else lines.push(`  thread ${e.id}  ${e.turns.length} turns  L=${e.L} B=${e.B} ratio=${(e.B / e.L).toFixed(2)}  ${mib(e.bytes)}  used ${age(e.lastUsed)} ago`);
  }
  if (c.recent.length > 0) {
    lines.push('last questions:');
    for (const q of c.recent.slice(0, 10)) {
      lines.push(`  ${new Date(q.at).toISOString()}  ${q.outcome.padEnd(8)} L=${q.L} B=${q.B} reused=${q.reusedTokens} prefill_ms=${q.prefillMs.toFixed(0)} ttft_ms=${q.ttftMs.toFixed(0)}  ${escapeControls(JSON.stringify(q.question.slice(0, 60)))}`);
    }
  }
  return lines.join('\n');
}

/** `reposnap stats [--repo dir] [--cache-dir dir] [--json]`: creates nothing; a missing repository is a usage error. */
export async function runStats(args: string[]): Promise<number> {
  const { store, values } = openStore(args, { json: { type: 'boolean' } });
  const st = store.stats();
  process.stdout.write((values as { json?: boolean }).json ? `${terminalJson(st)}\n` : `${formatStoreStats(st, fs.existsSync(store.dir))}\n`);
  return 0;
}

/**
 * `reposnap cache clear [--repo dir] [--cache-dir dir]`: exit 0, or 1 with one line on stderr
 * when the cache cannot be cleared (a file in the folder's place, files that cannot be removed).
 */
export async function runCache(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== 'clear') throw new UsageError(`unknown cache command '${sub ?? ''}' (try: reposnap cache clear)`);
  const { store } = openStore(rest, {}, true);
  try {
    const before = store.stats();
    await store.clear();
    // the emptied folder goes too, as a question that saved nothing leaves none
    await store.removeIfEmpty();
    process.stdout.write(`cleared ${before.entries.length} entries (${mib(before.totalBytes)}) from ${quotePath(store.dir)}\n`);
    return 0;
  } catch (e) {
    if (!(e instanceof CacheError)) throw e;
    process.stderr.write(`reposnap: error: ${e.message}\n`);
    return 1;
  }
}
