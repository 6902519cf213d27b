/**
 * The extension's face of the engine: one {@link EngineClient} per window, plus what a question
 * needs around it — the settings, the workspace folder, the model resolved (and downloaded
 * with a cancellable progress notification when it is a URI), the engine build for
 * `reposnap.gpu`, the status bar, and the per-question records. The chat view and the inline
 * explanations both ask through {@link EngineService.ask}.
 */
import path from 'node:path';
import * as vscode from 'vscode';
import { defaultCacheRoot, workspaceCacheDir } from '../cache/location';
import type { Settings } from '../config/accessor';
import { ENGINE_RESTART_KEYS, MODEL_KEYS, withFilesExclude, type ReposnapSettings } from '../config/settings';
import { AbortError } from '../engine/errors';
import { recordedFile } from '../models/checksum';
import { selectEngineBuild, type EngineBuild } from '../models/gpu';
import { isModelUri, modelDisplayName, resolveModel } from '../models/resolve';
import type { QuestionRecords } from '../stats/records';
import type { StatusBar } from '../stats/status';
import { EngineClient, EngineCrashedError } from './client';
import type { WireAskEvent, WireAskStats } from './protocol';

/** One question from a feature. */
export interface ServiceAsk {
  threadId: string;
  /** The thread whose turns a new thread starts from (an explanation continued in chat). */
  forkFrom?: string;
  question: string;
  source: 'chat' | 'explain';
  signal?: AbortSignal;
  onEvent?: (e: WireAskEvent) => void;
}

/** Engine, model and status of one window. */
export class EngineService implements vscode.Disposable {
  private readonly client: EngineClient;
  private build: EngineBuild | undefined;
  private readonly resolved = new Map<string, string>();
  /** Questions being answered (the file watcher's refresh waits for none). */
  private busy = 0;
  private readonly disposables: vscode.Disposable[] = [];
  private resolving: Promise<string> | undefined;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly settings: Settings,
    private readonly status: StatusBar,
    private readonly records: QuestionRecords,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.client = new EngineClient({
      hostScript: path.join(context.extensionPath, 'dist', 'host.js'),
      env: () => ({ REPOSNAP_ADDON: this.build?.addon }),
      log: (line) => log.info(`[engine] ${line}`),
      onState: (state, detail) => {
        if (state === 'ready') this.status.setEngineInfo(`Engine process ${this.client.pid} (${this.build?.backend ?? 'cpu'}: ${this.build?.reason ?? ''})`);
        if (state === 'crashed') this.status.set({ state: 'error', message: detail ?? 'the engine crashed' });
        if (state === 'stopped') this.status.setEngineInfo('');
      },
    });
    this.status.setModel(modelDisplayName(settings.get().model));
    this.disposables.push(
      settings.onDidChange((keys) => {
        if ([...keys].some((k) => MODEL_KEYS.includes(k))) {
          this.status.setModel(modelDisplayName(this.settings.get().model));
          this.status.set({ state: 'idle' });
        }
        if ([...keys].some((k) => ENGINE_RESTART_KEYS.includes(k))) {
          this.build = undefined;
          this.client.restart('the engine restarts for the new reposnap.gpu setting');
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
    if (!folder) throw new Error('Open a folder first: RepoSnap answers questions about the workspace folder.');
    const settings = this.askSettings(folder);
    this.busy++;
    try {
      const modelPath = await this.modelFile(settings, folder, q.signal);
      this.build ??= await selectEngineBuild(settings.gpu, this.context.extensionPath);
      this.status.set({ state: 'packing' });
      const stats = await this.client.ask(
        { threadId: q.threadId, forkFrom: q.forkFrom, repo: folder.uri.fsPath, question: q.question, model: { path: modelPath, gpuLayers: settings.gpuLayers }, settings, cacheDir: this.cacheDir(folder) },
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
        this.status.set({ state: 'ready' });
        throw new AbortError();
      }
      const message = (e as Error).message;
      this.log.error(message);
      this.status.set({ state: 'error', message });
      if (e instanceof EngineCrashedError) void vscode.window.showErrorMessage(message);
      throw e;
    } finally {
      this.busy--;
    }
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
    await this.client.ask({
      threadId: 'prepare',
      repo: folder.uri.fsPath,
      question: '',
      model: { path: modelPath, gpuLayers: settings.gpuLayers },
      settings,
      cacheDir: this.cacheDir(folder),
      prepareOnly: true,
    });
  }

  /** The settings a question about `folder` is asked with: `reposnap.*` plus VS Code's `files.exclude` for the folder. */
  private askSettings(folder: vscode.WorkspaceFolder): ReposnapSettings {
    return withFilesExclude(this.settings.get(), vscode.workspace.getConfiguration('files', folder.uri).get('exclude'));
  }

  /**
   * The workspace's cache store: under `ExtensionContext.storageUri` (per workspace), one folder
   * per repository root; without a workspace storage, the CLI's cache folder (shared with it).
   */
  cacheDir(folder: vscode.WorkspaceFolder): string {
    const root = this.context.storageUri ? path.join(this.context.storageUri.fsPath, 'cache') : defaultCacheRoot();
    return workspaceCacheDir(root, folder.uri.fsPath);
  }

  /** Asks the engine to empty the workspace's cache store; returns the bytes freed. */
  clearCache(): Promise<number> {
    const folder = this.repository();
    return this.client.clearCache(folder ? this.cacheDir(folder) : undefined);
  }

  /** Stops the engine process; the next question starts a new one. */
  restart(): void {
    this.client.restart();
    this.status.set({ state: 'idle' });
  }

  /** The local model file; a URI is downloaded once (progress notification, cancellable). */
  private async modelFile(settings: ReposnapSettings, folder: vscode.WorkspaceFolder, signal?: AbortSignal): Promise<string> {
    const spec = settings.model;
    const known = this.resolved.get(spec);
    if (known) return known;
    const directory = settings.modelDirectory || path.join(this.context.globalStorageUri.fsPath, 'models');
    if (!isModelUri(spec)) {
      const file = await resolveModel(spec, { directory, baseDir: folder.uri.fsPath });
      this.resolved.set(spec, file);
      return file;
    }
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
          try {
            return await resolveModel(spec, {
              directory,
              signal: controller.signal,
              onProgress: (p) => {
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
