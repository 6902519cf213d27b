/**
 * The main measurement (issue 7, item 1): for each prompt, full attention's greedy continuation
 * is teacher-forced on the cache each policy leaves at each budget, and compared step by step
 * with full attention.
 */
import { greedyContinuation, type Snapshot, type TeacherForcer } from './engine';
import { compareToReference, referenceSteps, type PromptFidelity } from './metrics';
import { checkKept, type EvictionPolicy, type PolicyInput } from './policy';
import { SnapKvPolicy } from './policies/snapkv';
import { ScoredPolicy } from '../../src/engine/policies/compose';
import type { Prompt } from './prompts';

/** Settings of {@link measurePrompt}. */
export interface MeasureOptions {
  /** Budgets as fractions of L (B = round(fraction · L), at least 1). */
  fractions: readonly number[];
  /** Teacher-forced steps after compression (the continuation has steps + 1 tokens). */
  steps: number;
  /** Also run RepoSnap's on-device SnapKV with this configuration and compare it with the host selection. */
  deviceCheck?: SnapKvPolicy;
}

/** What one prompt gives, by policy id then budget fraction (same order as `fractions`). */
export interface PromptMeasurement {
  promptId: number;
  L: number;
  /** Full attention's greedy continuation (steps + 1 tokens). */
  continuation: number[];
  byPolicy: Record<string, PromptFidelity[]>;
  /**
   * The on-device SnapKV run for `deviceCheck`, by fraction: its fidelity and the fraction of
   * kept positions it shares with the host selection (null where B ≤ w).
   */
  device?: ({ fidelity: PromptFidelity; sharedKept: number } | null)[];
  /** Keep-all compaction against full attention (must be exact). */
  keepAll?: PromptFidelity;
  /** Wall time of this prompt [ms]. */
  ms: number;
}

/** B for a fraction of L. */
export function budgetFor(fraction: number, L: number): number {
  return Math.min(L, Math.max(1, Math.round(fraction * L)));
}

/** Fraction of positions that two kept layouts share, per (layer, head) as sets. */
export function sharedFraction(a: Int32Array, b: Int32Array, B: number): number {
  let shared = 0;
  for (let r = 0; r < a.length; r += B) {
    const set = new Set(a.subarray(r, r + B));
    for (const p of b.subarray(r, r + B)) if (set.has(p)) shared++;
  }
  return shared / a.length;
}

/**
 * Prefills the prompt once per observation window the policies need (only the last 32 tokens
 * are decoded again per window), saves the uncompressed sequence, and returns it with the window
 * scores. `maxWindow` tokens at the end are re-decoded with each capture.
 */
export async function preparePrompt(forcer: TeacherForcer, tokens: readonly number[], windows: readonly number[]): Promise<{ base: Snapshot; full: Snapshot; scores: Map<number, Float32Array>; tail: number[] }> {
  const maxWindow = Math.max(32, ...windows);
  const L = tokens.length;
  if (L <= maxWindow) throw new Error(`a prompt of ${L} tokens is too short for a window of ${maxWindow}`);
  const tail = tokens.slice(L - maxWindow);
  forcer.clear();
  forcer.arm(0);
  await forcer.extend(tokens.slice(0, L - maxWindow));
  const base = await forcer.save(new Float32Array());
  const scores = new Map<number, Float32Array>();
  let full: Snapshot | null = null;
  for (const w of [...new Set(windows)].sort((a, b) => a - b)) {
    await forcer.restore(base);
    forcer.arm(w);
    const last = await forcer.extend(tail);
    if (!full) full = await forcer.save(last);
    scores.set(w, await forcer.windowScores(w));
  }
  if (!full) {
    await forcer.restore(base);
    full = await forcer.save(await forcer.extend(tail));
  }
  return { base, full, scores, tail };
}

/** Measures one prompt (a story {@link Prompt} or a code prompt: its id and tokens) under every policy and budget. */
export async function measurePrompt(forcer: TeacherForcer, prompt: Pick<Prompt, 'id' | 'tokens'>, policies: readonly EvictionPolicy[], opts: MeasureOptions, withKeepAll = false): Promise<PromptMeasurement> {
  const t0 = performance.now();
  const L = prompt.tokens.length;
  const windows = policies.map((p) => p.scoreWindow).filter((w) => w > 0);
  if (opts.deviceCheck) windows.push(opts.deviceCheck.scoreWindow);
  const { base, full, scores, tail } = await preparePrompt(forcer, prompt.tokens, windows);

  await forcer.restore(full);
  // the uncompressed prompt's key norms, for the policies whose scorer reads them (key norm)
  const keyNorms = policies.some((p) => p instanceof ScoredPolicy && p.scorer.readsKeyNorms) ? await forcer.keyNorms() : undefined;
  const cont = await greedyContinuation(forcer, full.lastLogits, opts.steps, new Set([forcer.model.info.eos]));
  const ref = referenceSteps(cont.logits, cont.tokens.slice(1));
  const forced = cont.tokens.slice(0, opts.steps);
  const { nLayer, nHeadKv } = forcer.shape;

  const run = async (B: number, kept: Int32Array): Promise<PromptFidelity> => {
    await forcer.restore(full);
    await forcer.compact(B, kept);
    return compareToReference(ref, await forcer.force(forced));
  };

  const out: PromptMeasurement = { promptId: prompt.id, L, continuation: cont.tokens, byPolicy: {}, ms: 0 };
  if (withKeepAll) {
    const all = new Int32Array(nLayer * nHeadKv * L);
    for (let r = 0; r < nLayer * nHeadKv; r++) for (let j = 0; j < L; j++) all[r * L + j] = j;
    out.keepAll = await run(L, all);
  }
  for (const p of policies) out.byPolicy[p.id] = [];
  if (opts.deviceCheck) out.device = [];
  for (const fraction of opts.fractions) {
    const B = budgetFor(fraction, L);
    const input: PolicyInput = { L, budget: B, nLayer, nHeadKv, windowScores: scores, ...(keyNorms ? { keyNorms } : {}) };
    for (const p of policies) {
      const kept = p.select(input);
      checkKept(input, kept);
      out.byPolicy[p.id]!.push(await run(B, kept));
    }
    const dc = opts.deviceCheck;
    if (dc && out.device) {
      const w = dc.params.window;
      if (B <= w) {
        out.device.push(null);
      } else {
        // the capture must hold the prompt's last w queries: decode the tail again with it armed
        await forcer.restore(base);
        forcer.arm(w);
        await forcer.extend(tail);
        const kept = await forcer.snap(w, B, dc.params.kernel, dc.params.pooling);
        const fidelity = compareToReference(ref, await forcer.force(forced));
        out.device.push({ fidelity, sharedKept: sharedFraction(dc.select(input), kept, B) });
      }
    }
  }
  out.ms = performance.now() - t0;
  return out;
}
