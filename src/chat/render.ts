/**
 * Renders an answer's markdown to HTML for the chat view (runs in the webview; plain
 * TypeScript, so tests run it in Node too): markdown-it with raw HTML off (the model's text
 * can never inject markup), code blocks highlighted by highlight.js (class names only; colours
 * come from media/chat.css and the VS Code theme) with a copy button, and file references
 * ({@link findFileReferences}) turned into links carrying `data-path` / `data-line`. Unicode
 * bidirectional controls are shown as markers (`⟨U+202E⟩`, bidi.ts), never applied to the text.
 */
import hljs from 'highlight.js/lib/common';
import MarkdownIt, { type Token } from 'markdown-it';
import { showBidiControls } from './bidi';
import { findFileReferences } from './links';


const md = new MarkdownIt({ html: false, linkify: false, breaks: false, typographer: false });

md.options.highlight = (code: string, lang: string): string => {
  const language = lang && hljs.getLanguage(lang) ? lang : undefined;
  try {
    return language ? hljs.highlight(code, { language, ignoreIllegals: true }).value : md.utils.escapeHtml(code);
  } catch {
    return md.utils.escapeHtml(code);
  }
};

// Fenced and indented code: a frame with a header (language, copy button) around <pre>.
const fence = (tokens: Token[], idx: number): string => {
  const t = tokens[idx]!;
  const lang = t.info.trim().split(/\s+/)[0] ?? '';
  const body = showBidiControls(md.options.highlight!(t.content, lang, ''));
  const label = md.utils.escapeHtml(lang || 'text');
  return (
    `<div class="code-block"><div class="code-head"><span class="code-lang">${label}</span>` +
    `<button class="copy" type="button" title="Copy code" aria-label="Copy code">Copy</button></div>` +
    `<pre><code class="hljs${lang ? ` language-${md.utils.escapeHtml(lang)}` : ''}">${body}</code></pre></div>\n`
  );
};
md.renderer.rules.fence = fence;
md.renderer.rules.code_block = fence;
// text and inline code: bidirectional controls shown as markers, never applied (bidi.ts), as in code blocks
md.renderer.rules.text = (tokens, idx) => showBidiControls(md.utils.escapeHtml(tokens[idx]!.content));
md.renderer.rules.code_inline = (tokens, idx, _options, _env, self) => {
  const t = tokens[idx]!;
  return `<code${self.renderAttrs(t)}>${showBidiControls(md.utils.escapeHtml(t.content))}</code>`;
};

function fileLinkOpen(state: { Token: new (type: string, tag: string, nesting: -1 | 0 | 1) => Token }, ref: { path: string; line?: number; column?: number }): Token {
  const open = new state.Token('link_open', 'a', 1);
  open.attrSet('href', '#');
  open.attrSet('class', 'file-link');
  open.attrSet('data-path', ref.path);
  if (ref.line !== undefined) open.attrSet('data-line', String(ref.line));
  if (ref.column !== undefined) open.attrSet('data-column', String(ref.column));
  open.attrSet('title', `Open ${ref.path}${ref.line !== undefined ? `:${ref.line}` : ''}`);
  return open;
}

// After inline parsing: split text and inline-code tokens that hold file references.
md.core.ruler.push('file_links', (state) => {
  for (const block of state.tokens) {
    if (block.type !== 'inline' || !block.children) continue;
    const out: Token[] = [];
    let inLink = 0;
    for (const t of block.children) {
      if (t.type === 'link_open') inLink++;
      if (t.type === 'link_close') inLink--;
      if (inLink > 0 || (t.type !== 'text' && t.type !== 'code_inline')) {
        out.push(t);
        continue;
      }
      const refs = findFileReferences(t.content);
      if (refs.length === 0) {
        out.push(t);
        continue;
      }
      if (t.type === 'code_inline') {
        // `path:line` in backticks: link the whole code span when it is one reference
        const r = refs[0]!;
        if (refs.length === 1 && r.start === 0 && r.end === t.content.length) {
          out.push(fileLinkOpen(state, r), t, new state.Token('link_close', 'a', -1));
        } else {
          out.push(t);
        }
        continue;
      }
      let at = 0;
      for (const r of refs) {
        if (r.start > at) out.push(textToken(state, t.content.slice(at, r.start)));
        out.push(fileLinkOpen(state, r), textToken(state, t.content.slice(r.start, r.end)), new state.Token('link_close', 'a', -1));
        at = r.end;
      }
      if (at < t.content.length) out.push(textToken(state, t.content.slice(at)));
    }
    block.children = out;
  }
});

function textToken(state: { Token: new (type: string, tag: string, nesting: -1 | 0 | 1) => Token }, content: string): Token {
  const t = new state.Token('text', '', 0);
  t.content = content;
  return t;
}

/**
 * HTML of an answer. While it streams, an unclosed code fence renders as a code block so far
 * (markdown-it closes it at the end of the input).
 */
export function renderMarkdown(text: string): string {
  return md.render(text);
}

/**
 * HTML of a question: Markdown like an answer (code fences, file links), except that each line
 * break the user typed is kept (`<br>`), as they wrote it.
 */
export function renderQuestion(text: string): string {
  md.set({ breaks: true });
  try {
    return md.render(text);
  } finally {
    md.set({ breaks: false });
  }
}
