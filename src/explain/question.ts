/**
 * The question RepoSnap asks to explain a piece of code (plain TypeScript, tested without VS Code).
 */

/** Characters of the selected code quoted in the question; longer selections are cut. */
export const MAX_SNIPPET_CHARS = 6000;

/** A piece of code to explain. */
export interface Snippet {
  /** Path relative to the workspace folder. */
  path: string;
  /** 1-based, inclusive. */
  startLine: number;
  endLine: number;
  /** VS Code language id (`typescript`, …), used as the fence's info string. */
  languageId: string;
  code: string;
  /** The symbol's name when explaining from a CodeLens. */
  symbol?: string;
}

/** The question for a snippet: where it is, the code in a fence, and what to explain. */
export function explainQuestion(s: Snippet): string {
  let code = s.code.replace(/\s+$/, '');
  if (code.length > MAX_SNIPPET_CHARS) code = `${code.slice(0, MAX_SNIPPET_CHARS)}\n… (cut)`;
  const fence = code.includes('```') ? '~~~~' : '```';
  const what = s.symbol ? `\`${s.symbol}\` in ${s.path}` : `this code from ${s.path}`;
  const lines = s.startLine === s.endLine ? `line ${s.startLine}` : `lines ${s.startLine}-${s.endLine}`;
  return `Explain ${what} (${lines}) in the context of the whole repository: what it does, how it is used, and what depends on it.\n\n${fence}${s.languageId}\n${code}\n${fence}`;
}

/**
 * The engine thread of an explanation (`explain:<key>`, key = the explained range). "Continue in
 * chat" starts a chat thread forked from it, so that the follow-up's prompt holds the explanation.
 */
export function explainThreadId(key: string): string {
  return `explain:${key}`;
}
