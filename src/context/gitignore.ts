import ignore from 'ignore';

/** A compiled set of ignore rules, all expressed relative to the repository root. */
export type IgnoreMatcher = ignore.Ignore;

/**
 * Creates an empty matcher. Matching is case-sensitive by default, which is git's default
 * (`core.ignoreCase=false`) on case-sensitive file systems; pass `ignoreCase: true` to match
 * the way git does on a case-insensitive checkout.
 */
export function createMatcher(ignoreCase = false): IgnoreMatcher {
  return ignore({ ignorecase: ignoreCase });
}

/**
 * Returns a new matcher holding the rules of `parent` followed by the rules of one ignore
 * file (`.gitignore` or `.git/info/exclude`) whose directory is `baseDir`.
 *
 * `baseDir` is the directory of the ignore file relative to the repository root, with `/`
 * separators (`''` for the root). `content` is the file's text. `source` (e.g.
 * `'sub/.gitignore'`) is recorded on each rule as its mark, `source:line:pattern` (the
 * format of `git check-ignore -v`, with the pattern as written in the file), for the manifest.
 * `parent` is not modified.
 *
 * Every pattern is rewritten to be relative to the root (see `rebasePattern`), so that a
 * single matcher holds the rules of all ignore files that apply to a directory, in order
 * of increasing precedence. Because `ignore` lets the last matching rule win, this gives
 * git's precedence: a deeper `.gitignore` overrides a shallower one, and within one file
 * the last matching line wins. It never throws for any file content.
 */
export function extendMatcher(
  parent: IgnoreMatcher,
  content: string,
  baseDir: string,
  source: string,
  ignoreCase = false,
): IgnoreMatcher {
  const matcher = createMatcher(ignoreCase).add(parent);
  // Like git, skip a UTF-8 byte-order mark and accept CRLF line ends.
  const lines = content.replace(/^\uFEFF/, '').split(/\r?\n/);
  const rules: ignore.PatternParams[] = [];
  for (let i = 0; i < lines.length; i++) {
    const pattern = rebasePattern(lines[i]!, baseDir);
    if (pattern !== undefined) rules.push({ pattern, mark: `${source}:${i + 1}:${trimTrailingSpaces(lines[i]!)}` });
  }
  return rules.length > 0 ? matcher.add(rules) : matcher;
}

/**
 * Rewrites one line of an ignore file located in `baseDir` (relative to the repository
 * root, `''` for the root itself) into an equivalent pattern relative to the root, or
 * returns `undefined` for a line that holds no pattern (blank, comment, only spaces, a
 * lone `!`).
 *
 * Follows gitignore(5): unescaped trailing spaces are dropped; a leading `!` negates; a
 * trailing `/` restricts the pattern to directories; a pattern with a `/` at its start or
 * in its middle is anchored to `baseDir`, one without matches at any depth below it.
 * So in `baseDir` `'sub'`, `/out/` becomes `sub/out/`, and `*.log` becomes `sub/`, then a
 * `**` component, then `*.log`.
 * Glob metacharacters in `baseDir` are escaped.
 */
export function rebasePattern(line: string, baseDir: string): string | undefined {
  if (line === '' || line.startsWith('#')) return undefined;
  const trimmed = trimTrailingSpaces(line);
  if (trimmed === '') return undefined;
  if (baseDir === '') return trimmed === '!' ? undefined : trimmed;

  const negative = trimmed.startsWith('!');
  let body = negative ? trimmed.slice(1) : trimmed;
  const dirOnly = body.endsWith('/');
  if (dirOnly) body = body.slice(0, -1);
  const anchored = body.includes('/');
  if (body.startsWith('/')) body = body.slice(1);
  if (body === '') return undefined;

  return (
    (negative ? '!' : '') +
    escapeGlob(baseDir) +
    '/' +
    (anchored ? body : '**/' + body) +
    (dirOnly ? '/' : '')
  );
}

/** git's `trim_trailing_spaces`: drops a run of trailing spaces unless escaped by `\`. */
function trimTrailingSpaces(line: string): string {
  let lastSpace = -1;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c === ' ') {
      if (lastSpace < 0) lastSpace = i;
    } else if (c === '\\') {
      i++;
      if (i >= line.length) return line;
      lastSpace = -1;
    } else {
      lastSpace = -1;
    }
  }
  return lastSpace < 0 ? line : line.slice(0, lastSpace);
}

/** Escapes a literal directory path so that it can start a gitignore pattern. */
function escapeGlob(literal: string): string {
  const escaped = literal.replace(/[\\*?[\]]/g, '\\$&');
  return escaped.startsWith('!') || escaped.startsWith('#') ? '\\' + escaped : escaped;
}
