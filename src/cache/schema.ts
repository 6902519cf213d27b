/**
 * Shapes of the cache store's JSON files, checked on every read (valibot): a file that parses
 * as JSON but has the wrong shape (`null`, `"chain": null`, a string where a count belongs) is a
 * damaged entry like one with a bad checksum, never a TypeError further on. Entry ids are file
 * names: {@link ENTRY_ID} is what an id may look like before it names a file.
 */
import * as v from 'valibot';
import type { PrefixIndex, QuestionRecord, StoreCounters, ThreadIndex } from './store';

/**
 * What an entry id may be, per kind: a prefix id is 24 hex digits (a hash, store.ts), a thread id
 * 1–64 letters, digits, `-` or `_` (ids outside that are hashed to 32 hex digits before use).
 */
export const ENTRY_ID = {
  prefix: /^[0-9a-f]{24}$/,
  thread: /^[A-Za-z0-9_-]{1,64}$/,
} as const;

const count = v.pipe(v.number(), v.integer(), v.minValue(0));
const ms = v.pipe(v.number(), v.minValue(0));
/** A time [ms since the epoch]. */
const time = v.number();

/** prefix/<id>.json (fields this version does not know are kept, unchecked: a newer writer's). */
export const PrefixIndexSchema: v.GenericSchema<unknown, PrefixIndex> = v.looseObject({
  kind: v.literal('prefix'),
  id: v.pipe(v.string(), v.regex(ENTRY_ID.prefix)),
  key: v.string(),
  tokens: count,
  chain: v.array(v.string()),
  bytes: count,
  createdAt: time,
  lastUsed: time,
  hits: count,
});

const SnapParamsSchema = v.object({
  window: count,
  budget: count,
  kernel: count,
  pooling: v.string(),
  allocation: v.optional(v.string()),
});

/** thread/<id>.json (fields this version does not know are kept, unchecked). */
export const ThreadIndexSchema: v.GenericSchema<unknown, ThreadIndex> = v.looseObject({
  kind: v.literal('thread'),
  id: v.pipe(v.string(), v.regex(ENTRY_ID.thread)),
  key: v.string(),
  turns: v.array(v.object({ question: v.string(), answer: v.string(), answerTokens: v.array(v.pipe(v.number(), v.integer())) })),
  prefixTokens: count,
  snap: v.nullable(SnapParamsSchema),
  retrieval: v.optional(v.object({ tokens: count, files: v.array(v.object({ path: v.string(), tokens: count, offset: v.optional(count) })) })),
  L: count,
  B: count,
  bytes: count,
  createdAt: time,
  lastUsed: time,
  hits: count,
});

const QuestionRecordSchema: v.GenericSchema<unknown, QuestionRecord> = v.object({
  at: time,
  question: v.string(),
  outcome: v.picklist(['hit', 'partial', 'miss', 'continue', 'off']),
  key: v.optional(v.string()),
  L: count,
  B: count,
  reusedTokens: count,
  prefilledTokens: count,
  prefillMs: ms,
  snapMs: ms,
  ttftMs: ms,
  decodeTokS: ms,
});

/**
 * stats.json. Counters added after a store was written default to zero; `prefillMsSaved`, the
 * earlier definition of the time saved (reused tokens at the question's own suffix prefill
 * speed, about 20× too high), is dropped on read.
 */
export const StoreCountersSchema: v.GenericSchema<unknown, StoreCounters> = v.object({
  fullHits: count,
  partialHits: count,
  misses: count,
  continues: count,
  tokensReused: count,
  prefillSavedMs: v.optional(ms, 0),
  unmeasuredReuses: v.optional(count, 0),
  coldPrefill: v.optional(v.record(v.string(), v.object({ msPerToken: ms, tokens: count, at: time })), () => ({})),
  corruptRemoved: count,
  evicted: count,
  recent: v.array(QuestionRecordSchema),
});

/** The shape check of one value: the checked value, or why it is not of the shape (one line). */
export function checkShape<T>(schema: v.GenericSchema<unknown, T>, value: unknown): { ok: true; value: T } | { ok: false; why: string } {
  const r = v.safeParse(schema, value);
  if (r.success) return { ok: true, value: r.output };
  const first = r.issues[0];
  const where = first ? v.getDotPath(first) : null;
  return { ok: false, why: `${where ? `${where}: ` : ''}${first?.message ?? 'wrong shape'}`.slice(0, 160) };
}
