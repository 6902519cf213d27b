/**
 * A count with its noun in the right number, for the CLI's lines ("1 entry", "2 entries").
 */

/**
 * `n` and `singular` when n is 1, else `n` and `plural`.
 * @param plural the plural form (default `singular` + "s").
 * @example count(1, 'entry', 'entries') === '1 entry'; count(0, 'miss', 'misses') === '0 misses'
 */
export function count(n: number, singular: string, plural = `${singular}s`): string {
  return `${n} ${n === 1 ? singular : plural}`;
}
