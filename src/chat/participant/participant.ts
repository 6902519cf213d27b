/**
 * `@reposnap` in VS Code's own Chat view (issue 32, item 1; `vscode.chat.createChatParticipant`,
 * package.json `contributes.chatParticipants`). A second front end over the webview chat's own
 * path: every question goes through {@link ChatViewProvider.ask} (the same thread store, engine
 * service, pipeline, progress wording and error cards as the RepoSnap view), and the answer
 * streams as markdown with:
 * - `stream.progress` lines for packing, prefill percent and SnapKV (src/chat/participant/progress.ts);
 * - cancellation: the request's `CancellationToken` aborts the engine's request (within one ubatch);
 * - `stream.reference` for the packed files, highest kept share first, and `stream.anchor` for
 *   the answer's `path:line` places (src/chat/participant/references.ts);
 * - the error card's title and text, its actions as `stream.button`s (src/chat/participant/buttons.ts);
 * - followups (`ChatFollowupProvider`).
 * Slash commands: `/explain` (the active editor's selection, else its cursor's line), `/stats`
 * (the cache stats as markdown), `/new` (a fresh RepoSnap thread). A chat session is one RepoSnap
 * thread, found and checked in `context.history` (src/chat/participant/history.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import type { QuotedFile } from '../../context/quoted';
import { explainQuestion } from '../../explain/question';
import type { QuestionRecord } from '../../stats/records';
import { badgeText } from '../protocol';
import { answerStats, progressOf, WAITING_PROGRESS, type AskObserver, type ChatAnswer } from '../view';
import { cardButtons, cardMarkdown } from './buttons';
import { chooseThread, participantTurns, turnMetadata, type ThreadTurn, type TurnMetadata } from './history';
import { ProgressLines } from './progress';
import { answerPlaces, packedReferences } from './references';
import { statsMarkdown } from './stats-markdown';

/** The participant's id (package.json `contributes.chatParticipants[0].id`). */
export const PARTICIPANT_ID = 'reposnap.reposnap';

/** What the participant asks through: the chat view's thread and pipeline path (src/chat/view.ts). */
export interface ParticipantChat {
  ask(question: string, threadId: string, observer: AskObserver): Promise<ChatAnswer>;
  createThread(): string;
  threadTurns(threadId: string): ThreadTurn[] | undefined;
}

/** What else the participant reads: the recorded question stats (`/stats`) and the workspace folder (references, anchors). */
export interface ParticipantDeps {
  chat: ParticipantChat;
  records: () => readonly QuestionRecord[];
  /** The workspace folder's path, or undefined when none is open. */
  root: () => string | undefined;
}

/** `ChatResult.metadata` of an answer: its thread (history.ts) and the followups offered under it. */
export interface ParticipantMetadata extends TurnMetadata {
  followups?: { prompt: string; label: string; command?: string }[];
}

/** The request as typed (`/command` included), for Retry. */
function typedQuery(request: vscode.ChatRequest): string {
  return `@reposnap ${request.command ? `/${request.command} ` : ''}${request.prompt}`.trim();
}

/** The question of `/explain` and the file it quotes: the active editor's selection, else the cursor's line; undefined without an editor. */
function explainTarget(prompt: string): { question: string; quoted: QuotedFile } | undefined {
  const editor = vscode.window.activeTextEditor;
  if (!editor) return undefined;
  const sel = editor.selection;
  const range = sel.isEmpty ? editor.document.lineAt(sel.active.line).range : new vscode.Range(sel.start, sel.end);
  const rel = vscode.workspace.asRelativePath(editor.document.uri, false);
  const question = explainQuestion({
    path: rel,
    startLine: range.start.line + 1,
    endLine: range.end.line + 1,
    languageId: editor.document.languageId,
    code: editor.document.getText(range),
  });
  return { question: prompt.trim() ? `${question}\n\n${prompt.trim()}` : question, quoted: { path: rel, text: editor.document.getText() } };
}

/** The `@reposnap` request handler and followup provider. */
export class RepoSnapParticipant {
  constructor(private readonly deps: ParticipantDeps) {}

  /** `vscode.ChatRequestHandler`: answers one request; resolves with the answer's {@link ParticipantMetadata}. */
  async handle(request: vscode.ChatRequest, context: vscode.ChatContext, stream: vscode.ChatResponseStream, token: vscode.CancellationToken): Promise<vscode.ChatResult> {
    const turns = participantTurns(context.history, PARTICIPANT_ID);
    if (request.command === 'stats') {
      stream.markdown(statsMarkdown(this.deps.records()));
      const last = [...turns].reverse().find((t) => t.metadata)?.metadata;
      return { metadata: last ? { threadId: last.threadId, command: 'stats' } : {} };
    }
    if (request.command === 'new') {
      const threadId = this.deps.chat.createThread();
      stream.markdown('A new RepoSnap thread starts here: the next question reads the cached repository, and none of the turns above.');
      return { metadata: { threadId, command: 'new' } satisfies ParticipantMetadata };
    }
    let question = request.prompt;
    let quoted: QuotedFile | undefined;
    if (request.command === 'explain') {
      const target = explainTarget(request.prompt);
      if (!target) {
        stream.markdown('Open a file and select the code to explain, then ask `@reposnap /explain` again.');
        return {};
      }
      ({ question, quoted } = target);
    }
    if (!question.trim()) {
      stream.markdown('Ask a question about this repository, e.g. `@reposnap Where is the cache evicted?`');
      return {};
    }
    const choice = chooseThread(turns, (id) => this.deps.chat.threadTurns(id));
    const threadId = choice.kind === 'continue' ? choice.threadId : this.deps.chat.createThread();
    if (choice.kind === 'new' && choice.reason) stream.markdown(`_${choice.reason}_\n\n`);

    const controller = new AbortController();
    const cancel = token.onCancellationRequested(() => controller.abort());
    if (token.isCancellationRequested) controller.abort();
    const lines = new ProgressLines();
    let answer: ChatAnswer;
    try {
      answer = await this.deps.chat.ask(question, threadId, {
        signal: controller.signal,
        ...(quoted ? { quoted } : {}),
        onWait: () => stream.progress(WAITING_PROGRESS.label),
        onEvent: (e) => {
          if (e.kind === 'token') {
            stream.markdown(e.text);
            return;
          }
          const line = lines.next(progressOf(e));
          if (line) stream.progress(line);
        },
      });
    } finally {
      cancel.dispose();
    }
    const metadata: ParticipantMetadata = { threadId, ...(answer.messageId ? { messageId: answer.messageId } : {}), ...(request.command ? { command: request.command } : {}) };
    if (answer.cancelled) return { metadata };
    if (answer.errorCard) {
      stream.markdown(cardMarkdown(answer.errorCard));
      for (const b of cardButtons(answer.errorCard, typedQuery(request))) stream.button(b);
      return { metadata };
    }
    if (answer.error) {
      // refused before it ran (the thread still answers): the view's own sentence
      stream.markdown(answer.error);
      return { metadata };
    }
    this.attach(answer, stream, metadata);
    return { metadata };
  }

  /** References, anchors and the badge under a finished answer; the followups into `metadata`. */
  private attach(answer: ChatAnswer, stream: vscode.ChatResponseStream, metadata: ParticipantMetadata): void {
    const root = this.deps.root();
    const uriOf = (p: string) => (path.isAbsolute(p) ? vscode.Uri.file(p) : root ? vscode.Uri.file(path.join(root, p)) : undefined);
    const refs = packedReferences(answer.stats?.context);
    for (const r of refs) {
      const uri = uriOf(r.path);
      if (uri) stream.reference(uri);
    }
    const places = answerPlaces(answer.text).filter((p) => {
      const uri = uriOf(p.path);
      return uri !== undefined && fs.existsSync(uri.fsPath);
    });
    if (places.length > 0) {
      stream.markdown('\n\n**Places:** ');
      places.forEach((p, i) => {
        if (i > 0) stream.markdown(' · ');
        const uri = uriOf(p.path)!;
        if (p.line === undefined) stream.anchor(uri, p.path);
        else stream.anchor(new vscode.Location(uri, new vscode.Position(p.line - 1, Math.max(0, (p.column ?? 1) - 1))), `${p.path}:${p.line}`);
      });
    }
    if (answer.stats) stream.markdown(`\n\n_${badgeText(answerStats(answer.stats))}_`);
    const followups: NonNullable<ParticipantMetadata['followups']> = [];
    const place = places.find((p) => p.line !== undefined);
    if (place) followups.push({ prompt: `What depends on the code at ${place.path}:${place.line}?`, label: `What depends on ${place.path}:${place.line}?` });
    else if (refs[0]) followups.push({ prompt: `What does ${refs[0].path} do?`, label: `What does ${refs[0].path} do?` });
    followups.push({ prompt: 'the cache stats', label: 'Show the cache stats', command: 'stats' });
    metadata.followups = followups;
  }

  /** `vscode.ChatFollowupProvider.provideFollowups`: the followups the answer's metadata names. */
  provideFollowups(result: vscode.ChatResult): vscode.ChatFollowup[] {
    const m = turnMetadata(result.metadata) as ParticipantMetadata | undefined;
    const list = (result.metadata as ParticipantMetadata | undefined)?.followups;
    return m && Array.isArray(list) ? list.map((f) => ({ prompt: f.prompt, label: f.label, ...(f.command ? { command: f.command } : {}) })) : [];
  }
}

/**
 * Registers `@reposnap` (`vscode.chat.createChatParticipant`) with its icon and followups; the
 * caller checks that the API exists (src/chat/api-presence.ts).
 */
export function registerParticipant(context: vscode.ExtensionContext, deps: ParticipantDeps): vscode.Disposable {
  const participant = new RepoSnapParticipant(deps);
  const p = vscode.chat.createChatParticipant(PARTICIPANT_ID, (request, ctx, stream, token) => participant.handle(request, ctx, stream, token));
  p.iconPath = vscode.Uri.joinPath(context.extensionUri, 'media', 'icon.png');
  p.followupProvider = { provideFollowups: (result) => participant.provideFollowups(result) };
  return p;
}
