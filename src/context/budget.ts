import { throwIfAborted } from './errors';
import { countUpTo } from './prefix-count';

/**
 * How `fitSection` shares the thread: `maybeYield` is awaited before each block is counted (a
 * `createYielder`: it turns the event loop now and then, so that a section of 20,000 blocks does
 * not hold it), and `signal` is checked there (an abort rejects with an AbortError).
 */
export interface FitPace {
  maybeYield: () => Promise<void> | undefined;
  signal?: AbortSignal;
}

/** A section fitted to a token budget by `fitSection`. */
export interface FittedSection {
  /** The section's text, ending with a newline; `''` when nothing fits (the section is left out). */
  text: string;
  /** `countTokens(text)` (0 for `''`), always ≤ the budget. */
  tokens: number;
  /** Indices (into `blocks`) of the blocks in `text`, in priority order. */
  chosen: number[];
}

/**
 * Fits a section made of blocks to a token budget, exactly. `blocks` are in priority order
 * (the first is wanted most); `render(chosen)` makes the section's text from the chosen block
 * indices (in any display order it likes, with any header and footer). Blocks are taken greedily
 * in priority order while the render's overhead plus the blocks' own token counts stay within
 * `budget` (one that does not fit is skipped and the next is tried; a long block is tokenized only
 * as far as a prefix decides that it does not fit, `countUpTo`); then the whole text is
 * counted, and while it exceeds `budget` (a tokenizer can merge across block boundaries) the
 * lowest-priority block is dropped. So `tokens ≤ budget` always holds, with `tokens` as
 * `countTokens` counts the whole section. Tokens are `countTokens`'s units; `budget` ≥ 0.
 * Rejects with whatever `countTokens` or `render` throw, with `TypeError` when `countTokens`
 * returns something other than a finite number ≥ 0, and with an AbortError when `pace.signal`
 * aborts.
 */
export async function fitSection(
  blocks: readonly string[],
  render: (chosen: readonly number[]) => string,
  budget: number,
  countTokens: (text: string) => number | Promise<number>,
  pace?: FitPace,
): Promise<FittedSection> {
  const count = async (text: string): Promise<number> => {
    const n = await countTokens(text);
    if (typeof n !== 'number' || !Number.isFinite(n) || n < 0) throw new TypeError(`countTokens must return a finite number >= 0, got ${String(n)}`);
    return n;
  };
  if (blocks.length === 0 || budget <= 0) return { text: '', tokens: 0, chosen: [] };
  const overhead = await count(render([]));
  const chosen: number[] = [];
  let estimate = overhead;
  for (let i = 0; i < blocks.length && estimate < budget; i++) {
    await pace?.maybeYield();
    throwIfAborted(pace?.signal);
    // a block longer than the room left is tokenized only as far as a prefix shows it cannot fit
    // (a map block of a file with 100,000 definitions is megabytes)
    const fit = await countUpTo(blocks[i]!, budget - estimate, countTokens, pace?.signal !== undefined ? { signal: pace.signal } : {});
    if (fit.kind === 'counted' && estimate + fit.tokens <= budget) {
      chosen.push(i);
      estimate += fit.tokens;
    }
  }
  while (chosen.length > 0) {
    const text = render(chosen);
    const tokens = await count(text);
    if (tokens <= budget) return { text, tokens, chosen };
    chosen.pop();
  }
  return { text: '', tokens: 0, chosen: [] };
}
