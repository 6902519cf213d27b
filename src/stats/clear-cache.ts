/**
 * What `RepoSnap: Clear Cache` says before it deletes anything (issue 14, section 5): how many
 * cached KV states of which kind, how many bytes, from which folder, and that the recorded
 * question stats are reset. Plain TypeScript over the cache store's stats (`CacheStore.stats()`).
 */
import type { StoreStats } from '../cache/store';

/** The confirmation: a modal message, its detail, and the button that deletes. */
export interface ClearCachePrompt {
  message: string;
  detail: string;
  /** The modal's delete button (Cancel is VS Code's own). */
  confirm: string;
}

/** `1,234 bytes`, `12.3 KiB`, `41.3 MiB`, `2.05 GiB` (binary units, as the stats panel's MiB). */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes.toLocaleString('en-US')} byte${bytes === 1 ? '' : 's'}`;
  if (bytes < 2 ** 20) return `${(bytes / 1024).toFixed(1)} KiB`;
  if (bytes < 2 ** 30) return `${(bytes / 2 ** 20).toFixed(1)} MiB`;
  return `${(bytes / 2 ** 30).toFixed(2)} GiB`;
}

const plural = (n: number, one: string, many = `${one}s`) => `${n.toLocaleString('en-US')} ${n === 1 ? one : many}`;

/**
 * The confirmation for clearing `stats` (the workspace folder `folderName`'s cache store), with
 * `questions` recorded question stats; undefined when there is nothing to delete (no entry, no
 * byte, no recorded question).
 */
export function clearCachePrompt(stats: Pick<StoreStats, 'dir' | 'entries' | 'totalBytes'>, questions: number, folderName: string): ClearCachePrompt | undefined {
  const prefixes = stats.entries.filter((e) => e.kind === 'prefix').length;
  const threads = stats.entries.length - prefixes;
  if (stats.entries.length === 0 && stats.totalBytes === 0 && questions === 0) return undefined;
  const what =
    stats.entries.length === 0
      ? 'The cache holds no KV state.'
      : `It deletes ${plural(stats.entries.length, 'cached KV state')} (${plural(prefixes, 'repository prefix', 'repository prefixes')}, ${plural(threads, 'thread')}), ${formatBytes(stats.totalBytes)}, from ${stats.dir}.`;
  return {
    message: `Clear RepoSnap's cache for ${folderName}?`,
    detail: `${what} The ${plural(questions, 'recorded question')} in Cache Stats ${questions === 1 ? 'is' : 'are'} reset too. The next question reads the repository again (a full prefill).`,
    confirm: 'Clear Cache',
  };
}
