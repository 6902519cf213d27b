/**
 * The packings (issue 15): how the packer chooses files when the repository does not fit the
 * budget. No imports, so that the settings (and the extension host's bundle) name them without
 * the packer.
 */

/**
 * How files were chosen when the repository does not fit the budget (`PackResult.packing`):
 *
 * - `'smallest-first'`: smallest files first (see `packRepository`); the prompt is the
 *   files' sections.
 * - `'ranked'` (issue 15): a file tree of the whole repository, files in full by PageRank over
 *   the definition → reference graph (favouring `recentFiles`), and a repository map (the
 *   definitions, with line numbers and signatures, of the parsed files not in full); see
 *   `packRanked`. Question-independent, so the prompt stays a cacheable prefix.
 */
export type Packing = 'smallest-first' | 'ranked';

/**
 * How files are to be chosen (`PackOptions.packing`): a {@link Packing}, or `'auto'`, the
 * product's default (CLI and extension): smallest-first when every packable file fits the budget
 * in full (the prompt is then exactly smallest-first's), else ranked (with
 * `PackOptions.rankedTokenBudget`). The choice depends only on the repository and the budgets,
 * never on a question, so the prompt stays a cacheable prefix; `PackResult.packing` says which was
 * chosen and `PackResult.auto` that auto chose it. Measured (docs/benchmarks.md, "Repositories larger than the
 * context"): ranked with retrieval answers +47.8 points more questions about files smallest-first
 * leaves out, but puts only ~60 % of the budget into files in full, so it loses when all fits.
 */
export type PackingOption = Packing | 'auto';

/** `PackOptions.packing`'s values. */
export const PACKING_OPTIONS: readonly PackingOption[] = ['auto', 'smallest-first', 'ranked'];
