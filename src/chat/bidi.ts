/**
 * Unicode bidirectional controls in text a model wrote: which they are, and how the chat view
 * shows them. Invisible, they reorder the text displayed around them (Trojan Source,
 * CVE-2021-42574): a line of code can display other than it reads, in a terminal
 * (src/cli/terminal-text.ts removes them) as in the chat's webview, which applies the Unicode
 * bidirectional algorithm to the HTML it is given. Pure; runs in the webview too.
 */

/**
 * The bidirectional controls, as a regular expression character class body: the embeddings and
 * overrides (U+202A–U+202E), the isolates (U+2066–U+2069) and the marks (U+200E LRM, U+200F RLM,
 * U+061C ALM).
 */
export const BIDI_CONTROLS = '\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069';

const BIDI = new RegExp(`[${BIDI_CONTROLS}]`, 'g');

/** The controls' names, for the marker's tooltip (Unicode's character names). */
const NAMES: Record<string, string> = {
  '\u061c': 'ARABIC LETTER MARK',
  '\u200e': 'LEFT-TO-RIGHT MARK',
  '\u200f': 'RIGHT-TO-LEFT MARK',
  '\u202a': 'LEFT-TO-RIGHT EMBEDDING',
  '\u202b': 'RIGHT-TO-LEFT EMBEDDING',
  '\u202c': 'POP DIRECTIONAL FORMATTING',
  '\u202d': 'LEFT-TO-RIGHT OVERRIDE',
  '\u202e': 'RIGHT-TO-LEFT OVERRIDE',
  '\u2066': 'LEFT-TO-RIGHT ISOLATE',
  '\u2067': 'RIGHT-TO-LEFT ISOLATE',
  '\u2068': 'FIRST STRONG ISOLATE',
  '\u2069': 'POP DIRECTIONAL ISOLATE',
};

/**
 * HTML text (already escaped: a text node's or a highlighted code block's markup) with each
 * bidirectional control replaced by a visible marker that does not act on the text:
 * `<span class="bidi-control" title="U+202E RIGHT-TO-LEFT OVERRIDE">⟨U+202E⟩</span>`. Only the
 * controls change; they never occur inside the markup's tags (markdown-it and highlight.js put
 * text only in text nodes, escaped), so the result is well-formed wherever the input was.
 */
export function showBidiControls(html: string): string {
  return html.replace(BIDI, (c) => {
    const code = `U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`;
    return `<span class="bidi-control" title="${code} ${NAMES[c] ?? 'BIDIRECTIONAL CONTROL'}">⟨${code}⟩</span>`;
  });
}
