/**
 * Whether one section fits the tokens left, tokenizing no more of it than can decide: a file of
 * tens of megabytes is over any budget after its first few hundred kilobytes, and tokenizing it
 * whole took 34.7 s and 1.9 GB (a 50 MB file, SmolLM2's tokenizer) to say so.
 */
import { raceAbort, throwIfAborted } from './errors';
import { createYielder } from './fsapi';

/**
 * UTF-16 code units per token the first prefix is sized for: generous (code and prose run at
 * 2–5 characters per token), so that a prefix of `(left + PREFIX_MARGIN_TOKENS + 1) × this`
 * characters of an over-budget section almost always holds more tokens than are left.
 */
export const PREFIX_CHARS_PER_TOKEN = 16;

/**
 * Tokens a prefix cut at a line end may count beyond the same characters inside the whole text:
 * pre-tokenizers split at line ends, so only the last piece or two before the cut can tokenize
 * differently (a cut can split a long token of the whole in several); 16 is far more than that.
 */
export const PREFIX_MARGIN_TOKENS = 16;

/** Milliseconds of tokenizing after which `countUpTo` turns the event loop before its next count (as the pack's loop does). */
export const YIELD_EVERY_MS = 10;

/** The outcome of `countUpTo`. */
export type CountUpTo =
  /** Tokenized whole: `tokens` as `countTokens` returned them. */
  | { kind: 'counted'; tokens: number }
  /**
   * Over budget without being tokenized whole: its first `prefixChars` characters (cut after a
   * line end) alone count `prefixTokens` > tokens left + `PREFIX_MARGIN_TOKENS`.
   */
  | { kind: 'over'; prefixChars: number; prefixTokens: number };

/** Options of `countUpTo`. */
export interface CountUpToOptions {
  /**
   * Aborting rejects with an AbortError, also while waiting for `countTokens`, and before each
   * further call of it: a synchronous `countTokens` that has run for {@link YIELD_EVERY_MS} or more
   * is followed by one turn of the event loop, so that a signal handler (Ctrl+C) that aborts runs.
   */
  signal?: AbortSignal;
  /** Called before each call of `countTokens` with the characters about to be tokenized and the section's length. */
  onStep?: (chars: number, total: number) => void;
}

/**
 * Counts the tokens of `text` (a whole formatted section) when it may fit in `left` tokens, or
 * says it cannot without tokenizing all of it. Prefixes are tried first, each cut right after
 * the last line end before `(left + PREFIX_MARGIN_TOKENS + 1) × PREFIX_CHARS_PER_TOKEN × 4^k`
 * characters (k = 0, 1, …; a stretch with no line end is not cut): when one counts more than
 * `left + PREFIX_MARGIN_TOKENS` tokens the section is `'over'`. Otherwise, and for a text shorter
 * than the first prefix, the whole text is counted (`'counted'`; it may still exceed `left`, the
 * caller decides). Work: at most about 4/3 of the whole text is tokenized, and for an over-budget
 * section only a prefix proportional to `left`.
 *
 * Errors: rejects with `RangeError` for a `left` that is not a number ≥ 0, with `TypeError` when
 * `countTokens` returns anything but a finite number ≥ 0, with whatever `countTokens` throws, and
 * with an AbortError when `signal` aborts.
 */
export async function countUpTo(text: string, left: number, countTokens: (text: string) => number | Promise<number>, options: CountUpToOptions = {}): Promise<CountUpTo> {
  if (typeof left !== 'number' || Number.isNaN(left) || left < 0) throw new RangeError(`left must be a number >= 0, got ${String(left)}`);
  // a sync tokenizer never lets a signal handler run between the prefixes: turn the event loop
  // when the last count took a while (a large section's), then look at the signal
  const maybeYield = options.signal !== undefined ? createYielder(YIELD_EVERY_MS) : () => undefined;
  const count = async (part: string): Promise<number> => {
    await maybeYield();
    throwIfAborted(options.signal);
    options.onStep?.(part.length, text.length);
    const n = await raceAbort(Promise.resolve(countTokens(part)), options.signal);
    if (typeof n !== 'number' || !Number.isFinite(n) || n < 0) throw new TypeError(`countTokens must return a finite number >= 0, got ${String(n)}`);
    return n;
  };
  const limit = left + PREFIX_MARGIN_TOKENS;
  if (Number.isFinite(limit)) {
    for (let size = (limit + 1) * PREFIX_CHARS_PER_TOKEN; size < text.length; size *= 4) {
      const cut = text.lastIndexOf('\n', size - 1) + 1;
      if (cut === 0) continue;
      const prefixTokens = await count(text.slice(0, cut));
      if (prefixTokens > limit) return { kind: 'over', prefixChars: cut, prefixTokens };
    }
  }
  return { kind: 'counted', tokens: await count(text) };
}
