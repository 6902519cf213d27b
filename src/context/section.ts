/**
 * Formats one file as a section of the packed prompt:
 *
 * ```text
 * <path>
 * <fence>
 * <content>
 * <fence>
 * ```
 *
 * `path` (callers pass the `/`-separated path relative to the repository root) is written
 * on its own line, with control characters and Unicode line separators escaped (see
 * `escapePathForHeader`) so that a hostile file name cannot break the layout. The fence is
 * a run of backticks at least 3 long and longer than the longest run of backticks anywhere
 * in `content`, so the content cannot close it early. A newline is added after `content`
 * when it does not already end with one (an empty content gives an empty block). The
 * section always ends with a newline, so sections can be concatenated directly. Pure
 * function; never throws.
 */
export function formatFileSection(path: string, content: string): string {
  const fence = '`'.repeat(Math.max(3, longestBacktickRun(content) + 1));
  const body = content === '' || content.endsWith('\n') ? content : content + '\n';
  return `${escapePathForHeader(path)}\n${fence}\n${body}${fence}\n`;
}

/**
 * Escapes the characters of a path that would break a one-line header: `\n` `\r` `\t` as
 * those two-character escapes, other C0 controls, DEL and C1 controls as `\xNN`, and
 * U+2028/U+2029 as `\u2028`/`\u2029`. Every other character (spaces, any script, emoji) is
 * kept. Returns `path` itself when nothing needs escaping. Pure function.
 */
export function escapePathForHeader(path: string): string {
  return path.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (c) => {
    if (c === '\n') return '\\n';
    if (c === '\r') return '\\r';
    if (c === '\t') return '\\t';
    const code = c.charCodeAt(0);
    return code > 0xff ? `\\u${code.toString(16)}` : `\\x${code.toString(16).padStart(2, '0')}`;
  });
}

/** Length, in characters, of the longest run of consecutive backticks in `text` (0 if none). */
export function longestBacktickRun(text: string): number {
  let longest = 0;
  for (const match of text.matchAll(/`+/g)) {
    if (match[0].length > longest) longest = match[0].length;
  }
  return longest;
}
