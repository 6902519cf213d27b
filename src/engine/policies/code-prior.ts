/**
 * A code-aware prior over a base scorer (issue 16, item 4; kvpress's shape: a press that wraps
 * another press's scores). Prompt positions that hold code structure get a bonus on top of the
 * base scorer's pooled scores before the allocator picks the kept rows:
 * - {@link PRIOR_DEFINITION}: tokens of a definition's signature line (the tree-sitter tags the
 *   repository map uses: a function's, method's, class's, type's or constant's name line in a file
 *   shown in full, and every definition line of the repository map);
 * - {@link PRIOR_IDENTIFIER}: tokens of an identifier the question names, wherever it occurs in
 *   the prompt.
 * Which positions carry which flag is computed from the prompt's text (src/pipeline/code-prior.ts);
 * this file only scores.
 *
 * The bonus is a multiple of each (layer, KV head) row's own score scale, so that one multiple
 * means the same on every head, whatever its attention's concentration:
 *
 *   score'[r][p] = score[r][p] + bonus · n(p) · mean_r,   mean_r = (1/P) Σ_q score[r][q],
 *
 * where n(p) ∈ {0, 1, 2} counts the flags position p carries and P = L − w the scored prefix
 * positions. With SnapKV's pooled window attention, mean_r is the row's window attention to the
 * prefix spread evenly over it; a flagged position whose own score is 0 then ranks like one that
 * got `bonus` times the row's average attention. A row whose scores are all 0 keeps its order.
 */
import type { PolicyFamily, PolicyInput, Scorer } from './policy';

/** Flag of a position inside a definition's signature line. */
export const PRIOR_DEFINITION = 1;
/** Flag of a position inside an identifier the question names. */
export const PRIOR_IDENTIFIER = 2;

/** The prior's bonus multiple when none is given (see {@link CodePriorScorer}). */
export const DEFAULT_PRIOR_BONUS = 1;

/** Options of {@link CodePriorScorer}. */
export interface CodePriorOptions {
  /**
   * Per prompt position p (0…L−1), the flags it carries: {@link PRIOR_DEFINITION} |
   * {@link PRIOR_IDENTIFIER}, 0 for none. Positions past its end carry none.
   */
  flags: Uint8Array;
  /** Bonus multiple β ≥ 0 of the row's mean score, per flag carried. Default {@link DEFAULT_PRIOR_BONUS}. */
  bonus?: number;
}

/** Flags carried by one position: 0, 1 or 2. */
function flagCount(f: number): number {
  return (f & PRIOR_DEFINITION ? 1 : 0) + (f & PRIOR_IDENTIFIER ? 1 : 0);
}

/** A base scorer's scores raised on the positions of definitions and of identifiers the question names. */
export class CodePriorScorer implements Scorer {
  readonly id: string;
  readonly family: PolicyFamily = 'code-prior';
  readonly label: string;
  readonly params: Readonly<Record<string, number | string>>;
  readonly scoreWindow: number;
  readonly protectedTail: number;
  readonly readsKeyNorms?: boolean;
  readonly flags: Uint8Array;
  readonly bonus: number;

  /** @throws Error for a bonus that is negative or not finite. */
  constructor(
    readonly base: Scorer,
    opts: CodePriorOptions,
  ) {
    const bonus = opts.bonus ?? DEFAULT_PRIOR_BONUS;
    if (!Number.isFinite(bonus) || bonus < 0) throw new Error(`the prior's bonus must be a finite number ≥ 0, got ${bonus}`);
    this.flags = opts.flags;
    this.bonus = bonus;
    this.id = `${base.id}-code-b${bonus}`;
    this.label = `${base.label} + code prior β=${bonus}`;
    this.params = { ...base.params, prior: 'code', priorBonus: bonus };
    this.scoreWindow = base.scoreWindow;
    this.protectedTail = base.protectedTail;
    this.readsKeyNorms = base.readsKeyNorms;
  }

  /**
   * The base scorer's [nLayer][nHeadKv][P] scores (P = L − protectedTail) with the bonus added to
   * every flagged position (see the file's doc); a new Float64Array, the base's left as it is.
   * @throws Error when the base scorer's input is missing.
   */
  score(input: PolicyInput): Float64Array {
    const base = this.base.score(input);
    const P = input.L - this.protectedTail;
    const rows = input.nLayer * input.nHeadKv;
    const out = Float64Array.from(base);
    const n = new Uint8Array(P);
    let any = false;
    for (let p = 0; p < Math.min(P, this.flags.length); p++) {
      n[p] = flagCount(this.flags[p]!);
      if (n[p]) any = true;
    }
    if (!any || this.bonus === 0) return out;
    for (let r = 0; r < rows; r++) {
      let sum = 0;
      for (let p = 0; p < P; p++) sum += out[r * P + p]!;
      const step = (this.bonus * sum) / P;
      for (let p = 0; p < P; p++) if (n[p]) out[r * P + p] = out[r * P + p]! + n[p]! * step;
    }
    return out;
  }
}
