/**
 * English words too common in questions to tell chunks apart (a question's "which", "does",
 * "the"); code names are kept whatever they are.
 */
const STOP_WORDS: ReadonlySet<string> = new Set(
  'a an and are as at be by can do does for from how i if in into is it its me of on or that the this to was what when where which who why will with'.split(' '),
);

/**
 * Splits text into BM25 terms for code: runs of letters and digits (any script), each kept
 * lower-cased whole and, when it is a compound identifier, also as its parts: camelCase and
 * PascalCase split at case changes (an acronym stays one part: `parseHTTPHeader` → `parse`,
 * `http`, `header`), snake_case and kebab-case at `_` and `-`, letters from digits
 * (`utf8` → `utf8`, `utf`). Drops terms of one character and `STOP_WORDS`. Order follows the text.
 * Pure. Example: `defaultCacheRoot()` → `defaultcacheroot`, `default`, `cache`, `root`.
 */
export function codeTerms(text: string): string[] {
  const terms: string[] = [];
  for (const match of text.matchAll(/[\p{L}\p{N}_]+/gu)) {
    const word = match[0];
    const parts = word
      .split('_')
      .flatMap((piece) => piece.match(/\p{Lu}+(?!\p{Ll})|\p{Lu}?\p{Ll}+|\p{Lu}+|\p{N}+|[^\p{L}\p{N}]+|\p{L}+/gu) ?? []);
    const whole = word.replace(/^_+|_+$/g, '').toLowerCase();
    if (keep(whole)) terms.push(whole);
    if (parts.length > 1) for (const part of parts) if (keep(part.toLowerCase())) terms.push(part.toLowerCase());
  }
  return terms;
}

function keep(term: string): boolean {
  return term.length > 1 && !STOP_WORDS.has(term);
}
