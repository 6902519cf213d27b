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
 * `path` is written verbatim on its own line (callers pass the `/`-separated path relative
 * to the repository root). The fence is a run of backticks at least 3 long and longer than
 * the longest run of backticks anywhere in `content`, so the content cannot close it early.
 * A newline is added after `content` when it does not already end with one (an empty
 * content gives an empty block). The section always ends with a newline, so sections can
 * be concatenated directly. Pure function; never throws.
 */
export function formatFileSection(path: string, content: string): string {
  const fence = '`'.repeat(Math.max(3, longestBacktickRun(content) + 1));
  const body = content === '' || content.endsWith('\n') ? content : content + '\n';
  return `${path}\n${fence}\n${body}${fence}\n`;
}

/** Length, in characters, of the longest run of consecutive backticks in `text` (0 if none). */
export function longestBacktickRun(text: string): number {
  let longest = 0;
  for (const match of text.matchAll(/`+/g)) {
    if (match[0].length > longest) longest = match[0].length;
  }
  return longest;
}
