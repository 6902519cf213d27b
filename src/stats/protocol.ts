/**
 * Messages between the cache stats panel's webview (media/src/stats.ts) and the extension.
 */
import type { QuestionRecord, RecordSummary } from './records';

/** Extension → stats webview. */
export type ToStatsWebview = { type: 'records'; records: QuestionRecord[]; summary: RecordSummary; engine: string };

/** Stats webview → extension. */
export type FromStatsWebview = { type: 'ready' } | { type: 'clear' };

/** Checks a message from the stats webview. */
export function parseFromStatsWebview(x: unknown): FromStatsWebview | undefined {
  if (typeof x !== 'object' || x === null) return undefined;
  const t = (x as { type?: unknown }).type;
  return t === 'ready' || t === 'clear' ? { type: t } : undefined;
}
