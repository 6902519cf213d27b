/**
 * `RepoSnap: Show Cache Stats`: a webview panel with the recorded questions as a table and
 * charts (KV cache size before and after SnapKV, compression ratio, time to first token by
 * cache outcome), drawn by Chart.js bundled into dist/webview/stats.js. Updates live.
 */
import * as vscode from 'vscode';
import { webviewHtml } from '../chat/html';
import { parseFromStatsWebview, type ToStatsWebview } from './protocol';
import type { QuestionRecords } from './records';

/** The stats panel (one at a time). */
export class StatsPanel implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly records: QuestionRecords,
    private readonly engineInfo: () => string,
    private readonly clear: () => Promise<void>,
  ) {
    this.unsubscribe = records.onChange(() => this.post());
  }

  /** Opens the panel, or brings it to the front. */
  show(): void {
    if (this.panel) {
      this.panel.reveal();
      return;
    }
    const media = vscode.Uri.joinPath(this.context.extensionUri, 'media');
    const dist = vscode.Uri.joinPath(this.context.extensionUri, 'dist', 'webview');
    const panel = vscode.window.createWebviewPanel('reposnap.stats', 'RepoSnap Cache Stats', vscode.ViewColumn.Active, {
      enableScripts: true,
      localResourceRoots: [media, dist],
    });
    panel.iconPath = vscode.Uri.joinPath(media, 'reposnap.svg');
    panel.webview.html = webviewHtml({
      cspSource: panel.webview.cspSource,
      title: 'RepoSnap Cache Stats',
      scriptUri: panel.webview.asWebviewUri(vscode.Uri.joinPath(dist, 'stats.js')).toString(),
      styleUris: [panel.webview.asWebviewUri(vscode.Uri.joinPath(media, 'stats.css')).toString()],
      body: '<div id="app"></div>',
    });
    panel.webview.onDidReceiveMessage(async (raw) => {
      const msg = parseFromStatsWebview(raw);
      if (msg?.type === 'ready') this.post();
      if (msg?.type === 'clear') await this.clear();
    });
    panel.onDidDispose(() => (this.panel = undefined));
    this.panel = panel;
  }

  private post(): void {
    if (!this.panel) return;
    const msg: ToStatsWebview = { type: 'records', records: [...this.records.all()], summary: this.records.summary(), engine: this.engineInfo() };
    void this.panel.webview.postMessage(msg);
  }

  /** Closes the panel. */
  dispose(): void {
    this.unsubscribe();
    this.panel?.dispose();
  }
}
