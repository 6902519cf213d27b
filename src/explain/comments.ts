/**
 * Inline explanations: `RepoSnap: Explain Selection` and the "RepoSnap: Explain" CodeLens stream
 * an answer into a comment thread anchored at the first line of the range (Comments API) and
 * scroll the editor so that it shows (src/explain/placement.ts). One thread per explained symbol
 * (or selection): explaining it again reuses the thread. The thread's title bar offers Stop while
 * streaming, and "Continue in chat" once answered (also as a link under the answer), which opens
 * the explanation as a new chat thread.
 */
import { randomUUID } from 'node:crypto';
import * as vscode from 'vscode';
import { errorCardMarkdown, EXPLAIN_CARD_COMMANDS, explainActionCommand } from '../chat/errors';
import { badgeText, downloadProgressOf, type ChatMessage, type ErrorCard } from '../chat/protocol';
import { messageId } from '../chat/threads';
import { answerStats, failureCard, progressOf, WAITING_PROGRESS, type ChatViewProvider } from '../chat/view';
import { AbortError } from '../engine/errors';
import type { QuotedFile } from '../context/quoted';
import type { EngineService } from '../host/service';
import type { WireAskStats } from '../host/protocol';
import { anchorLine, explanationKey, needsScroll } from './placement';
import { explainQuestion, explainThreadId } from './question';

/** The comment controller's id (menus' `commentController ==` clauses). */
export const EXPLAIN_CONTROLLER_ID = 'reposnap.explain';

interface Explanation {
  /** {@link explanationKey}: the symbol (or selection) this thread explains. */
  key: string;
  /** The engine thread of the latest run (a fresh one per run: a re-explanation is not a follow-up). */
  runId: string;
  /** True while an answer streams into the thread. */
  running: boolean;
  thread: vscode.CommentThread;
  question: string;
  /** The explained document (path and whole text): the engine refuses it when the packer would leave it out for its secrets. */
  quoted: QuotedFile;
  title: string;
  text: string;
  stats?: WireAskStats;
  controller: AbortController;
  /** Set when the explanation failed. */
  error?: ErrorCard;
}

/** The one comment of an explanation thread: RepoSnap's answer, read-only. */
class ExplanationComment implements vscode.Comment {
  mode = vscode.CommentMode.Preview;
  author: vscode.CommentAuthorInformation = { name: 'RepoSnap' };
  contextValue = 'reposnap.explanation';
  constructor(public body: vscode.MarkdownString) {}
}

/** Inline explanations in comment threads. */
export class ExplainController implements vscode.Disposable {
  private readonly controller = vscode.comments.createCommentController(EXPLAIN_CONTROLLER_ID, 'RepoSnap');
  private readonly explanations = new Map<string, Explanation>();

  constructor(
    private readonly engine: EngineService,
    private readonly chat: ChatViewProvider,
  ) {
    this.controller.options = { placeHolder: 'RepoSnap explanations are read-only', prompt: 'RepoSnap' };
  }

  /** Explains the active editor's selection (the line under the cursor when nothing is selected). */
  async explainSelection(): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    if (!editor) {
      void vscode.window.showInformationMessage('RepoSnap: open a file and select the code to explain.');
      return;
    }
    const sel = editor.selection;
    const range = sel.isEmpty ? editor.document.lineAt(sel.active.line).range : new vscode.Range(sel.start, sel.end);
    await this.explain(editor.document.uri, range);
  }

  /**
   * Explains `range` of the document at `uri`. A CodeLens passes the symbol's name and its
   * qualified name (`symbolPath`, the key of its thread). The thread is anchored at the range's
   * first line and scrolled into view; a symbol (or selection) already explained reuses its
   * thread: while its answer still streams it is only shown again, otherwise it is answered
   * anew in place. The Comments panel is not opened (package.json sets `comments.openView`'s
   * default to `never`).
   */
  async explain(uri: vscode.Uri, range: vscode.Range, symbol?: string, symbolPath?: string): Promise<void> {
    const doc = await vscode.workspace.openTextDocument(uri);
    const rel = vscode.workspace.asRelativePath(uri, false);
    const question = explainQuestion({
      path: rel,
      startLine: range.start.line + 1,
      endLine: range.end.line + 1,
      languageId: doc.languageId,
      code: doc.getText(range),
      symbol,
    });
    // the whole document, not only the range: a file with a secret anywhere is not explained
    const quoted: QuotedFile = { path: rel, text: doc.getText() };
    const key = explanationKey(uri.toString(), range, symbolPath ?? symbol);
    const anchor = new vscode.Range(range.start, range.start);
    let ex = this.explanations.get(key);
    if (ex?.running) {
      await this.reveal(doc, anchor);
      return;
    }
    if (ex) {
      // an unchanged range is not sent again: each change makes the editor re-render the widget
      if (!ex.thread.range?.isEqual(anchor)) ex.thread.range = anchor;
      ex.question = question;
      ex.quoted = quoted;
      ex.text = '';
      ex.stats = undefined;
      ex.error = undefined;
      ex.controller = new AbortController();
    } else {
      const thread = this.controller.createCommentThread(uri, anchor, []);
      thread.label = symbol ? `RepoSnap: ${symbol}` : 'RepoSnap: explanation';
      thread.canReply = false;
      thread.collapsibleState = vscode.CommentThreadCollapsibleState.Expanded;
      ex = {
        key,
        runId: '',
        running: false,
        thread,
        question,
        quoted,
        title: symbol ? `Explain ${symbol}` : `Explain ${rel}:${range.start.line + 1}`,
        text: '',
        controller: new AbortController(),
      };
      this.explanations.set(key, ex);
    }
    ex.runId = randomUUID();
    ex.running = true;
    ex.thread.contextValue = 'reposnap.explaining';
    ex.thread.collapsibleState = vscode.CommentThreadCollapsibleState.Expanded;
    this.show(ex, '_Reading the repository…_');
    await this.reveal(doc, anchor);
    await this.answer(ex);
  }

  /** Streams the answer to `ex.question` into its thread. */
  private async answer(ex: Explanation): Promise<void> {
    const thread = ex.thread;
    let timer: NodeJS.Timeout | undefined;
    const flush = () => {
      timer = undefined;
      this.show(ex, ex.text);
    };
    try {
      ex.stats = await this.engine.ask({
        threadId: explainThreadId(ex.runId),
        question: ex.question,
        quoted: ex.quoted,
        source: 'explain',
        signal: ex.controller.signal,
        onWait: () => this.show(ex, `_${WAITING_PROGRESS.label}_`),
        onDownload: (p) => this.show(ex, `_${downloadProgressOf(p).label}_`),
        onEvent: (e) => {
          if (e.kind === 'token') {
            ex.text += e.text;
            timer ??= setTimeout(flush, 80);
            return;
          }
          const p = progressOf(e);
          if (p && !ex.text) this.show(ex, `_${p.label}_`);
        },
      });
      if (timer) clearTimeout(timer);
      thread.contextValue = 'reposnap.explained';
      this.show(ex, ex.text, true);
    } catch (e) {
      if (timer) clearTimeout(timer);
      thread.contextValue = 'reposnap.explained';
      if (e instanceof AbortError) {
        this.show(ex, ex.text ? `${ex.text}\n\n_(stopped)_` : '_(stopped before an answer)_', true);
      } else {
        ex.error = failureCard(e);
        this.show(ex, ex.text, true);
      }
    } finally {
      ex.running = false;
    }
  }

  /**
   * Shows the document with the thread's anchor line in the upper half of the editor (the
   * thread opens under it), without taking the focus from where the user is.
   */
  private async reveal(doc: vscode.TextDocument, anchor: vscode.Range): Promise<void> {
    const uri = doc.uri.toString();
    const editor =
      vscode.window.visibleTextEditors.find((e) => e.document.uri.toString() === uri) ??
      (await vscode.window.showTextDocument(doc, { preserveFocus: true, preview: false }));
    if (needsScroll(anchorLine(anchor), editor.visibleRanges[0])) editor.revealRange(anchor, vscode.TextEditorRevealType.AtTop);
  }

  /** Opens an explanation as a new chat thread (question and answer), ready for a follow-up. */
  async continueInChat(arg: vscode.CommentThread | string | undefined): Promise<void> {
    const ex = this.find(arg);
    if (!ex || !ex.text.trim()) return;
    const seed: ChatMessage[] = [
      { id: messageId(), role: 'user', text: ex.question },
      { id: messageId(), role: 'assistant', text: ex.text, ...(ex.stats ? { stats: answerStats(ex.stats) } : { cancelled: true }) },
    ];
    await this.chat.newThread(seed, ex.title, ex.stats ? explainThreadId(ex.runId) : undefined);
  }

  /** Stops a streaming explanation. */
  stop(arg: vscode.CommentThread | string | undefined): void {
    this.find(arg)?.controller.abort();
  }

  /** Removes an explanation's comment thread. */
  close(arg: vscode.CommentThread | string | undefined): void {
    const ex = this.find(arg);
    if (!ex) return;
    ex.controller.abort();
    ex.thread.dispose();
    this.explanations.delete(ex.key);
  }

  private find(arg: vscode.CommentThread | string | undefined): Explanation | undefined {
    if (typeof arg === 'string') return this.explanations.get(arg);
    if (arg) return [...this.explanations.values()].find((e) => e.thread === arg);
    return [...this.explanations.values()].pop();
  }

  private show(ex: Explanation, markdown: string, finished = false): void {
    const body = new vscode.MarkdownString(markdown || (finished ? '' : '_…_'));
    if (finished) {
      body.isTrusted = { enabledCommands: ['reposnap.explain.continueInChat', ...EXPLAIN_CARD_COMMANDS] };
      if (ex.error) body.appendMarkdown(`${markdown ? '\n\n' : ''}${errorCardMarkdown(ex.error, explainActionCommand)}`);
      const args = encodeURIComponent(JSON.stringify([ex.key]));
      const badge = ex.stats ? `\n\n---\n\n${badgeText(answerStats(ex.stats))}` : '';
      // an empty answer (stopped or failed before the first token) has nothing to continue
      const more = ex.text.trim() ? `\n\n[Continue in chat](command:reposnap.explain.continueInChat?${args})` : '';
      body.appendMarkdown(`${badge}${more}`);
    }
    ex.thread.comments = [new ExplanationComment(body)];
  }

  /** Stops every streaming explanation and removes the threads. */
  dispose(): void {
    for (const ex of this.explanations.values()) ex.controller.abort();
    this.controller.dispose();
  }
}
