/**
 * The status bar item: model and engine state (`RepoSnap: stories260K · packing 43 %`), opening
 * the cache stats on click; "RepoSnap: no model" (click: choose a model file) while none is chosen.
 */
import * as vscode from 'vscode';

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

/** The status bar text after the model name. */
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

/** The RepoSnap status bar item. */
export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('reposnap.status', vscode.StatusBarAlignment.Right, 100);
  private model = 'no model';
  private status: EngineStatus = { state: 'idle' };
  private engineInfo = '';
  private noModel = false;

  constructor() {
    this.item.name = 'RepoSnap';
    this.item.command = 'reposnap.showStats';
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
    if (this.noModel && !['resolving', 'error'].includes(this.status.state)) {
      this.item.text = '$(circle-slash) RepoSnap: no model';
      this.item.command = 'reposnap.selectModel';
      const tip = new vscode.MarkdownString(undefined, true);
      tip.appendMarkdown('**RepoSnap** — no model chosen\n\nClick to choose a GGUF model file, or open the RepoSnap chat to download the default model.');
      this.item.tooltip = tip;
      this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.warningBackground');
      return;
    }
    this.item.command = 'reposnap.showStats';
    const busy = ['resolving', 'loading', 'packing', 'prefill', 'answering'].includes(this.status.state);
    const icon = this.status.state === 'error' ? '$(error)' : busy ? '$(loading~spin)' : '$(database)';
    this.item.text = `${icon} RepoSnap: ${this.model} · ${statusText(this.status)}`;
    const tip = new vscode.MarkdownString(undefined, true);
    tip.appendMarkdown(`**RepoSnap** — model \`${this.model}\`, ${statusText(this.status)}\n\n`);
    if (this.status.state === 'prefill') tip.appendMarkdown(`${Math.round(this.status.tokensPerSecond)} tokens/s\n\n`);
    if (this.status.state === 'error') tip.appendText(this.status.message + '\n\n');
    if (this.engineInfo) tip.appendText(this.engineInfo + '\n\n');
    tip.appendMarkdown('Click to show the cache stats.');
    this.item.tooltip = tip;
    this.item.backgroundColor = this.status.state === 'error' ? new vscode.ThemeColor('statusBarItem.errorBackground') : undefined;
  }

  /** Removes the status bar item. */
  dispose(): void {
    this.item.dispose();
  }
}
