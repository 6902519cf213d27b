/**
 * VS Code entry point: wires the services; nothing else. The engine runs in a child process
 * (src/host/), so a native crash or an out-of-memory cannot take the extension host down; the
 * extension host never loads the native addon.
 */
import * as vscode from 'vscode';
import { chatApis } from './chat/api-presence';
import { registerParticipant } from './chat/participant/participant';
import { ChatViewProvider, CHAT_VIEW_ID } from './chat/view';
import { registerCommands } from './commands/register';
import { Settings } from './config/accessor';
import { migrateRenamedSettings } from './config/migrate';
import { ExplainCodeLensProvider } from './explain/codelens';
import { ExplainController } from './explain/comments';
import { EngineService } from './host/service';
import { registerPrefixWatcher } from './host/watcher';
import { StatsPanel } from './stats/panel';
import { QuestionRecords } from './stats/records';
import { StatusBar } from './stats/status';
import { registerModelProvider, RepoSnapModelProvider } from './lm/provider';
import { AskRepositoryTool, TOOL_NAME } from './lm/tool';

/** Activation (on the chat view or a RepoSnap command): registers everything, starts nothing. */
export function activate(context: vscode.ExtensionContext): void {
  const log = vscode.window.createOutputChannel('RepoSnap', { log: true });
  void migrateRenamedSettings((line) => log.info(line));
  const settings = new Settings((line) => log.warn(line), context.workspaceState);
  const status = new StatusBar();
  const records = new QuestionRecords(context.workspaceState);
  const engine = new EngineService(context, settings, status, records, log);
  const chat = new ChatViewProvider(context, engine, settings);
  const explain = new ExplainController(engine, chat);
  const lenses = new ExplainCodeLensProvider(settings);
  const stats = new StatsPanel(
    context,
    records,
    () => (engine.enginePid ? `engine process ${engine.enginePid}` : 'engine not running'),
    async () => {
      await vscode.commands.executeCommand('reposnap.clearCache');
    },
  );
  context.subscriptions.push(
    log,
    settings,
    status,
    engine,
    chat,
    explain,
    lenses,
    stats,
    vscode.window.registerWebviewViewProvider(CHAT_VIEW_ID, chat),
    vscode.languages.registerCodeLensProvider({ scheme: 'file' }, lenses),
  );
  registerCommands(context, { chat, explain, engine, records, stats });
  // VS Code's own Chat view, where the host has its APIs (src/chat/api-presence.ts); the webview above always
  const apis = chatApis(vscode);
  log.info(`chat APIs: participant ${apis.participant}, model provider ${apis.modelProvider}, tools ${apis.tools}`);
  if (apis.participant) context.subscriptions.push(registerParticipant(context, { chat, records: () => records.all(), root: () => engine.repository()?.uri.fsPath }));
  if (apis.modelProvider) {
    const provider = new RepoSnapModelProvider(engine, () => settings.get());
    context.subscriptions.push(
      provider,
      registerModelProvider(provider),
      engine.onDidChangeModelChoice(() => provider.refresh()),
      settings.onDidChange((keys) => (['model', 'contextSize', 'maxTokens'] as const).some((k) => keys.has(k)) && provider.refresh()),
    );
  }
  if (apis.tools) context.subscriptions.push(vscode.lm.registerTool(TOOL_NAME, new AskRepositoryTool(engine)));
  registerPrefixWatcher(context, engine);
}

/** Nothing to do: every service is in `context.subscriptions`. */
export function deactivate(): void {}
