/**
 * Stage 3, snap: SnapKV compresses the prompt's KV cache with the request's options
 * (config/snap-options.ts): SnapKV's scorer or the key-norm scorer (`scorer`), under the
 * code-aware prior when they ask for it (`prior: 'code'`, ../code-prior.ts); a refusal of the engine (a guard: SWA, ALiBi, …) answers with full
 * attention after a notice.
 */
import { EngineError, throwIfAborted } from '../../engine/errors';
import type { SnapOptions } from '../../config/snap-options';
import { processTagsCache } from '../../context/map/cache';
import { codePriorFlags, questionIdentifiers, sectionDefinitionLines, type PromptRun } from '../code-prior';
import type { AttentionInput } from '../context-report';
import type { Prefilled } from './prefill';
import type { Question } from './question';
import type { Restored } from './restore';

/** What {@link snap} did. */
export interface Snapped {
  /** Cells kept per layer and KV head (the cells before when nothing was compacted). */
  B: number;
  snapMs: number;
  /** What the model attends to, for the context report. */
  attention: AttentionInput;
}

/**
 * The engine's parameters of the options (what it runs and a thread entry records); `scorer` only
 * when it is not SnapKV's (the default), so that SnapKV's entries read as before.
 */
export function snapParams(s: SnapOptions): {
  window: number;
  budget: number;
  kernel: number;
  pooling: SnapOptions['pooling'];
  allocation: SnapOptions['allocation'];
  scorer?: SnapOptions['scorer'];
} {
  return { window: s.window, budget: s.budget, kernel: s.kernel, pooling: s.pooling, allocation: s.allocation, ...(s.scorer !== 'snapkv' ? { scorer: s.scorer } : {}) };
}

/**
 * The code prior's flags of the question's prompt (L = prefix + suffix positions): the packed
 * sections (after the template's head, each with its definition lines) and the retrieval section
 * (after the prefix), with the identifiers the question names. The thread's earlier turns and the
 * question itself get no flag.
 * @throws the tags parser's error when a grammar cannot be loaded.
 */
export async function questionPrior(q: Question): Promise<Uint8Array> {
  const tags = q.req.pack?.tagsCache ?? processTagsCache();
  const runs: PromptRun[] = [];
  let start = q.layout.head.length;
  for (let i = 0; i < q.pack.sections.length; i++) {
    const section = q.pack.sections[i]!;
    const tokens = q.sectionTokens[i]!;
    runs.push({ start, tokens, text: section.text, definitionLines: await sectionDefinitionLines(section, tags) });
    start += tokens.length;
  }
  if (q.retrievalText !== '') runs.push({ start: q.prefix.length, tokens: q.suffix.subarray(0, q.retrieval.tokens), text: q.retrievalText });
  const model = q.req.model;
  return codePriorFlags(q.prefix.length + q.suffix.length, runs, questionIdentifiers(q.req.question), (t) => model.tokenBytes(t)).flags;
}

/**
 * Runs SnapKV when the restore stage says so, then the request's `afterSnap`.
 * @throws AbortError when the request was cancelled before.
 */
export async function snap(q: Question, r: Restored, p: Prefilled): Promise<Snapped> {
  const out: Snapped = { B: p.before.cells, snapMs: 0, attention: r.continued ? { kind: 'continued' } : { kind: 'full' } };
  if (!r.snapNow) return out;
  throwIfAborted(q.req.signal);
  try {
    const prior = q.req.snap.prior === 'code' ? { flags: await questionPrior(q), bonus: q.req.snap.priorBonus } : undefined;
    const s = await q.session.snap({ ...snapParams(q.req.snap), prior });
    out.B = s.B;
    out.snapMs = s.ms;
    q.onEvent({ kind: 'snap', L: s.L, B: s.B, ms: s.ms, compacted: s.compacted });
    if (s.compacted) out.attention = { kind: 'snapkv', kept: { positions: q.session.snapKept(), nLayer: s.nLayer, nHeadKv: s.nHeadKv } };
    q.req.afterSnap?.(q.session);
  } catch (e) {
    if (!(e instanceof EngineError)) throw e;
    q.onEvent({ kind: 'notice', message: `${e.message}; answering with full attention` });
  }
  return out;
}
