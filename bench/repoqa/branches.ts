/**
 * One question, every policy and budget, from one prefill of the question (issue 13, part 3).
 *
 * 1. Restore the repository prefix's state (the cached prefix, prefilled once per repository),
 *    prefill the question suffix with SnapKV's window capture armed (w = 32; when the suffix is
 *    shorter than w the prefix's last tokens are prefilled again, as askRepository does on a cache
 *    hit), and save the uncompressed sequence with `EngineSession.snapshot()`.
 * 2. Window scores: the engine's SnapKV graph run as a keep-all compaction with kernel 1
 *    (`snap({ force, keepScores })`, bit-identical to the uncompressed cache) returns the unpooled
 *    window attention [nLayer][nHeadKv][L − w]; other windows (the SnapKV grid) are captured by
 *    restoring the question's state, dropping its last w tokens and prefilling them again.
 * 3. Full attention: restore, greedy answer (end of generation or `answerTokens`), each step's
 *    logits kept as the reference.
 * 4. Every policy × budget branches from the saved state: restore, `EngineSession.compact(B, kept)`
 *    (the product's on-device compaction, the one SnapKV's own selection goes through), then the
 *    full-attention answer's tokens are teacher-forced (KL, top-1 per step) while the steps'
 *    argmax show where the compressed greedy answer departs from it; from the first departure the
 *    forced tokens are dropped (`truncate`) and the compressed answer is decoded greedily to its
 *    end. So the compressed greedy answer and the teacher-forced KL share their decode steps.
 * The first answer token comes from the prompt's last logits, computed at prefill with full
 * attention, in every branch (as in the product: SnapKV compacts after the prompt is decoded).
 */
import { budgetFor } from '../fidelity/benchmark';
import { greedy } from '../fidelity/engine';
import { compareToReference, referenceSteps, type PromptFidelity } from '../fidelity/metrics';
import { checkKept, type EvictionPolicy, type PolicyInput } from '../fidelity/policy';
import type { EngineModel } from '../../src/engine/model';
import type { EngineSession, SessionSnapshot } from '../../src/engine/session';
import { SNAP_WINDOW } from './repository';
import { ScoredPolicy } from '../../src/engine/policies/compose';

/** Tokens never excluded from the greedy choice (the end of generation ends an answer). */
const NONE: ReadonlySet<number> = new Set();

/** Why a greedy answer ended. */
export type StopReason = 'eog' | 'max' | 'done';

/** A greedy answer. */
export interface Answer {
  /** Answer tokens, end of generation excluded. */
  tokens: number[];
  text: string;
  /** 'eog': the model ended it; 'max': `answerTokens` reached; 'done': its candidate is settled (`MeasureSettings.complete`). */
  stop: StopReason;
}

/** One policy at one budget on one question. */
export interface BranchOutcome extends Answer {
  /** Cells kept per layer and KV head. */
  B: number;
  /**
   * Teacher-forced fidelity over the full answer's steps after its first token (top-1 agreement
   * per step, mean KL(full ‖ compressed) [nats], perplexity ratio); null when the full answer
   * has no such step (an empty or one-token answer cut by `answerTokens` = 1).
   */
  fidelity: PromptFidelity | null;
  /** First forced step whose argmax departs from the full answer; −1 when none (same tokens). */
  departedAt: number;
  /** Wall time of restore + compaction + decode [ms]. */
  ms: number;
}

/** What one question gives. */
export interface QuestionMeasurement {
  /** Prompt tokens (prefix + question). */
  L: number;
  prefixTokens: number;
  /** Question tokens after the prefix (between │ question │ tail). */
  suffixTokens: number;
  /** Tokens prefilled for the question (the suffix, plus the prefix tokens prefilled again for the window). */
  prefilledTokens: number;
  /** Restoring the prefix state + prefilling the question [ms]. */
  restoreMs: number;
  prefillMs: number;
  /** Snapshot of the question's state [ms]. */
  snapshotMs: number;
  /** Window scores for every window, and the key norms when a policy reads them [ms]. */
  scoresMs: number;
  full: Answer & { ms: number };
  /** Keep-all compaction (B = L) when asked: must equal full attention exactly. */
  keepAll?: BranchOutcome;
  /** Outcomes by policy id, then by budget (the order of `fractions`). */
  branches: Record<string, BranchOutcome[]>;
  /** Wall time of the whole question [ms]. */
  ms: number;
}

/** Settings of {@link measureQuestion}. */
export interface MeasureSettings {
  /** Budgets as fractions of L (B = round(fraction · L), at least 1). */
  fractions: readonly number[];
  /** Longest answer [tokens]. */
  answerTokens: number;
  /** Also run the keep-all compaction (a check of the machinery). */
  keepAll?: boolean;
  /** Stop rule besides the end of generation and `answerTokens`: the answer's text is complete. */
  complete?: (text: string) => boolean;
}

/** Copies the logits of the last decoded token. */
function lastLogits(session: EngineSession): Float32Array {
  return Float32Array.from(session.lastLogits());
}

/**
 * Decodes greedily from `first` (already chosen; `answer` holds the tokens before it) until the
 * end of generation, `max` tokens, or `complete(text)`.
 */
async function greedyFrom(
  model: EngineModel,
  session: EngineSession,
  answer: number[],
  first: number,
  max: number,
  complete: ((text: string) => boolean) | undefined,
  onLogits?: (l: Float32Array) => void,
): Promise<StopReason> {
  let next = first;
  for (;;) {
    if (model.isEndOfGeneration(next)) return 'eog';
    answer.push(next);
    if (complete?.(model.detokenize(answer))) return 'done';
    if (answer.length >= max) return 'max';
    const l = Float32Array.from(await session.step(next));
    onLogits?.(l);
    next = greedy(l, NONE);
  }
}

/**
 * Measures one question (see the file's doc). The session must be the one `prefix` was made in
 * (same model and settings); it is left holding some branch's state.
 * @param prefix the repository prefix's uncompressed state
 * @param prompt the whole prompt (prefix tokens + question tokens)
 */
export async function measureQuestion(
  model: EngineModel,
  session: EngineSession,
  prefix: SessionSnapshot,
  prompt: Int32Array,
  policies: readonly EvictionPolicy[],
  settings: MeasureSettings,
): Promise<QuestionMeasurement> {
  const t0 = performance.now();
  const L = prompt.length;
  const P = prefix.header.nPast;
  const w = SNAP_WINDOW;
  if (L <= w) throw new Error(`a prompt of ${L} tokens is shorter than the window (${w})`);

  // 1. the question on top of the restored prefix, the window captured
  session.clear();
  await session.restore(prefix, 'repository prefix');
  const restoreMs = performance.now() - t0;
  if (L - w < P) session.truncate(L - w);
  const from = session.position;
  session.armSnap(w);
  const tp = performance.now();
  await session.prefill(prompt.subarray(from));
  const prefillMs = performance.now() - tp;
  const firstLogits = lastLogits(session);
  const ts = performance.now();
  const question = await session.snapshot();
  const snapshotMs = performance.now() - ts;

  // 2. window scores
  const tw = performance.now();
  const scores = new Map<number, Float32Array>();
  const windows = [...new Set(policies.map((p) => p.scoreWindow).filter((x) => x > 0))].sort((a, b) => b - a);
  for (const win of windows) {
    if (win !== w) {
      session.clear();
      await session.restore(question, 'question');
      session.truncate(L - win);
      session.armSnap(win);
      await session.prefill(prompt.subarray(L - win));
    }
    await session.snap({ window: win, budget: L, kernel: 1, pooling: 'max', force: true, keepScores: true });
    scores.set(win, Float32Array.from(session.snapScores()));
    if (win !== w) session.armSnap(w);
  }
  // the key norms of the uncompressed question sequence (llama_snapkv_key_norms), for a scorer that reads them
  let keyNorms: Float32Array | undefined;
  if (policies.some((p) => p instanceof ScoredPolicy && p.scorer.readsKeyNorms)) {
    const r = await session.native.snapKeyNorms(0);
    if (r.status < 0) throw new Error(`key norms refused: ${r.error}`);
    keyNorms = r.norms;
  }
  const scoresMs = performance.now() - tw;

  // 3. full attention
  const tf = performance.now();
  session.clear();
  await session.restore(question, 'question');
  const fullTokens: number[] = [];
  const fullLogits: Float32Array[] = [];
  const fullStop = await greedyFrom(model, session, fullTokens, greedy(firstLogits, NONE), settings.answerTokens, settings.complete, (l) => fullLogits.push(l));
  // steps after the first token: feed token j, predict token j + 1 (or the end of generation)
  const eog = fullStop === 'eog' ? greedy(fullLogits[fullLogits.length - 1] ?? firstLogits, NONE) : -1;
  const forced = fullStop === 'eog' ? fullTokens : fullTokens.slice(0, -1);
  const targets = forced.map((_, j) => (j + 1 < fullTokens.length ? fullTokens[j + 1]! : eog));
  const ref = referenceSteps(fullLogits.slice(0, forced.length), targets);
  const full = { tokens: fullTokens, text: model.detokenize(fullTokens), stop: fullStop, ms: performance.now() - tf };

  const { nLayer, nHeadKv } = model.info;
  const branch = async (B: number, kept: Int32Array): Promise<BranchOutcome> => {
    const tb = performance.now();
    session.clear();
    await session.restore(question, 'question');
    await session.compact(B, kept);
    const logits: Float32Array[] = [];
    let departedAt = -1;
    for (let j = 0; j < forced.length; j++) {
      const l = Float32Array.from(await session.step(forced[j]!));
      logits.push(l);
      if (departedAt < 0 && greedy(l, NONE) !== targets[j]) departedAt = j;
    }
    let tokens: number[];
    let stop: StopReason;
    if (departedAt < 0) {
      tokens = [...fullTokens];
      stop = fullStop;
    } else {
      // the compressed answer: the full answer's tokens up to the departure, then its own
      tokens = fullTokens.slice(0, departedAt + 1);
      session.truncate(L + departedAt + 1);
      const next = greedy(logits[departedAt]!, NONE);
      stop = await greedyFrom(model, session, tokens, next, settings.answerTokens, settings.complete);
    }
    return { B, tokens, text: model.detokenize(tokens), stop, fidelity: ref.length > 0 ? compareToReference(ref, logits) : null, departedAt, ms: performance.now() - tb };
  };

  // 4. every policy × budget
  const out: QuestionMeasurement = {
    L,
    prefixTokens: P,
    suffixTokens: L - P,
    prefilledTokens: L - from,
    restoreMs,
    prefillMs,
    snapshotMs,
    scoresMs,
    full,
    branches: {},
    ms: 0,
  };
  if (settings.keepAll) {
    const all = new Int32Array(nLayer * nHeadKv * L);
    for (let r = 0; r < nLayer * nHeadKv; r++) for (let j = 0; j < L; j++) all[r * L + j] = j;
    out.keepAll = await branch(L, all);
  }
  for (const p of policies) out.branches[p.id] = [];
  for (const fraction of settings.fractions) {
    const B = budgetFor(fraction, L);
    const input: PolicyInput = { L, budget: B, nLayer, nHeadKv, windowScores: scores, ...(keyNorms ? { keyNorms } : {}) };
    for (const p of policies) {
      const kept = p.select(input);
      checkKept(input, kept);
      out.branches[p.id]!.push(await branch(B, kept));
    }
  }
  out.ms = performance.now() - t0;
  return out;
}
