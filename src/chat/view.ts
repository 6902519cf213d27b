/**
 * The chat view (`reposnap.chat`, a WebviewView in the RepoSnap activity-bar container): threads
 * kept per workspace, questions answered through the {@link EngineService} with progress and
 * streamed tokens, a stop button, file links that open at a line, copy buttons. The webview
 * (media/src/chat.ts) is rebuilt whenever the view is shown again; it asks for the state with
 * `ready` and the extension sends it whole, the streaming answer included.
 */
import path from 'node:path';
import * as vscode from 'vscode';
import { AbortError } from '../engine/errors';
import type { EngineService } from '../host/service';
import type { WireAskEvent, WireAskStats } from '../host/protocol';
import type { QuotedFile } from '../context/quoted';
import { modelDisplayName } from '../models/resolve';
import type { Settings } from '../config/accessor';
import { chatContext } from './context-line';
import { errorCard } from './errors';
import { webviewHtml } from './html';
import {
  downloadProgressOf,
  parseFromWebview,
  WELCOME_CARD_ID,
  type AnswerStats,
  type ChatMessage,
  type ChatProgress,
  type ChatViewState,
  type ErrorAction,
  type ErrorCard,
  type FromWebview,
  type ToWebview,
} from './protocol';
import { messageId, ThreadStore } from './threads';
import type { ThreadTurn } from './participant/history';
import { downloadLabel, welcomeCard } from './welcome';

/** The view's id (package.json `contributes.views`). */
export const CHAT_VIEW_ID = 'reposnap.chat';

/** What {@link ChatViewProvider.ask} resolves with. */
export interface ChatAnswer {
  text: string;
  stats?: WireAskStats;
  error?: string;
  /** The failure as the chat shows it. */
  errorCard?: ErrorCard;
  cancelled?: boolean;
  /** The thread the question was asked in, and its answer's message id. */
  threadId?: string;
  messageId?: string;
}

/**
 * What another front end (the `@reposnap` chat participant, src/chat/participant/) adds to a
 * question it asks through {@link ChatViewProvider.ask}: its own cancellation, a listener of the
 * pipeline's events (progress, tokens) and the file an explanation quotes.
 */
export interface AskObserver {
  /** Aborting it stops the answer as the webview's Stop button does. */
  signal?: AbortSignal;
  /** Every pipeline event, tokens included, as the webview gets it. */
  onEvent?: (e: WireAskEvent) => void;
  /** Called once when the question waits for another answer (one answer at a time). */
  onWait?: () => void;
  /** The file whose code the question quotes (`/explain`): refused when the packer would leave it out for its secrets. */
  quoted?: QuotedFile;
}

/** The progress line of a question that waits for another thread's (or an explanation's) answer. */
export const WAITING_PROGRESS: ChatProgress = { phase: 'model', label: 'Waiting for the other answer to finish…' };

/** The card of a failure thrown by {@link EngineService.ask} (class name, message, close matches of a missing model). */
export function failureCard(e: unknown): ErrorCard {
  const err = e instanceof Error ? e : new Error(String(e));
  const suggestions = (err as { suggestions?: unknown }).suggestions;
  return errorCard({
    name: err.name,
    message: err.message,
    suggestions: Array.isArray(suggestions) ? suggestions.filter((x): x is string => typeof x === 'string') : undefined,
    downloadLabel: downloadLabel(),
  });
}

/** An answer being prepared or streamed in one thread. */
interface ThreadBusy {
  messageId: string;
  controller: AbortController;
  progress?: ChatProgress;
  /** Queued behind another answer. */
  waiting: boolean;
}

/** Badge stats from the pipeline's stats. */
export function answerStats(s: WireAskStats): AnswerStats {
  return {
    L: s.L, B: s.B, ratio: s.ratio, snap: s.snap, files: s.files, packMs: s.packMs, prefillMs: s.prefillMs,
    prefillTokS: s.prefillTokS, snapMs: s.snapMs, decodeMs: s.decodeMs, decodeTokens: s.decodeTokens,
    decodeTokS: s.decodeTokS, ttftMs: s.ttftMs, cache: s.cache, ...(s.droppedTurns ? { droppedTurns: s.droppedTurns } : {}),
    ...(s.swaWindow !== undefined ? { swaCells: s.swaCells ?? 0, swaWindow: s.swaWindow } : {}),
  };
}

/** Progress line of a pipeline event, or undefined for events that are not progress. */
export function progressOf(e: WireAskEvent): ChatProgress | undefined {
  switch (e.kind) {
    case 'model':
      return { phase: 'model', label: e.state === 'loading' ? 'loading the model…' : 'model loaded' };
    case 'pack': {
      const percent = e.phase === 'read' && e.total ? (100 * e.done) / e.total : undefined;
      return { phase: 'pack', percent, label: `packing the repository: ${e.phase} ${e.done}${e.total ? ` / ${e.total}` : ''} files` };
    }
    case 'packed':
      return {
        phase: 'prefill',
        percent: 0,
        label: `packed ${e.files} files (${e.promptTokens.toLocaleString('en-US')} tokens)${e.notices?.length ? ` · ${e.notices.join(' · ')}` : ''}, prefilling…`,
      };
    case 'prefill': {
      const percent = (100 * e.done) / Math.max(1, e.total);
      return { phase: 'prefill', percent, tokensPerSecond: e.tokensPerSecond, label: `prefill ${Math.round(percent)} % · ${Math.round(e.tokensPerSecond).toLocaleString('en-US')} tok/s` };
    }
    case 'cache':
      return { phase: 'prefill', percent: 0, label: e.reusedTokens > 0 ? `cache ${e.outcome}: ${e.reusedTokens.toLocaleString('en-US')} tokens restored` : `cache ${e.outcome}` };
    case 'snap':
      return { phase: 'snap', label: `SnapKV: L ${e.L} → B ${e.B} in ${e.ms.toFixed(1)} ms` };
    default:
      return undefined;
  }
}

/** The chat view. */
export class ChatViewProvider implements vscode.WebviewViewProvider, vscode.Disposable {
  private view: vscode.WebviewView | undefined;
  private readonly threads: ThreadStore;
  /** Answers in progress, by thread id (one per thread; the engine answers one at a time, in order). */
  private readonly busy = new Map<string, ThreadBusy>();
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly engine: EngineService,
    private readonly settings: Settings,
  ) {
    this.threads = new ThreadStore(context.workspaceState);
    this.disposables.push(
      settings.onDidChange((keys) => keys.has('model') && this.postState()),
      engine.onDidChangeModelChoice(() => this.postState()),
    );
  }

  /** Called by VS Code each time the view's webview is created. */
  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    const media = vscode.Uri.joinPath(this.context.extensionUri, 'media');
    const dist = vscode.Uri.joinPath(this.context.extensionUri, 'dist', 'webview');
    view.webview.options = { enableScripts: true, localResourceRoots: [media, dist] };
    view.webview.html = webviewHtml({
      cspSource: view.webview.cspSource,
      title: 'RepoSnap',
      scriptUri: view.webview.asWebviewUri(vscode.Uri.joinPath(dist, 'chat.js')).toString(),
      styleUris: [view.webview.asWebviewUri(vscode.Uri.joinPath(media, 'chat.css')).toString()],
      body: '<div id="app" aria-live="polite"></div>',
    });
    this.disposables.push(
      view.webview.onDidReceiveMessage((raw) => {
        const msg = parseFromWebview(raw);
        if (msg) void this.onMessage(msg);
      }),
      view.onDidDispose(() => {
        if (this.view === view) this.view = undefined;
      }),
      // opening the view puts the cursor in the chat input
      view.onDidChangeVisibility(() => {
        if (view.visible) this.post({ type: 'focusInput' });
      }),
    );
  }

  /** Shows the view (opening its container). */
  async reveal(): Promise<void> {
    await vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
  }

  /** Shows the view and puts the cursor in its input (`reposnap.focusChatInput`, its keybinding). */
  async focusInput(): Promise<void> {
    await this.reveal();
    this.post({ type: 'focusInput' });
  }

  /**
   * Asks a question in a thread (default the active one: the chat input and the `reposnap.ask`
   * command). While another thread's answer (or an explanation) runs, the question waits for it
   * with "Waiting for the other answer to finish…"; a thread answers one question at a time.
   * Resolves when the answer is finished, failed or stopped. `observer`: another front end's
   * cancellation and event listener (the chat participant); the webview shows the answer too.
   */
  async ask(question: string, threadId = this.threads.active.id, observer: AskObserver = {}): Promise<ChatAnswer> {
    const thread = this.threads.get(threadId);
    if (!thread) return { text: '', error: 'That thread no longer exists.' };
    if (this.busy.has(thread.id)) return { text: '', error: 'This thread is still answering the previous question: stop it first.' };
    const user: ChatMessage = { id: messageId(), role: 'user', text: question };
    const answer: ChatMessage = { id: messageId(), role: 'assistant', text: '' };
    this.threads.add(thread.id, user);
    this.threads.add(thread.id, answer);
    const controller = new AbortController();
    if (observer.signal?.aborted) controller.abort();
    observer.signal?.addEventListener('abort', () => controller.abort(), { once: true });
    const ids = { threadId: thread.id, messageId: answer.id };
    const busy: ThreadBusy = { messageId: answer.id, controller, waiting: false };
    this.busy.set(thread.id, busy);
    this.postState();
    const setProgress = (progress: ChatProgress | undefined) => {
      busy.progress = progress;
      if (progress) this.post({ type: 'progress', messageId: answer.id, progress });
    };
    try {
      const stats = await this.engine.ask({
        threadId: thread.id,
        forkFrom: thread.forkedFrom,
        question,
        source: 'chat',
        signal: controller.signal,
        ...(observer.quoted ? { quoted: observer.quoted } : {}),
        onDownload: (p) => setProgress(downloadProgressOf(p)),
        onWait: () => {
          observer.onWait?.();
          busy.waiting = true;
          setProgress(WAITING_PROGRESS);
          this.postState();
        },
        onEvent: (e) => {
          observer.onEvent?.(e);
          if (busy.waiting) {
            busy.waiting = false;
            busy.progress = undefined;
            this.postState();
          }
          if (e.kind === 'token') {
            this.threads.appendText(thread.id, answer.id, e.text);
            this.post({ type: 'token', messageId: answer.id, text: e.text });
            return;
          }
          const progress = progressOf(e);
          if (progress) setProgress(progress);
        },
      });
      const badge = answerStats(stats);
      const context = stats.context ? chatContext(stats.context) : undefined;
      this.threads.patch(thread.id, answer.id, { stats: badge, ...(context ? { context } : {}) });
      this.busy.delete(thread.id);
      this.post({ type: 'done', messageId: answer.id, stats: badge, ...(context ? { context } : {}) });
      this.postState();
      return { text: answer.text, stats, ...ids };
    } catch (e) {
      const cancelled = e instanceof AbortError;
      const card = cancelled ? undefined : failureCard(e);
      this.threads.patch(thread.id, answer.id, cancelled ? { cancelled: true } : { error: card!.text, errorCard: card });
      this.busy.delete(thread.id);
      this.post({ type: 'failed', messageId: answer.id, error: card?.text, errorCard: card, cancelled });
      this.postState();
      return { text: answer.text, error: card?.text, errorCard: card, cancelled, ...ids };
    }
  }

  /**
   * A RepoSnap thread for another front end (one `@reposnap` chat session): created without
   * becoming the webview's active thread, titled by its first question.
   */
  createThread(): string {
    const id = this.threads.create().id;
    this.postState();
    return id;
  }

  /**
   * The turns of a thread in order (each question and its answer's message id), for checking
   * another front end's history against (src/chat/participant/history.ts); undefined when the
   * thread does not exist.
   */
  threadTurns(threadId: string): ThreadTurn[] | undefined {
    const t = this.threads.get(threadId);
    if (!t) return undefined;
    const turns: ThreadTurn[] = [];
    let question: string | undefined;
    for (const m of t.messages) {
      if (m.role === 'user') question = m.text;
      else if (question !== undefined) {
        turns.push({ question, answerId: m.id });
        question = undefined;
      }
    }
    return turns;
  }

  /** Stops the answer of a thread (default the active one), streaming or waiting for its turn. */
  stop(threadId = this.threads.active.id): void {
    this.busy.get(threadId)?.controller.abort();
  }

  /** Stops every answer (the window closes). */
  stopAll(): void {
    for (const b of this.busy.values()) b.controller.abort();
  }

  /**
   * Asks the question of answer `answerId` (in the active thread) again, as a new question at
   * the end of the thread.
   */
  async retry(answerId: string): Promise<ChatAnswer | undefined> {
    const thread = this.threads.active;
    const i = thread.messages.findIndex((m) => m.id === answerId);
    const question = i > 0 ? thread.messages.slice(0, i).reverse().find((m) => m.role === 'user') : undefined;
    if (!question) return undefined;
    return this.ask(question.text, thread.id);
  }

  /** Runs the button `index` of the card of answer `cardId` (or of the welcome card). */
  async runAction(cardId: string, index: number): Promise<void> {
    const card = cardId === WELCOME_CARD_ID ? this.state().welcome : this.threads.active.messages.find((m) => m.id === cardId)?.errorCard;
    const action = card?.actions[index];
    if (action) await this.perform(action, cardId);
  }

  private async perform(a: ErrorAction, cardId: string): Promise<void> {
    switch (a.kind) {
      case 'selectModel':
        await vscode.commands.executeCommand('reposnap.selectModel');
        break;
      case 'useModel':
        if (a.path) await vscode.commands.executeCommand('reposnap.useModel', a.path);
        break;
      case 'openSettings':
        await vscode.commands.executeCommand('workbench.action.openSettings', a.setting ?? 'reposnap');
        break;
      case 'retry':
        await this.retry(cardId);
        break;
      case 'newThread':
        await this.newThread();
        break;
      case 'showLog':
        this.engine.showLog();
        break;
      case 'openFolder':
        await vscode.commands.executeCommand('workbench.action.files.openFolder');
        break;
      case 'downloadModel':
        if ((await this.engine.downloadModel()) && cardId !== WELCOME_CARD_ID) await this.retry(cardId);
        break;
    }
  }

  /** Deletes a thread after a modal confirmation (stopping its answer); false when declined. */
  async deleteThread(id: string): Promise<boolean> {
    const t = this.threads.get(id);
    if (!t) return false;
    if (t.messages.length > 0) {
      const n = t.messages.filter((m) => m.role === 'user').length;
      const pick = await vscode.window.showWarningMessage(
        `Delete the thread "${t.title}"?`,
        { modal: true, detail: `Its ${n} question${n === 1 ? '' : 's'} and answers are removed from this workspace.` },
        'Delete',
      );
      if (pick !== 'Delete') return false;
    }
    this.stop(id);
    this.threads.delete(id);
    this.postState();
    return true;
  }

  /**
   * Starts a new thread, optionally seeded (an explanation continued in chat, `forkedFrom` its
   * engine thread so that the model sees the explanation too), and shows it.
   */
  async newThread(seed: ChatMessage[] = [], title?: string, forkedFrom?: string): Promise<void> {
    this.threads.newThread(seed, title, forkedFrom);
    this.postState();
    await this.reveal();
    this.post({ type: 'focusInput' });
  }

  private async onMessage(msg: FromWebview): Promise<void> {
    switch (msg.type) {
      case 'ready':
        this.postState();
        this.post({ type: 'focusInput' });
        break;
      case 'ask':
        await this.ask(msg.text);
        break;
      case 'stop':
        this.stop();
        break;
      case 'newThread':
        await this.newThread();
        break;
      case 'selectThread':
        if (this.threads.select(msg.id)) this.postState();
        break;
      case 'deleteThread':
        await this.deleteThread(msg.id);
        break;
      case 'action':
        await this.runAction(msg.messageId, msg.index);
        break;
      case 'retry':
        await this.retry(msg.messageId);
        break;
      case 'openFile':
        await openFileReference(msg.path, msg.line, msg.column);
        break;
      case 'openExternal':
        await vscode.env.openExternal(vscode.Uri.parse(msg.url));
        break;
      case 'copy':
        await vscode.env.clipboard.writeText(msg.text);
        vscode.window.setStatusBarMessage('RepoSnap: copied', 2000);
        break;
    }
  }

  private state(): ChatViewState {
    const s: ChatViewState = {
      threads: this.threads.summaries(),
      active: this.threads.active,
      model: modelDisplayName(this.settings.get().model),
    };
    const busy = this.busy.get(this.threads.active.id);
    if (busy) s.busy = { messageId: busy.messageId, progress: busy.progress, ...(busy.waiting ? { waiting: true } : {}) };
    if (this.engine.modelChoice() === 'none') {
      s.welcome = welcomeCard();
      s.model = 'no model';
    }
    return s;
  }

  private postState(): void {
    this.post({ type: 'state', state: this.state() });
  }

  private post(msg: ToWebview): void {
    void this.view?.webview.postMessage(msg);
  }

  /** Stops a streaming answer and saves the threads. */
  dispose(): void {
    this.stopAll();
    this.threads.save();
    for (const d of this.disposables) d.dispose();
  }
}

/**
 * Opens a file reference from an answer at its line: a path relative to the workspace folder
 * or absolute; otherwise a workspace file whose path ends with it (a quick pick when several do).
 */
export async function openFileReference(ref: string, line?: number, column?: number): Promise<void> {
  const folder = vscode.workspace.workspaceFolders?.[0];
  const candidates: vscode.Uri[] = [];
  const direct = path.isAbsolute(ref) ? vscode.Uri.file(ref) : folder ? vscode.Uri.joinPath(folder.uri, ref.replace(/^\.\//, '')) : undefined;
  if (direct && (await isFile(direct))) candidates.push(direct);
  if (candidates.length === 0 && folder && !path.isAbsolute(ref)) {
    const tail = ref.replace(/^(\.\.?\/)+/, '');
    const found = await vscode.workspace.findFiles(new vscode.RelativePattern(folder, `**/${tail}`), '**/node_modules/**', 20);
    candidates.push(...found);
  }
  let target: vscode.Uri | undefined = candidates[0];
  if (candidates.length > 1) {
    const pick = await vscode.window.showQuickPick(
      candidates.map((u) => ({ label: vscode.workspace.asRelativePath(u), uri: u })),
      { placeHolder: `Several files match ${ref}` },
    );
    target = pick?.uri;
  }
  if (!target) {
    if (candidates.length === 0) void vscode.window.showInformationMessage(`RepoSnap: no file ${ref} in the workspace.`);
    return;
  }
  const pos = new vscode.Position(Math.max(0, (line ?? 1) - 1), Math.max(0, (column ?? 1) - 1));
  await vscode.window.showTextDocument(target, { selection: new vscode.Range(pos, pos), preview: true });
}

async function isFile(uri: vscode.Uri): Promise<boolean> {
  try {
    return (await vscode.workspace.fs.stat(uri)).type === vscode.FileType.File;
  } catch {
    return false;
  }
}
