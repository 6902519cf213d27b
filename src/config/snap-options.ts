/**
 * The SnapKV options of a question (Li et al. 2024, sec. 4; docs/engine.md): one schema,
 * one set of defaults and one check of each rule, shared by the settings (`reposnap.window`, …,
 * settings.ts and package.json's `contributes.configuration`), the CLI (`--window`, …, cli/ask.ts),
 * the engine process's request (host/protocol.ts) and the pipeline (pipeline/ask.ts).
 * Plain TypeScript, no `vscode` import.
 */
import * as v from 'valibot';
import type { BudgetAllocation } from '../engine/native';
import type { SnapScorer } from '../engine/policies/compose';

/** SnapKV's pooling of the window-attention scores over neighbouring prefix positions. */
export type SnapPooling = 'max' | 'avg';

/** The poolings, in the order the settings and the CLI list them. */
export const SNAP_POOLINGS: readonly SnapPooling[] = ['max', 'avg'];

/** The budget allocations (see {@link BudgetAllocation}), in the order the settings and the CLI list them. */
export const BUDGET_ALLOCATIONS: readonly BudgetAllocation[] = ['uniform', 'adakv', 'pyramid'];

/**
 * A prior over SnapKV's scores (issue 16, item 4): `'none'`, SnapKV alone; `'code'`, the
 * code-aware prior (src/engine/policies/code-prior.ts: a bonus on the tokens of definition
 * signature lines and of identifiers the question names).
 */
export type SnapPrior = 'none' | 'code';

/** The priors, in the order the settings and the CLI list them. */
export const SNAP_PRIORS: readonly SnapPrior[] = ['none', 'code'];

export type { SnapScorer };

/**
 * The scorers that rank the prompt's prefix positions (issue 16, item 4; {@link SnapScorer}):
 * `'snapkv'`, SnapKV's pooled window attention (query-aware); `'key-norm'`, −‖k‖₂ of each stored
 * key (Devoto et al. 2024, query-agnostic), keeping the same last w tokens; `'key-norm-topup'`,
 * half of the prefix budget by key norm (the question-independent base), the rest by SnapKV
 * (uniform allocation only). In the order the settings and the CLI list them.
 */
export const SNAP_SCORERS: readonly SnapScorer[] = ['snapkv', 'key-norm', 'key-norm-topup'];

/** SnapKV options of a question; `enabled: false` answers with full attention (the rest is then unused). */
export interface SnapOptions {
  /** Compress the prompt's KV cache (false: full attention). */
  enabled: boolean;
  /** Observation window w [tokens]: the prompt's last w tokens score the prefix. */
  window: number;
  /** Budget B [cells per layer and KV head], window included: B ≥ w. */
  budget: number;
  /** Pooling kernel [tokens], odd; 1 = no pooling. */
  kernel: number;
  /** Pooling of the scores over the kernel. */
  pooling: SnapPooling;
  /** How the budget is shared among layers and KV heads (uniform = SnapKV; adakv, pyramid: same total). */
  allocation: BudgetAllocation;
  /** The scorer that ranks the prefix ({@link SNAP_SCORERS}); the code prior needs `snapkv`. */
  scorer: SnapScorer;
  /** A prior over the scores ({@link SnapPrior}). */
  prior: SnapPrior;
  /** The code prior's bonus β: multiples of each (layer, KV head)'s mean score added per flag a token carries. */
  priorBonus: number;
}

/**
 * The defaults: the SnapKV paper's and its reference implementation's (w 32, B 1024, kernel 7,
 * max), uniform allocation, SnapKV's scorer (the key-norm scorer is measured beside it:
 * bench/results/fidelity-coder-keynorm.json, repoqa-coder-keynorm.json), no prior (the code prior did not answer better than SnapKV at equal
 * memory on bench/repoqa: bench/results/repoqa-coder-prior.json, docs/benchmarks.md, "Code-aware prior"), its
 * bonus β 1 when chosen.
 */
export const SNAP_DEFAULTS: Readonly<SnapOptions> = Object.freeze({
  enabled: true,
  window: 32,
  budget: 1024,
  kernel: 7,
  pooling: 'max',
  allocation: 'uniform',
  scorer: 'snapkv',
  prior: 'none',
  priorBonus: 1,
} satisfies SnapOptions);

/** Inclusive ranges of the numeric options (the settings' `minimum`/`maximum` in package.json are these). */
export const SNAP_LIMITS = {
  /** [tokens] */
  window: { min: 1, max: 4096 },
  /** [cells per layer and KV head] */
  budget: { min: 1, max: Number.MAX_SAFE_INTEGER },
  /** [tokens], odd */
  kernel: { min: 1, max: 255 },
  /** [multiples of a head's mean score] */
  priorBonus: { min: 0, max: 1000 },
} as const;

/**
 * The rule between two options: B counts the window's cells, so B ≥ w. The one check and the one
 * message; `names` are how the front end names the options (`--budget`, `reposnap.budget`).
 * @returns the message, or undefined when the budget is at least the window.
 */
export function budgetBelowWindow(budget: number, window: number, names: { budget: string; window: string } = { budget: 'budget', window: 'window' }): string | undefined {
  return budget < window ? `${names.budget} (${budget}) must be at least ${names.window} (${window})` : undefined;
}

const int = (l: { min: number; max: number }) => v.pipe(v.number(), v.integer(), v.minValue(l.min), v.maxValue(l.max));

/**
 * The schema of {@link SnapOptions} (valibot): types, ranges, an odd kernel, a prior bonus in
 * [0, 1000], the code prior only with SnapKV's scorer, the key-norm top-up only with the uniform
 * allocation, and B ≥ w. Missing
 * fields take {@link SNAP_DEFAULTS}; fields it does not know are dropped.
 */
export const SnapOptionsSchema = v.pipe(
  v.object({
    enabled: v.optional(v.boolean(), SNAP_DEFAULTS.enabled),
    window: v.optional(int(SNAP_LIMITS.window), SNAP_DEFAULTS.window),
    budget: v.optional(int(SNAP_LIMITS.budget), SNAP_DEFAULTS.budget),
    kernel: v.optional(v.pipe(int(SNAP_LIMITS.kernel), v.check((k) => k % 2 === 1, 'must be odd')), SNAP_DEFAULTS.kernel),
    pooling: v.optional(v.picklist(SNAP_POOLINGS as SnapPooling[]), SNAP_DEFAULTS.pooling),
    allocation: v.optional(v.picklist(BUDGET_ALLOCATIONS as BudgetAllocation[]), SNAP_DEFAULTS.allocation),
    scorer: v.optional(v.picklist(SNAP_SCORERS as SnapScorer[]), SNAP_DEFAULTS.scorer),
    prior: v.optional(v.picklist(SNAP_PRIORS as SnapPrior[]), SNAP_DEFAULTS.prior),
    priorBonus: v.optional(v.pipe(v.number(), v.finite(), v.minValue(SNAP_LIMITS.priorBonus.min), v.maxValue(SNAP_LIMITS.priorBonus.max)), SNAP_DEFAULTS.priorBonus),
  }),
  v.check((o) => !(o.prior === 'code' && o.scorer !== 'snapkv'), "prior 'code' needs scorer 'snapkv' (its bonus is a multiple of SnapKV's scores)"),
  v.check((o) => !(o.scorer === 'key-norm-topup' && o.allocation !== 'uniform'), "scorer 'key-norm-topup' needs allocation 'uniform'"),
  v.check((o) => budgetBelowWindow(o.budget, o.window) === undefined, (issue) => {
    const o = issue.input as { budget: number; window: number };
    return budgetBelowWindow(o.budget, o.window) ?? 'budget below window';
  }),
);

/** A value that is not valid {@link SnapOptions}: the message names each bad field. */
export class SnapOptionsError extends RangeError {
  constructor(message: string) {
    super(message);
    this.name = 'SnapOptionsError';
  }
}

/**
 * Reads SnapKV options (from IPC, a benchmark's arguments, …): missing fields take the defaults.
 * @throws SnapOptionsError naming each invalid field (`kernel: must be odd`).
 */
export function parseSnapOptions(input: unknown): SnapOptions {
  const r = v.safeParse(SnapOptionsSchema, input);
  if (r.success) return r.output;
  throw new SnapOptionsError(`invalid SnapKV options: ${r.issues.map((i) => (v.getDotPath(i) ? `${v.getDotPath(i)}: ${i.message}` : i.message)).join('; ')}`);
}
