/**
 * The extension's commands (package.json `contributes.commands`), registered in one place over
 * the services that implement them.
 */
import * as vscode from 'vscode';
import { CacheStore } from '../cache/store';
import type { ChatViewProvider } from '../chat/view';
import type { ExplainController } from '../explain/comments';
import type { EngineService } from '../host/service';
import type { QuestionRecords } from '../stats/records';
import type { StatsPanel } from '../stats/panel';
import { clearCachePrompt, formatBytes } from '../stats/clear-cache';
import { showStatusMenu, STATUS_MENU_COMMAND } from '../stats/status-menu';

/** The services commands act on. */
export interface CommandTargets {
  chat: ChatViewProvider;
  explain: ExplainController;
  engine: EngineService;
  records: QuestionRecords;
  stats: StatsPanel;
}

/**
 * Sets `reposnap.model` where it is set now (the workspace's value when the workspace sets it,
 * so that the change takes effect), else in the user settings.
 */
async function setModel(file: string): Promise<void> {
  const config = vscode.workspace.getConfiguration('reposnap');
  const inspected = config.inspect<string>('model');
  const target = inspected?.workspaceValue !== undefined ? vscode.ConfigurationTarget.Workspace : vscode.ConfigurationTarget.Global;
  await config.update('model', file, target);
}

/** Registers every command in `context.subscriptions`. */
export function registerCommands(context: vscode.ExtensionContext, t: CommandTargets): void {
  const reg = (id: string, fn: (...args: never[]) => unknown) => context.subscriptions.push(vscode.commands.registerCommand(id, fn));

  // With a question argument (tests, other extensions) it resolves with the answer.
  reg('reposnap.ask', async (question?: string) => {
    await t.chat.reveal();
    const q = typeof question === 'string' ? question : await vscode.window.showInputBox({ prompt: 'Ask RepoSnap about this repository' });
    if (!q?.trim()) return undefined;
    return t.chat.ask(q.trim());
  });
  reg('reposnap.newThread', () => t.chat.newThread());
  reg('reposnap.stop', () => t.chat.stop());
  reg('reposnap.explainSelection', () => t.explain.explainSelection());
  reg('reposnap.explainRange', (uri: vscode.Uri, range: vscode.Range, symbol?: string, symbolPath?: string) => t.explain.explain(uri, range, symbol, symbolPath));
  reg('reposnap.explain.continueInChat', (arg: vscode.CommentThread | string) => t.explain.continueInChat(arg));
  reg('reposnap.explain.stop', (arg: vscode.CommentThread) => t.explain.stop(arg));
  reg('reposnap.explain.close', (arg: vscode.CommentThread) => t.explain.close(arg));
  reg('reposnap.showStats', () => t.stats.show());
  reg('reposnap.clearCache', () => clearCache(t));
  reg('reposnap.restartEngine', () => t.engine.restart());
  reg('reposnap.enginePid', () => t.engine.enginePid);
  reg('reposnap.selectModel', async () => {
    const picked = await vscode.window.showOpenDialog({ canSelectMany: false, filters: { 'GGUF model': ['gguf'] }, title: 'Choose a GGUF model for RepoSnap' });
    if (picked?.[0]) await setModel(picked[0].fsPath);
  });
  // a close match of a missing model file, offered by its error card
  reg('reposnap.useModel', async (file?: string) => {
    if (typeof file === 'string' && file.length > 0) await setModel(file);
  });
  reg('reposnap.downloadModel', () => t.engine.downloadModel());
  reg('reposnap.showLog', () => t.engine.showLog());
  reg(STATUS_MENU_COMMAND, () => showStatusMenu());
  reg('reposnap.focusChatInput', () => t.chat.focusInput());
}

/**
 * `RepoSnap: Clear Cache`: says what it deletes (cached KV states by kind, bytes, the folder; the
 * recorded question stats) in a modal and deletes only once confirmed. Resolves with whether
 * anything was cleared.
 */
async function clearCache(t: CommandTargets): Promise<boolean> {
  const folder = t.engine.repository();
  const dir = folder ? await t.engine.cacheDir(folder) : undefined;
  const stats = dir ? CacheStore.open(dir, { create: false }).stats() : { dir: '', entries: [], totalBytes: 0 };
  const prompt = clearCachePrompt(stats, t.records.all().length, folder?.name ?? 'this window');
  if (!prompt) {
    void vscode.window.showInformationMessage('RepoSnap: the cache is already empty.');
    return false;
  }
  const answer = await vscode.window.showWarningMessage(prompt.message, { modal: true, detail: prompt.detail }, prompt.confirm);
  if (answer !== prompt.confirm) return false;
  const bytes = await t.engine.clearCache();
  t.records.clear();
  void vscode.window.showInformationMessage(`RepoSnap: cache cleared (${formatBytes(bytes)} freed; question stats reset).`);
  return true;
}
