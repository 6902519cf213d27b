/**
 * Follow-up probe (issue 7, item 4): a thread on one long prefix P. The first question Q1 is
 * answered (A1), then a second question Q2 is asked and its answer A2 is decoded in two ways:
 *
 * - continue: on the cache SnapKV compressed for the first question (P + Q1 → B cells), with
 *   A1 and Q2 appended to it;
 * - re-snap: restore the uncompressed prefix, append the thread (Q1, A1) and Q2, and run SnapKV
 *   again, so that Q2's own window chooses what P keeps (docs/cache.md; RepoSnap's layout puts
 *   the thread before the question).
 *
 * Both decode A2 on the same number of cells (B + |A1| + |Q2|), with RepoSnap's on-device
 * SnapKV (w = 32, max pooling, kernel 7), and are compared with full attention on the same
 * tokens P, Q1, A1, Q2, A2 (A1 and A2 are full attention's greedy answers).
 */
import type { TeacherForcer } from './engine';
import { greedyContinuation, type Snapshot } from './engine';
import { compareToReference, referenceSteps, type PromptFidelity, type ReferenceStep } from './metrics';

/** The questions (story turns that steer the continuation elsewhere); Q1 and Q2 of an item differ. */
export const FOLLOW_UP_QUESTIONS: readonly string[] = [
  ' One day, the little dog found a big red ball in the garden.',
  ' Then the girl went to the kitchen to help her mom bake a cake.',
  ' The next morning, the boy saw a bird with a broken wing.',
  ' Later, the friends went to the park to play on the swings.',
  ' That night, a big storm came and the wind was very loud.',
  ' At school, the teacher showed the children a shiny new book.',
  ' After lunch, the cat climbed up the tall tree and could not get down.',
  ' On the way home, they found a small box next to the river.',
];

/** Settings of the probe. */
export interface FollowUpOptions {
  /** Observation window w and pooling of the SnapKV runs. Defaults: RepoSnap's (32, max, 7). */
  window?: number;
  kernel?: number;
  pooling?: 'max' | 'avg';
  /** Tokens of the first answer A1. Default 32. */
  answer1?: number;
  /** Teacher-forced steps of the second answer A2. Default 64. */
  answer2?: number;
}

/** One item: the prefix and the two questions. */
export interface FollowUpItem {
  /** Prefix P [tokens], BOS first. */
  prefix: number[];
  q1: string;
  q2: string;
}

/** Fidelity of A2 by mode, for one item and budget. */
export interface FollowUpResult {
  /** B / |P + Q1|. */
  budgetFraction: number;
  /** Cells kept by SnapKV for the first question. */
  budget: number;
  /** Cells when A2 is decoded (both modes). */
  cells: number;
  continue: PromptFidelity;
  resnap: PromptFidelity;
}

/**
 * Runs one item at every budget fraction. Full attention makes A1 and A2 (greedy, end of
 * sequence excluded) and the reference logits.
 */
export async function runFollowUpItem(forcer: TeacherForcer, item: FollowUpItem, fractions: readonly number[], opts: FollowUpOptions = {}): Promise<FollowUpResult[]> {
  const model = forcer.model;
  const w = opts.window ?? 32;
  const kernel = opts.kernel ?? 7;
  const pooling = opts.pooling ?? 'max';
  const n1 = opts.answer1 ?? 32;
  const n2 = opts.answer2 ?? 64;
  const banned = new Set([model.info.eos]);
  const q1 = Array.from(model.tokenize(item.q1));
  const q2 = Array.from(model.tokenize(item.q2));
  const P = item.prefix;

  // the prefix minus its last w tokens: each run re-decodes them with the capture armed
  forcer.clear();
  forcer.arm(w);
  await forcer.extend(P.slice(0, P.length - w));
  const base: Snapshot = await forcer.save(new Float32Array());

  // full attention: A1 after P + Q1, then A2 after Q2
  await forcer.restore(base);
  const afterQ1 = await forcer.extend([...P.slice(P.length - w), ...q1]);
  const a1 = (await greedyContinuation(forcer, afterQ1, n1 - 1, banned)).tokens;
  // full attention on P, Q1, A1, Q2, then A2
  await forcer.restore(base);
  const lastQ2 = await forcer.extend([...P.slice(P.length - w), ...q1, ...a1, ...q2]);
  const full = await greedyContinuation(forcer, lastQ2, n2, banned);
  const a2 = full.tokens; // n2 + 1 tokens; logits[i] predicts a2[i + 1]
  const ref: ReferenceStep[] = referenceSteps(full.logits, a2.slice(1));
  const forced = a2.slice(0, n2);

  const L1 = P.length + q1.length;
  const out: FollowUpResult[] = [];
  for (const fraction of fractions) {
    const B = Math.max(w + 1, Math.round(fraction * L1));
    const cells = B + a1.length + q2.length;

    await forcer.restore(base);
    await forcer.extend([...P.slice(P.length - w), ...q1]);
    await forcer.snap(w, B, kernel, pooling);
    await forcer.extend([...a1, ...q2]);
    const cont = compareToReference(ref, await forcer.force(forced));

    await forcer.restore(base);
    await forcer.extend([...P.slice(P.length - w), ...q1, ...a1, ...q2]);
    await forcer.snap(w, cells, kernel, pooling);
    const resnap = compareToReference(ref, await forcer.force(forced));

    out.push({ budgetFraction: fraction, budget: B, cells, continue: cont, resnap });
  }
  return out;
}

/**
 * The probe's items: the first `prefixLength` tokens of the longest cached prompts, with
 * questions Q1 = FOLLOW_UP_QUESTIONS[i mod 8] and Q2 = FOLLOW_UP_QUESTIONS[(i + 3) mod 8].
 */
export function followUpItems(prompts: readonly { tokens: number[] }[], n: number, prefixLength = 1200): FollowUpItem[] {
  const long = prompts.filter((p) => p.tokens.length >= prefixLength).sort((a, b) => b.tokens.length - a.tokens.length);
  const nq = FOLLOW_UP_QUESTIONS.length;
  return long.slice(0, n).map((p, i) => ({ prefix: p.tokens.slice(0, prefixLength), q1: FOLLOW_UP_QUESTIONS[i % nq]!, q2: FOLLOW_UP_QUESTIONS[(i + 3) % nq]! }));
}
