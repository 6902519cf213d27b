/**
 * Per-question measurements, kept per workspace for the cache stats panel and the status bar.
 */
import type { AnswerStats } from '../chat/protocol';
import type { WireAskStats } from '../host/protocol';

/** A key-value store like `vscode.Memento`. */
export interface RecordStore {
  get<T>(key: string): T | undefined;
  update(key: string, value: unknown): PromiseLike<void>;
}

/** One answered question: the badge's stats plus when, where from, and the KV sizes. */
export interface QuestionRecord extends AnswerStats {
  /** When it was answered [ms since the epoch]. */
  at: number;
  source: 'chat' | 'explain';
  /** Model file name. */
  model: string;
  /** The question's first line, shortened. */
  question: string;
  kvBytesBefore: number;
  kvBytesAfter: number;
}

/** Records kept; older ones are dropped. */
export const MAX_RECORDS = 500;
const KEY = 'reposnap.stats.records';

/** Summary of the records, for the panel's header and the status bar tooltip. */
export interface RecordSummary {
  questions: number;
  /** Questions per cache outcome. */
  outcomes: Record<WireAskStats['cache'], number>;
  /** Mean B / L over questions answered with SnapKV (null when none). */
  meanRatio: number | null;
  /** Mean time to first token [ms] (null when none): cold (`miss`, `off`) and warm (`hit`, `partial`, `continue`). */
  meanTtftMs: { cold: number | null; warm: number | null };
  /** KV bytes saved by SnapKV over all questions. */
  kvBytesSaved: number;
}

/** The recorded questions of one workspace. */
export class QuestionRecords {
  private records: QuestionRecord[];
  private readonly listeners = new Set<() => void>();

  constructor(private readonly store: RecordStore) {
    const saved = store.get<QuestionRecord[]>(KEY);
    this.records = Array.isArray(saved) ? saved : [];
  }

  /** All records, oldest first. */
  all(): readonly QuestionRecord[] {
    return this.records;
  }

  /** Records one answered question. */
  add(source: QuestionRecord['source'], model: string, question: string, s: WireAskStats, at = Date.now()): QuestionRecord {
    const line = question.trim().split('\n')[0]!;
    const r: QuestionRecord = {
      at,
      source,
      model,
      question: line.length > 80 ? `${line.slice(0, 79)}…` : line,
      L: s.L,
      B: s.B,
      ratio: s.ratio,
      snap: s.snap,
      files: s.files,
      packMs: s.packMs,
      prefillMs: s.prefillMs,
      prefillTokS: s.prefillTokS,
      snapMs: s.snapMs,
      ttftMs: s.ttftMs,
      decodeMs: s.decodeMs,
      decodeTokens: s.decodeTokens,
      decodeTokS: s.decodeTokS,
      kvBytesBefore: s.kvBytesBefore,
      kvBytesAfter: s.kvBytesAfter,
      cache: s.cache,
      ...(s.swaWindow !== undefined ? { swaCells: s.swaCells ?? 0, swaWindow: s.swaWindow } : {}),
    };
    this.records.push(r);
    if (this.records.length > MAX_RECORDS) this.records.splice(0, this.records.length - MAX_RECORDS);
    void this.store.update(KEY, this.records);
    this.changed();
    return r;
  }

  /** Forgets every record. */
  clear(): void {
    this.records = [];
    void this.store.update(KEY, this.records);
    this.changed();
  }

  /** Calls `listener` after each change; returns a function that unsubscribes. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Totals and means over the records. */
  summary(): RecordSummary {
    return summarize(this.records);
  }

  private changed(): void {
    for (const l of this.listeners) l();
  }
}

/** Totals and means over `records`. */
export function summarize(records: readonly QuestionRecord[]): RecordSummary {
  const mean = (xs: number[]) => (xs.length === 0 ? null : xs.reduce((a, b) => a + b, 0) / xs.length);
  const outcomes: RecordSummary['outcomes'] = { hit: 0, partial: 0, miss: 0, continue: 0, off: 0 };
  for (const r of records) outcomes[r.cache]++;
  const snapped = records.filter((r) => r.snap);
  return {
    questions: records.length,
    outcomes,
    meanRatio: mean(snapped.map((r) => r.ratio)),
    meanTtftMs: { cold: mean(records.filter((r) => isCold(r.cache)).map((r) => r.ttftMs)), warm: mean(records.filter((r) => !isCold(r.cache)).map((r) => r.ttftMs)) },
    kvBytesSaved: records.reduce((a, r) => a + Math.max(0, r.kvBytesBefore - r.kvBytesAfter), 0),
  };
}

/** Whether a question started without reusing any cached state (its TTFT counts as cold). */
export function isCold(outcome: QuestionRecord['cache']): boolean {
  return outcome === 'miss' || outcome === 'off';
}
