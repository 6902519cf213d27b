/**
 * The "Context" line under each answer of the chat (issue 14, section 4): one collapsible line,
 * "Packed 37 of 164 files (12,480 tokens) · SnapKV kept 1,024 per head (8 %)", that expands to
 * the answer's L → B badge, the files in the prompt sorted by the share of their KV positions
 * SnapKV kept (each a link that opens the file, its tokens and a bar of the share), and the
 * files left out and why.
 *
 * {@link chatContext} bounds what a thread stores per answer (the view's threads survive
 * reloads in `workspaceState`); {@link contextLineHtml} renders the line to escaped HTML. Plain
 * TypeScript: the webview (media/src/chat.ts) runs it, and the tests run it in Node.
 */
import {
  byKeptShare,
  keptText,
  leftOutText,
  packedText,
  percent,
  sectionName,
  statusLabel,
  type ContextFile,
  type ContextFileStatus,
  type ContextReport,
  type ContextSection,
  type ContextSummary,
} from '../pipeline/context-report';
import { badgeText, type AnswerStats } from './protocol';

/** Files in the prompt listed per answer (the highest kept shares); the rest are counted. */
export const MAX_LISTED_IN_PROMPT = 50;
/** Left-out files listed per answer; the rest are counted. */
export const MAX_LISTED_LEFT_OUT = 20;
/** Characters of a left-out file's detail kept. */
export const MAX_DETAIL_CHARS = 120;

/** An answer's context as a thread stores it: the summary and a bounded file list. */
export interface ChatContext {
  summary: ContextSummary;
  /**
   * The files in the prompt, highest kept share first (at most {@link MAX_LISTED_IN_PROMPT}),
   * then the files left out in the packer's order (at most {@link MAX_LISTED_LEFT_OUT}).
   */
  files: ContextFile[];
  /** Files not listed, per status (absent when every file is listed). */
  unlisted?: Partial<Record<ContextFileStatus, number>>;
  /** The prompt's sections that are not files (the ranked packing's file tree and repository map); absent when none. */
  sections?: ContextSection[];
}

/**
 * The bounded copy of a context report that goes to the webview and into the thread: the first
 * `maxInPrompt` files by kept share, the first `maxLeftOut` left-out files (details cut to
 * {@link MAX_DETAIL_CHARS}), and the count of the others per status.
 */
export function chatContext(report: ContextReport, maxInPrompt = MAX_LISTED_IN_PROMPT, maxLeftOut = MAX_LISTED_LEFT_OUT): ChatContext {
  const inPrompt = byKeptShare(report.files);
  const leftOut = report.files.filter((f) => f.status === 'left-out');
  const files = [...inPrompt.slice(0, maxInPrompt), ...leftOut.slice(0, maxLeftOut)].map((f) =>
    f.detail !== undefined && f.detail.length > MAX_DETAIL_CHARS ? { ...f, detail: `${f.detail.slice(0, MAX_DETAIL_CHARS - 1)}…` } : { ...f },
  );
  const unlisted: Partial<Record<ContextFileStatus, number>> = {};
  for (const f of [...inPrompt.slice(maxInPrompt), ...leftOut.slice(maxLeftOut)]) unlisted[f.status] = (unlisted[f.status] ?? 0) + 1;
  const sections = (report.sections ?? []).map((x) => ({ ...x }));
  return { summary: { ...report.summary }, files, ...(Object.keys(unlisted).length > 0 ? { unlisted } : {}), ...(sections.length > 0 ? { sections } : {}) };
}

/** The same context without its file list (kept for older answers of a long thread): every file counted as unlisted. */
export function withoutFiles(c: ChatContext): ChatContext {
  const unlisted: Partial<Record<ContextFileStatus, number>> = { ...c.unlisted };
  for (const f of c.files) unlisted[f.status] = (unlisted[f.status] ?? 0) + 1;
  return { summary: c.summary, files: [], ...(Object.keys(unlisted).length > 0 ? { unlisted } : {}), ...(c.sections ? { sections: c.sections } : {}) };
}

/** The summary's two parts, long and short (the short ones show in a narrow sidebar). */
export function contextParts(stats: AnswerStats, context?: ChatContext): { packed: [string, string]; kept: [string, string] } {
  const n = (x: number) => x.toLocaleString('en-US');
  if (context) {
    const s = context.summary;
    const short = s.attention === 'snapkv' && s.keptRatio !== null ? `kept ${percent(s.keptRatio)}` : s.attention === 'full' ? 'full attention' : 'continued';
    return { packed: [packedText(s), `${n(s.packedFiles)}/${n(s.totalFiles)} files`], kept: [keptText(s), short] };
  }
  // an answer saved before the context report: what its stats say
  const files = `${n(stats.files)} file${stats.files === 1 ? '' : 's'} packed`;
  const snapped = stats.snap && stats.B < stats.L;
  const kept = snapped ? `SnapKV kept ${n(stats.B)} per head (${percent(stats.B / stats.L)})` : `full attention (all ${n(stats.L)} kept)`;
  return { packed: [files, files], kept: [kept, snapped ? `kept ${percent(stats.B / stats.L)}` : 'full attention'] };
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');

/**
 * The Context line of an answer as HTML (every text escaped): a closed `<details class="context">`
 * whose `<summary class="context-line">` reads "Context · Packed … · SnapKV kept …" (short forms
 * in `.narrow` spans for a narrow sidebar), and whose body holds the `.badge` (L → B, times,
 * cache outcome), the files in the prompt as `.context-file` rows (a `.file-link` with
 * `data-path` showing the file's name then its folder, the tokens, a `<meter>` of the kept share
 * and its percentage) followed by the sections that are not files (`.context-section`: file
 * tree, repository map), then the files left out with their reason. `open` renders it expanded.
 */
export function contextLineHtml(stats: AnswerStats, context?: ChatContext, open = false): string {
  const parts = contextParts(stats, context);
  const title = `${parts.packed[0]} · ${parts.kept[0]}`;
  const part = ([wide, narrow]: [string, string]) => `<span class="context-part"><span class="wide">${esc(wide)}</span><span class="narrow">${esc(narrow)}</span></span>`;
  const out = [
    `<details class="context"${open ? ' open' : ''}>`,
    `<summary class="context-line" title="${esc(title)}"><span class="context-title">Context</span>${part(parts.packed)}${part(parts.kept)}</summary>`,
    `<div class="context-body">`,
    `<div class="badge cache-${esc(stats.cache)}">${esc(badgeText(stats))}</div>`,
  ];
  if (context) {
    const inPrompt = context.files.filter((f) => f.status !== 'left-out');
    const leftOut = context.files.filter((f) => f.status === 'left-out');
    const moreIn = Object.entries(context.unlisted ?? {}).reduce((n, [k, v]) => (k === 'left-out' ? n : n + (v ?? 0)), 0);
    const moreOut = context.unlisted?.['left-out'] ?? 0;
    const others = context.sections ?? [];
    if (inPrompt.length + others.length > 0) {
      out.push(`<ul class="context-files" aria-label="Files in the prompt, by kept share">`);
      for (const f of inPrompt) out.push(fileRow(f));
      for (const x of others) out.push(sectionRow(x));
      out.push('</ul>');
    }
    if (moreIn > 0) out.push(`<div class="context-more muted">${esc(moreText(moreIn, inPrompt.length > 0))}</div>`);
    const leftCount = leftOut.length + moreOut;
    if (leftCount > 0) {
      out.push(`<div class="context-heading">Left out (${leftCount.toLocaleString('en-US')})</div>`, `<ul class="context-left">`);
      for (const f of leftOut) out.push(`<li><span class="context-path" title="${esc(f.path)}">${esc(f.path)}</span> <span class="muted">${esc(leftOutText(f))}</span></li>`);
      out.push('</ul>');
      if (moreOut > 0) out.push(`<div class="context-more muted">${esc(moreText(moreOut, leftOut.length > 0))}</div>`);
    }
  }
  out.push('</div>', '</details>');
  return out.join('');
}

/** One file in the prompt: link (file name, then its folder, as VS Code's Quick Open shows them), tokens, share bar, share. */
function fileRow(f: ContextFile): string {
  const share = f.keptShare;
  const slash = f.path.lastIndexOf('/');
  const name = `<span class="context-name">${esc(f.path.slice(slash + 1))}</span>${slash > 0 ? ` <span class="context-dir">${esc(f.path.slice(0, slash))}</span>` : ''}`;
  const label = share === null ? 'kept share not known' : `${percent(share)} of its KV positions kept`;
  const status = f.status === 'full' ? '' : ` <span class="context-status">${esc(statusLabel(f))}</span>`;
  const tokens = f.tokens === null ? 'in the repository map' : `${f.tokens.toLocaleString('en-US')} tokens`;
  return (
    `<li class="context-file" title="${esc(`${f.path} · ${tokens} · ${label}`)}">` +
    `<a href="#" class="file-link context-path" data-path="${esc(f.path)}">${name}${status}</a>` +
    `<span class="context-tokens">${f.tokens === null ? '–' : f.tokens.toLocaleString('en-US')}</span>` +
    shareCells(share) +
    `</li>`
  );
}

/** A section that is not a file (file tree, repository map): its name, tokens, share bar, share. */
function sectionRow(x: ContextSection): string {
  const name = sectionName(x.kind);
  return (
    `<li class="context-file context-section" title="${esc(`the ${name} · ${x.tokens.toLocaleString('en-US')} tokens`)}">` +
    `<span class="context-path context-name">${esc(name)}</span><span class="context-tokens">${x.tokens.toLocaleString('en-US')}</span>` +
    shareCells(x.keptShare) +
    `</li>`
  );
}

/** The share's meter and percentage (a `?` when not known). */
function shareCells(share: number | null): string {
  return share === null
    ? `<span class="context-share muted">?</span>`
    : `<meter class="context-bar" min="0" max="1" value="${share}" aria-label="${esc(`${percent(share)} of its KV positions kept`)}"></meter><span class="context-share">${esc(percent(share))}</span>`;
}

function moreText(n: number, listed: boolean): string {
  const files = `${n.toLocaleString('en-US')} file${n === 1 ? '' : 's'}`;
  return listed ? `and ${n.toLocaleString('en-US')} more (reposnap ask --show-context lists all)` : `${files}, not listed for older answers`;
}
