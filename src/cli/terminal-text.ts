/**
 * Repository text in terminal output: file names and symlink targets come from the repository
 * and may hold characters a terminal acts on instead of printing (an escape sequence that sets the
 * window title, clears the screen or recolours what follows; a bidirectional override that shows a
 * name reversed). The CLI writes every such string through these functions, so that a hostile
 * repository cannot drive the terminal of whoever packs it.
 */

/**
 * Characters a terminal may act on rather than print: the C0 controls (U+0000–U+001F, ESC among
 * them), DEL (U+007F), the C1 controls (U+0080–U+009F; U+009B is a CSI on some terminals) and the
 * bidirectional embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069).
 */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/gu;
/** {@link UNSAFE} without the global flag, for a stateless `test`. */
const HAS_UNSAFE = new RegExp(UNSAFE.source, 'u');

/** `\uXXXX` for one UTF-16 code unit. */
const uEscape = (c: string): string => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/**
 * `text` with every character of {@link UNSAFE} written as `\uXXXX` (lowercase hex), the rest
 * unchanged. For free text around a path (a left-out file's detail, a notice). Pure.
 */
export function escapeControls(text: string): string {
  return text.replace(UNSAFE, uEscape);
}

/**
 * A path as-is, or in double quotes when it holds whitespace, a double quote, a backslash or a
 * character of {@link UNSAFE}: JSON's escapes (`\n`, `\"`, `\\`, `\u001b`, …) and `\uXXXX` for the
 * C1 controls and bidirectional controls JSON leaves as they are. Pure.
 */
export function quotePath(p: string): string {
  return /[\s"\\]/u.test(p) || HAS_UNSAFE.test(p) ? JSON.stringify(p).replace(UNSAFE, uEscape) : p;
}
