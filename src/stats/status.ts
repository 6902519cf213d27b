/**
 * The status bar item: a short icon and the engine's state (`$(sync~spin) RepoSnap: prefill 43 %`,
 * `$(circle-slash) RepoSnap: no model`), the model and engine in its tooltip; a click opens the
 * RepoSnap actions (src/stats/status-menu.ts).
 */
import * as vscode from 'vscode';
import { STATUS_MENU_COMMAND } from './status-menu';

/** What the engine is doing, as the status bar shows it. */
export type EngineStatus =
  | { state: 'idle' }
  | { state: 'resolving'; detail?: string }
  | { state: 'loading' }
  | { state: 'packing'; percent?: number }
  | { state: 'prefill'; percent: number; tokensPerSecond: number }
  | { state: 'answering' }
  | { state: 'ready' }
  | { state: 'error'; message: string };

/** The state as the status bar words it (`prefill 43 %`). */
export function statusText(s: EngineStatus): string {
  switch (s.state) {
    case 'idle':
      return 'idle';
    case 'resolving':
      return s.detail ?? 'resolving the model';
    case 'loading':
      return 'loading';
    case 'packing':
      return s.percent === undefined ? 'packing' : `packing ${Math.round(s.percent)} %`;
    case 'prefill':
      return `prefill ${Math.round(s.percent)} %`;
    case 'answering':
      return 'answering';
    case 'ready':
      return 'ready';
    case 'error':
      return 'error';
  }
}

/** States in which the engine is working (the icon spins). */
const BUSY: ReadonlySet<EngineStatus['state']> = new Set(['resolving', 'loading', 'packing', 'prefill', 'answering']);

/**
 * The status bar item's text: an icon (product icon syntax) and the state, prefixed with
 * "RepoSnap:" so that the item says whose state it is. `noModel` (no model chosen) shows unless
 * a model is being resolved or failed.
 */
export function statusBarText(s: EngineStatus, noModel: boolean): string {
  if (noModel && s.state !== 'resolving' && s.state !== 'error') return '$(circle-slash) RepoSnap: no model';
  const icon = s.state === 'error' ? '$(error)' : BUSY.has(s.state) ? '$(sync~spin)' : '$(database)';
  return `${icon} RepoSnap: ${statusText(s)}`;
}

/** The RepoSnap status bar item. */
export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('reposnap.status', vscode.StatusBarAlignment.Right, 100);
  private model = 'no model';
  private status: EngineStatus = { state: 'idle' };
  private engineInfo = '';
  private noModel = false;

  constructor() {
    this.item.name = 'RepoSnap';
    this.item.command = STATUS_MENU_COMMAND;
    this.render();
    this.item.show();
  }

  /** Sets the model name. */
  setModel(name: string): void {
    this.model = name;
    this.render();
  }

  /**
   * Marks that no model is chosen (src/chat/welcome.ts): the item then reads "RepoSnap: no model"
   * and a click chooses a model file.
   */
  setNoModel(noModel: boolean): void {
    this.noModel = noModel;
    this.render();
  }

  /** Sets the engine state. */
  set(status: EngineStatus): void {
    this.status = status;
    this.render();
  }

  /** Sets the tooltip's engine line (process id, engine build). */
  setEngineInfo(info: string): void {
    this.engineInfo = info;
    this.render();
  }

  private render(): void {
    this.item.text = statusBarText(this.status, this.noModel);
    const noModel = this.item.text.includes('no model');
    const tip = new vscode.MarkdownString(undefined, true);
    if (noModel) {
      tip.appendMarkdown('**RepoSnap** — no model chosen\n\nChoose a GGUF model file, or open the RepoSnap chat to download the default model.\n\n');
    } else {
      tip.appendMarkdown(`**RepoSnap** — model \`${this.model}\`, ${statusText(this.status)}\n\n`);
      if (this.status.state === 'prefill') tip.appendMarkdown(`${Math.round(this.status.tokensPerSecond)} tokens/s\n\n`);
      if (this.status.state === 'error') tip.appendText(this.status.message + '\n\n');
      if (this.engineInfo) tip.appendText(this.engineInfo + '\n\n');
    }
    tip.appendMarkdown('Click for RepoSnap actions: Open Chat, Select Model, Cache Stats, Restart Engine, Settings.');
    this.item.tooltip = tip;
    this.item.accessibilityInformation = { label: noModel ? 'RepoSnap: no model chosen' : `RepoSnap: ${statusText(this.status)}, model ${this.model}`, role: 'button' };
    this.item.backgroundColor = noModel
      ? new vscode.ThemeColor('statusBarItem.warningBackground')
      : this.status.state === 'error'
        ? new vscode.ThemeColor('statusBarItem.errorBackground')
        : undefined;
  }

  /** Removes the status bar item. */
  dispose(): void {
    this.item.dispose();
  }
}
