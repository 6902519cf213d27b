/**
 * Token formats that secretlint's preset (12.0.0) lacks, recognisable by their value alone.
 *
 * Each pattern is a fixed prefix or shape followed by random characters, bounded on both sides so
 * that an identifier that merely starts the same way (`sk_live_mode`, `SKIP…`) does not match.
 */

/** One token format: the rule name reported for it (`SecretFinding.rule`), its pattern, and an optional check of each match. */
export interface TokenFormat {
  rule: string;
  /** A global regular expression; each match is one token. */
  pattern: RegExp;
  /** Says whether a match is a token (a JWT's header must decode to a JSON object with `alg`); absent: every match is. */
  accept?: (token: string) => boolean;
}

/**
 * The formats, in report order:
 * - `stripe`: Stripe secret (`sk_`) and restricted (`rk_`) keys, live and test mode, 24+ characters.
 * - `google-api-key`: `AIza` and 35 characters of `[A-Za-z0-9_-]`.
 */
export const TOKEN_FORMATS: readonly TokenFormat[] = [
  { rule: 'stripe', pattern: /(?<![A-Za-z0-9_])(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{24,247}(?![A-Za-z0-9])/g },
  { rule: 'google-api-key', pattern: /(?<![A-Za-z0-9_-])AIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])/g },
];

/** One token found by `findTokens`: the format's rule and the token's range (start inclusive, end exclusive). */
export interface TokenMatch {
  rule: string;
  start: number;
  end: number;
}

/** Every token of `TOKEN_FORMATS` in `text`, grouped by format in the list's order (each format's matches in text order). Pure. */
export function findTokens(text: string): TokenMatch[] {
  const found: TokenMatch[] = [];
  for (const { rule, pattern, accept } of TOKEN_FORMATS) {
    for (const match of text.matchAll(pattern)) {
      if (accept !== undefined && !accept(match[0])) continue;
      const start = match.index ?? 0;
      found.push({ rule, start, end: start + match[0].length });
    }
  }
  return found;
}
