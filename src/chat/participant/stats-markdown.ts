/**
 * `@reposnap /stats`: the workspace's cache stats as markdown (issue 32, item 1), from the same
 * records and summary as the Cache Stats panel (src/stats/records.ts `summarize`) and each
 * question's badge text (src/chat/protocol.ts `badgeText`). Plain TypeScript.
 */
import { formatBytes } from '../../stats/clear-cache';
import type { QuestionRecord } from '../../stats/records';
import { summarize } from '../../stats/records';
import { badgeText, formatMs } from '../protocol';

/** Questions listed in the table (the most recent); the panel shows them all. */
export const MAX_STATS_ROWS = 10;

/**
 * The summary (questions, cache outcomes, mean B / L, cold and warm time to first token, KV bytes
 * SnapKV saved) and a table of the last {@link MAX_STATS_ROWS} questions with their badge, or one
 * line when no question was answered yet.
 */
export function statsMarkdown(records: readonly QuestionRecord[]): string {
  if (records.length === 0) return 'No question has been answered in this workspace yet.';
  const s = summarize(records);
  const cell = (x: string) => x.replace(/\|/g, '\\|').replace(/\n/g, ' ');
  const outcomes = Object.entries(s.outcomes)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');
  const ttft = (ms: number | null) => (ms === null ? '–' : formatMs(ms));
  const lines = [
    `**${s.questions} question${s.questions === 1 ? '' : 's'}** · cache: ${outcomes}`,
    '',
    `- mean kept ratio B / L: ${s.meanRatio === null ? '– (no SnapKV)' : s.meanRatio.toFixed(2)}`,
    `- mean time to first token: cold ${ttft(s.meanTtftMs.cold)}, warm ${ttft(s.meanTtftMs.warm)}`,
    `- KV cache saved by SnapKV: ${formatBytes(s.kvBytesSaved)}`,
    '',
    '| question | source | stats |',
    '|---|---|---|',
    ...records.slice(-MAX_STATS_ROWS).reverse().map((r) => `| ${cell(r.question)} | ${r.source} | ${cell(badgeText(r))} |`),
  ];
  return lines.join('\n');
}
