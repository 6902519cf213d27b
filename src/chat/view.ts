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
import { modelDisplayName } from '../models/resolve';
import type { Settings } from '../config/accessor';
import { webviewHtml } from './html';
import { parseFromWebview, type AnswerStats, type ChatMessage, type ChatProgress, type ChatViewState, type FromWebview, type ToWebview } from './protocol';
import { messageId, ThreadStore } from './threads';

/** The view's id (package.json `contributes.views`). */
export const CHAT_VIEW_ID = 'reposnap.chat';

/** What {@link ChatViewProvider.ask} resolves with. */
export interface ChatAnswer {
  text: string;
  stats?: WireAskStats;
  error?: string;
  cancelled?: boolean;
}

/** Badge stats from the pipeline's stats. */
export function answerStats(s: WireAskStats): AnswerStats {
  return {
    L: s.L, B: s.B, ratio: s.ratio, snap: s.snap, files: s.files, packMs: s.packMs, prefillMs: s.prefillMs,
    prefillTokS: s.prefillTokS, snapMs: s.snapMs, decodeMs: s.decodeMs, decodeTokens: s.decodeTokens,
    decodeTokS: s.decodeTokS, ttftMs: s.ttftMs, cache: s.cache, ...(s.droppedTurns ? { droppedTurns: s.droppedTurns } : {}),
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
  private busy: { threadId: string; messageId: string; controller: AbortController; progress?: ChatProgress } | undefined;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly engine: EngineService,
    private readonly settings: Settings,
  ) {
    this.threads = new ThreadStore(context.workspaceState);
    this.disposables.push(settings.onDidChange((keys) => keys.has('model') && this.postState()));
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
    );
  }

  /** Shows the view (opening its container). */
  async reveal(): Promise<void> {
    await vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
  }

  /**
   * Asks a question in the active thread (the chat input and the `reposnap.ask` command).
   * Resolves when the answer is finished, failed or stopped.
   */
  async ask(question: string): Promise<ChatAnswer> {
    if (this.busy) return { text: '', error: 'RepoSnap is still answering the previous question: stop it first.' };
    const thread = this.threads.active;
    const user: ChatMessage = { id: messageId(), role: 'user', text: question };
    const answer: ChatMessage = { id: messageId(), role: 'assistant', text: '' };
    this.threads.add(thread.id, user);
    this.threads.add(thread.id, answer);
    const controller = new AbortController();
    this.busy = { threadId: thread.id, messageId: answer.id, controller };
    this.postState();
    try {
      const stats = await this.engine.ask({
        threadId: thread.id,
        forkFrom: thread.forkedFrom,
        question,
        source: 'chat',
        signal: controller.signal,
        onEvent: (e) => {
          if (e.kind === 'token') {
            this.threads.appendText(thread.id, answer.id, e.text);
            this.post({ type: 'token', messageId: answer.id, text: e.text });
            return;
          }
          const progress = progressOf(e);
          if (progress && this.busy) {
            this.busy.progress = progress;
            this.post({ type: 'progress', messageId: answer.id, progress });
          }
        },
      });
      const badge = answerStats(stats);
      this.threads.patch(thread.id, answer.id, { stats: badge });
      this.busy = undefined;
      this.post({ type: 'done', messageId: answer.id, stats: badge });
      return { text: answer.text, stats };
    } catch (e) {
      const cancelled = e instanceof AbortError;
      const error = cancelled ? undefined : (e as Error).message;
      this.threads.patch(thread.id, answer.id, cancelled ? { cancelled: true } : { error });
      this.busy = undefined;
      this.post({ type: 'failed', messageId: answer.id, error, cancelled });
      return { text: answer.text, error, cancelled };
    }
  }

  /** Stops the answer being streamed. */
  stop(): void {
    this.busy?.controller.abort();
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
        if (this.busy?.threadId === msg.id) this.stop();
        this.threads.delete(msg.id);
        this.postState();
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
    if (this.busy) s.busy = { messageId: this.busy.messageId, progress: this.busy.progress };
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
    this.stop();
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
