/**
 * The extension's face of the engine: one {@link EngineClient} per window, plus what a question
 * needs around it — the settings, the workspace folder, the model resolved (and downloaded
 * with a cancellable progress notification when it is a URI), the engine build for
 * `reposnap.GPU`, the status bar, and the per-question records. The chat view and the inline
 * explanations both ask through {@link EngineService.ask}.
 */
import path from 'node:path';
import * as vscode from 'vscode';
import { folderStoreDir } from '../cache/window-store';
import type { Settings } from '../config/accessor';
import { ENGINE_RESTART_KEYS, MODEL_KEYS, withFilesExclude, type ReposnapSettings } from '../config/settings';
import { AbortError } from '../engine/errors';
import { recordedFile } from '../models/checksum';
import { selectEngineBuild, type EngineBuild } from '../models/gpu';
import { malformedModelUri } from '../models/hub';
import { isModelUri, ModelResolveError, modelDisplayName, resolveModel, type DownloadProgress } from '../models/resolve';
import { AnswerQueue } from '../chat/queue';
import { DEFAULT_MODEL_DOWNLOAD, formatSize, modelChoice, modelSetByUser, NoModelChosenError, type ModelChoice } from '../chat/welcome';
import type { QuestionRecords } from '../stats/records';
import type { StatusBar } from '../stats/status';
import type { QuotedFile } from '../context/quoted';
import { EngineClient, EngineCrashedError } from './client';
import type { WireAskEvent, WireAskStats } from './protocol';
import { RecentSaves } from './recent-files';
import { askParams, completeParams } from './request';
import type { CompleteParams } from './protocol';
import type { CompleteStats } from '../pipeline/complete';

/** One question from a feature. */
export interface ServiceAsk {
  threadId: string;
  /** The thread whose turns a new thread starts from (an explanation continued in chat). */
  forkFrom?: string;
  question: string;
  source: 'chat' | 'explain';
  /** The file whose code the question quotes (an explanation): refused when the packer would leave it out for its secrets. */
  quoted?: QuotedFile;
  signal?: AbortSignal;
  onEvent?: (e: WireAskEvent) => void;
  /** Called once when the question has to wait for another answer to end (one answer at a time). */
  onWait?: () => void;
  /** Progress of the model's download (and checksum) while the question waits for it. */
  onDownload?: (p: DownloadProgress) => void;
}

/** A question was asked with no workspace folder open. */
export class NoWorkspaceError extends Error {
  constructor() {
    super('Open a folder first: RepoSnap answers questions about the workspace folder.');
    this.name = 'NoWorkspaceError';
  }
}

/** `globalState` key: the model URI whose download the user confirmed. */
const DOWNLOAD_CONFIRMED_KEY = 'reposnap.downloadConfirmed';

/** Engine, model and status of one window. */
export class EngineService implements vscode.Disposable {
  private readonly client: EngineClient;
  private build: EngineBuild | undefined;
  /** The engine choice and notes of the GPU notice last shown (it is shown once for each). */
  private gpuNoticeShown: string | undefined;
  private readonly resolved = new Map<string, string>();
  /** Questions being answered (the file watcher's refresh waits for none). */
  private busy = 0;
  private readonly disposables: vscode.Disposable[] = [];
  /** The ranked packing's `recentFiles`: files saved in this window, not open tabs (a tab change must not invalidate the cached prefix). */
  private readonly recentSaves = new RecentSaves();
  private resolving: Promise<string> | undefined;
  /** Each folder's cache store folder, once the window's old store for it is adopted (by folder path). */
  private readonly storeDirs = new Map<string, Promise<string>>();
  /** Who follows the model download in progress (the questions waiting for it). */
  private readonly downloadListeners = new Set<(p: DownloadProgress) => void>();
  /** One answer at a time, in the order asked (chat threads and explanations). */
  private readonly queue = new AnswerQueue();
  private nextKey = 1;
  private readonly choiceChanged = new vscode.EventEmitter<ModelChoice>();
  /** Fires when {@link modelChoice} may have changed (setting changed, download confirmed or done). */
  readonly onDidChangeModelChoice = this.choiceChanged.event;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly settings: Settings,
    private readonly status: StatusBar,
    private readonly records: QuestionRecords,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.client = new EngineClient({
      hostScript: path.join(context.extensionPath, 'dist', 'host.js'),
      env: () => ({ ...this.build?.env }),
      log: (line) => log.info(`[engine] ${line}`),
      onReady: (engine, notes) => {
        if (engine) log.info(`[engine] ${engine}`);
        for (const note of notes) log.warn(`[engine] ${note}`);
        // one notice per engine choice and reason: a GPU backend asked for (or found) cannot be used
        const key = `${this.build?.backend}:${notes.join('|')}`;
        if (notes.length > 0 && this.build?.backend !== 'cpu' && this.gpuNoticeShown !== key) {
          this.gpuNoticeShown = key;
          void vscode.window.showWarningMessage(`RepoSnap: ${notes.join('; ')}. ${engine?.replace(/^engine: /, 'The engine runs on: ') ?? ''}`, 'Open Settings').then((a) => {
            if (a === 'Open Settings') void vscode.commands.executeCommand('workbench.action.openSettings', 'reposnap.GPU');
          });
        }
      },
      onState: (state, detail) => {
        if (state === 'ready') this.status.setEngineInfo(`Engine process ${this.client.pid} (${this.build?.backend ?? 'cpu'}: ${this.build?.reason ?? ''})`);
        if (state === 'crashed') this.status.set({ state: 'error', message: detail ?? 'the engine crashed' });
        if (state === 'stopped') this.status.setEngineInfo('');
      },
    });
    this.status.setModel(modelDisplayName(settings.get().model));
    this.status.setNoModel(this.modelChoice() === 'none');
    const onSave = vscode.workspace.onDidSaveTextDocument?.((doc) => {
      if (doc.uri.scheme === 'file') this.recentSaves.noteSaved(doc.uri.fsPath);
    });
    if (onSave) this.disposables.push(onSave);
    this.disposables.push(
      this.choiceChanged,
      settings.onDidChange((keys) => {
        if ([...keys].some((k) => MODEL_KEYS.includes(k))) {
          this.status.setModel(modelDisplayName(this.settings.get().model));
          this.status.set({ state: 'idle' });
          this.choiceUpdated();
        }
        if ([...keys].some((k) => ENGINE_RESTART_KEYS.includes(k))) {
          this.build = undefined;
          this.client.restart('the engine restarts for the new reposnap.GPU setting');
        }
      }),
    );
  }

  /** Process id of the engine, when one runs. */
  get enginePid(): number | undefined {
    return this.client.pid;
  }

  /** The workspace folder questions are about. */
  repository(): vscode.WorkspaceFolder | undefined {
    return vscode.workspace.workspaceFolders?.[0];
  }

  /**
   * Answers a question about the workspace. Rejects with `AbortError` when cancelled, with a
   * user-facing message otherwise (the status bar shows the error too).
   */
  async ask(q: ServiceAsk): Promise<WireAskStats> {
    const folder = this.repository();
    if (!folder) throw new NoWorkspaceError();
    if (this.modelChoice() === 'none') throw new NoModelChosenError();
    const release = await this.queue.acquire(String(this.nextKey++), q.signal, q.onWait);
    const settings = this.askSettings(folder);
    this.busy++;
    try {
      if (q.onDownload) this.downloadListeners.add(q.onDownload);
      const modelPath = await this.modelFile(settings, folder.uri.fsPath, q.signal).finally(() => q.onDownload && this.downloadListeners.delete(q.onDownload));
      this.build ??= await selectEngineBuild(settings.GPU, this.context.extensionPath);
      this.status.set({ state: 'packing' });
      const stats = await this.client.ask(
        askParams(settings, {
          threadId: q.threadId,
          forkFrom: q.forkFrom,
          repo: folder.uri.fsPath,
          question: q.question,
          modelPath,
          cacheDir: await this.cacheDir(folder),
          recentFiles: this.recentSaves.recentIn(folder.uri.fsPath),
          ...(q.quoted !== undefined ? { quoted: q.quoted } : {}),
        }),
        {
          signal: q.signal,
          onEvent: (e) => {
            this.onProgress(e);
            q.onEvent?.(e);
          },
        },
      );
      this.records.add(q.source, path.basename(modelPath), q.question, stats);
      this.status.set({ state: 'ready' });
      return stats;
    } catch (e) {
      if (e instanceof AbortError || q.signal?.aborted) {
        // "ready" only with a model at hand: a cancelled download leaves none
        this.status.set({ state: this.resolved.has(settings.model) ? 'ready' : 'idle' });
        throw new AbortError();
      }
      const message = (e as Error).message;
      this.log.error(message);
      this.status.set({ state: 'error', message });
      if (e instanceof EngineCrashedError) void vscode.window.showErrorMessage(message);
      throw e;
    } finally {
      this.busy--;
      release();
    }
  }

  /**
   * A plain chat completion on the configured model (the Language Model Chat Provider's requests):
   * waits its turn like a question (one answer at a time), resolves the model (downloading a URI
   * as a question would), then streams `token` events. Rejects with `AbortError` when cancelled.
   */
  async complete(messages: CompleteParams['messages'], opts: { maxTokens?: number; signal?: AbortSignal; onEvent?: (e: WireAskEvent) => void } = {}): Promise<CompleteStats> {
    if (this.modelChoice() === 'none') throw new NoModelChosenError();
    const release = await this.queue.acquire(String(this.nextKey++), opts.signal);
    const settings = this.settings.get();
    this.busy++;
    try {
      const modelPath = await this.modelFile(settings, this.repository()?.uri.fsPath, opts.signal);
      this.build ??= await selectEngineBuild(settings.GPU, this.context.extensionPath);
      return await this.client.complete(completeParams(settings, modelPath, messages, opts.maxTokens), { signal: opts.signal, onEvent: opts.onEvent });
    } catch (e) {
      if (e instanceof AbortError || opts.signal?.aborted) throw new AbortError();
      this.log.error((e as Error).message);
      throw e;
    } finally {
      this.busy--;
      release();
    }
  }

  /**
   * Token counts of `texts` with the configured model's own tokenizer (in the engine process,
   * which loads the model when it has not yet), and its training context [tokens]. A model URI
   * not downloaded yet is not downloaded for a count: `undefined` then.
   */
  async countTokens(texts: string[]): Promise<{ counts: number[]; trainContext: number } | undefined> {
    const settings = this.settings.get();
    const file = await this.localModelFile();
    if (!file) return undefined;
    this.build ??= await selectEngineBuild(settings.GPU, this.context.extensionPath);
    return this.client.countTokens(completeParams(settings, file, []).model, texts);
  }

  /**
   * The configured model's local GGUF file without downloading anything: a path that exists, or a
   * model URI downloaded before; undefined otherwise (no model chosen, a URI not downloaded yet, a
   * missing file).
   */
  async localModelFile(): Promise<string | undefined> {
    if (this.modelChoice() === 'none') return undefined;
    const settings = this.settings.get();
    const known = this.resolved.get(settings.model);
    if (known) return known;
    if (isModelUri(settings.model)) return recordedFile(this.modelDirectory(), settings.model);
    try {
      return await this.modelFile(settings, this.repository()?.uri.fsPath);
    } catch {
      return undefined;
    }
  }

  /** Where downloads of model URIs go: `reposnap.modelDirectory`, or the extension's global storage. */
  modelDirectory(): string {
    return this.settings.get().modelDirectory || path.join(this.context.globalStorageUri.fsPath, 'models');
  }

  /**
   * Whether a model is chosen (src/chat/welcome.ts): `none` while `reposnap.model` is unset by
   * the user, its default URI not downloaded and its download not confirmed.
   */
  modelChoice(): ModelChoice {
    const spec = this.settings.get().model;
    const inspected = vscode.workspace.getConfiguration('reposnap').inspect<string>('model');
    const userSet = modelSetByUser(inspected);
    const downloadConfirmed = this.context.globalState.get<string>(DOWNLOAD_CONFIRMED_KEY) === spec;
    const downloaded = isModelUri(spec) && (this.resolved.has(spec) || recordedFile(this.modelDirectory(), spec) !== undefined);
    return modelChoice({ spec, userSet, downloaded, downloadConfirmed });
  }

  /**
   * Asks once (modal) to download the default model, naming its size, licence and folder; true
   * when confirmed now or before. The answer is kept in `globalState`.
   */
  async confirmDownload(): Promise<boolean> {
    const spec = this.settings.get().model;
    if (this.context.globalState.get<string>(DOWNLOAD_CONFIRMED_KEY) === spec) return true;
    const d = spec === DEFAULT_MODEL_DOWNLOAD.uri ? DEFAULT_MODEL_DOWNLOAD : undefined;
    const what = d ? `${d.name} (${formatSize(d.sizeBytes)}, licence ${d.licence})` : modelDisplayName(spec);
    const pick = await vscode.window.showInformationMessage(
      `Download ${what} from Hugging Face?`,
      { modal: true, detail: `It is saved in ${this.modelDirectory()} and used for every workspace. Nothing else leaves this machine.` },
      'Download',
    );
    if (pick !== 'Download') return false;
    await this.context.globalState.update(DOWNLOAD_CONFIRMED_KEY, spec);
    this.choiceUpdated();
    return true;
  }

  /** Confirms (once) and downloads the model URI of `reposnap.model`, with the progress notification; false when declined. */
  async downloadModel(): Promise<boolean> {
    if (!(await this.confirmDownload())) return false;
    const folder = this.repository();
    const settings = this.settings.get();
    try {
      await this.modelFile(settings, folder?.uri.fsPath);
    } catch (e) {
      if (e instanceof AbortError) {
        this.status.set({ state: 'idle' });
        return false;
      }
      const message = (e as Error).message;
      this.log.error(message);
      this.status.set({ state: 'error', message });
      void vscode.window.showErrorMessage(`RepoSnap: ${message}`);
      return false;
    } finally {
      this.choiceUpdated();
    }
    this.status.set({ state: 'idle' });
    return true;
  }

  /** Shows the RepoSnap log (output channel). */
  showLog(): void {
    this.log.show(true);
  }

  private choiceUpdated(): void {
    const choice = this.modelChoice();
    this.status.setNoModel(choice === 'none');
    this.choiceChanged.fire(choice);
  }

  /**
   * Brings the workspace's cached repository prefix up to date (the file watcher's refresh).
   * Does nothing while a question runs, before the first question (no engine yet), or without
   * a local model; never shows an error.
   */
  async prepare(): Promise<void> {
    const folder = this.repository();
    if (!folder || this.busy > 0 || this.client.pid === undefined) return;
    const settings = this.askSettings(folder);
    const modelPath = this.resolved.get(settings.model);
    if (!modelPath) return;
    await this.client.ask(
      askParams(settings, {
        threadId: 'prepare',
        repo: folder.uri.fsPath,
        question: '',
        modelPath,
        cacheDir: await this.cacheDir(folder),
        prepareOnly: true,
        recentFiles: this.recentSaves.recentIn(folder.uri.fsPath),
      }),
    );
  }

  /** The settings a question about `folder` is asked with: `reposnap.*` plus VS Code's `files.exclude` for the folder. */
  private askSettings(folder: vscode.WorkspaceFolder): ReposnapSettings {
    return withFilesExclude(this.settings.get(), vscode.workspace.getConfiguration('files', folder.uri).get('exclude'));
  }

  /**
   * The folder's cache store: one per folder (by its real path) in the CLI's cache folder, shared
   * by every window and the CLI; the first call adopts this window's old store for the folder
   * (under `ExtensionContext.storageUri`, where earlier versions kept it; src/cache/window-store.ts).
   */
  cacheDir(folder: vscode.WorkspaceFolder): Promise<string> {
    const key = folder.uri.fsPath;
    let dir = this.storeDirs.get(key);
    if (!dir) {
      dir = folderStoreDir(key, { windowStorageDir: this.context.storageUri?.fsPath, onWarning: (m) => this.log.warn(`[cache] ${m}`) });
      this.storeDirs.set(key, dir);
    }
    return dir;
  }

  /** Asks the engine to empty the workspace's cache store; returns the bytes freed. */
  async clearCache(): Promise<number> {
    const folder = this.repository();
    return this.client.clearCache(folder ? await this.cacheDir(folder) : undefined);
  }

  /** Stops the engine process; the next question starts a new one. */
  restart(): void {
    this.client.restart();
    this.status.set({ state: 'idle' });
  }

  /** The local model file; a URI is downloaded once (progress notification, cancellable). */
  private async modelFile(settings: ReposnapSettings, baseDir: string | undefined, signal?: AbortSignal): Promise<string> {
    const spec = settings.model;
    const known = this.resolved.get(spec);
    if (known) return known;
    const directory = settings.modelDirectory || path.join(this.context.globalStorageUri.fsPath, 'models');
    if (!isModelUri(spec)) {
      const file = await resolveModel(spec, { directory, baseDir });
      this.resolved.set(spec, file);
      return file;
    }
    // a malformed URI is refused with the CLI's message before any download notification shows
    const malformed = malformedModelUri(spec);
    if (malformed !== undefined) throw new ModelResolveError(malformed);
    // a URI downloaded in an earlier session (the models folder's record): no network, no notification
    const file = recordedFile(directory, spec) ?? (await (this.resolving ??= this.download(spec, directory, signal).finally(() => (this.resolving = undefined))));
    this.resolved.set(spec, file);
    return file;
  }

  private download(spec: string, directory: string, signal?: AbortSignal): Promise<string> {
    this.status.set({ state: 'resolving', detail: 'downloading the model' });
    return Promise.resolve(
      vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: `RepoSnap: downloading ${modelDisplayName(spec)}`, cancellable: true },
        async (progress, token) => {
          const controller = new AbortController();
          token.onCancellationRequested(() => controller.abort());
          signal?.addEventListener('abort', () => controller.abort(), { once: true });
          let lastPercent = 0;
          let phase: 'download' | 'verify' = 'download';
          let heard: { percent: number; phase: string } = { percent: -2, phase: '' };
          try {
            return await resolveModel(spec, {
              directory,
              signal: controller.signal,
              onProgress: (p) => {
                // the listeners (chat, explanations) hear of each whole percent, not each chunk
                const whole = p.totalBytes > 0 ? Math.floor((100 * p.downloadedBytes) / p.totalBytes) : -1;
                if (whole !== heard.percent || p.phase !== heard.phase) {
                  heard = { percent: whole, phase: p.phase };
                  for (const listener of this.downloadListeners) listener(p);
                }
                const percent = p.totalBytes > 0 ? (100 * p.downloadedBytes) / p.totalBytes : 0;
                if (p.phase !== phase) lastPercent = 0; // the bar restarts for the checksum pass
                phase = p.phase;
                const verb = p.phase === 'verify' ? 'checking SHA-256' : 'downloading';
                progress.report({
                  increment: percent - lastPercent,
                  message: `${verb} ${percent.toFixed(0)} % · ${(p.downloadedBytes / 2 ** 20).toFixed(0)} / ${(p.totalBytes / 2 ** 20).toFixed(0)} MB · ${(p.bytesPerSecond / 2 ** 20).toFixed(1)} MB/s`,
                });
                lastPercent = percent;
                this.status.set({ state: 'resolving', detail: `${verb} ${percent.toFixed(0)} %` });
              },
              onWarning: (message) => {
                this.log.warn(`[model] ${message}`);
                void vscode.window.showWarningMessage(`RepoSnap: ${message}`);
              },
            });
          } catch (e) {
            if (controller.signal.aborted) throw new AbortError('the model download was cancelled');
            throw e;
          }
        },
      ),
    );
  }

  private onProgress(e: WireAskEvent): void {
    switch (e.kind) {
      case 'model':
        this.status.set(e.state === 'loading' ? { state: 'loading' } : { state: 'packing' });
        break;
      case 'pack':
        this.status.set({ state: 'packing', percent: e.phase === 'read' && e.total ? (100 * e.done) / e.total : undefined });
        break;
      case 'prefill':
        this.status.set({ state: 'prefill', percent: (100 * e.done) / Math.max(1, e.total), tokensPerSecond: e.tokensPerSecond });
        break;
      case 'snap':
        this.status.set({ state: 'answering' });
        break;
    }
  }

  /** Stops the engine process and the settings listener. */
  dispose(): void {
    for (const d of this.disposables) d.dispose();
    this.client.dispose();
  }
}
