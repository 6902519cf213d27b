/**
 * `RepoSnap: Ask About Repository`: asks for a question, runs `reposnap ask` on the first
 * workspace folder in a child process (so a native crash or out-of-memory cannot take the
 * extension host down), and streams the answer into an output channel. Cancellable from the
 * progress notification.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import * as vscode from 'vscode';

/** Registers the command and its output channel in `context.subscriptions`. */
export function registerAskCommand(context: vscode.ExtensionContext): void {
  const channel = vscode.window.createOutputChannel('RepoSnap');
  context.subscriptions.push(channel);
  context.subscriptions.push(
    vscode.commands.registerCommand('reposnap.ask', async (questionArg?: string) => {
      const folder = vscode.workspace.workspaceFolders?.[0];
      if (!folder) {
        void vscode.window.showErrorMessage('RepoSnap: open a folder first.');
        return;
      }
      const config = vscode.workspace.getConfiguration('reposnap');
      const model = config.get<string>('model', '');
      if (!model) {
        void vscode.window.showErrorMessage('RepoSnap: set "reposnap.model" to a GGUF model file.');
        return;
      }
      const question = questionArg ?? (await vscode.window.showInputBox({ prompt: 'Ask about this repository' }));
      if (!question) return;

      channel.show(true);
      channel.appendLine(`> ${question}`);
      const cli = path.join(context.extensionPath, 'dist', 'cli.js');
      const args = [
        cli, 'ask', '--quiet',
        '--repo', folder.uri.fsPath,
        '--model', model,
        '--budget', String(config.get<number>('budget', 1024)),
        '--window', String(config.get<number>('window', 32)),
        question,
      ];
      await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: 'RepoSnap', cancellable: true },
        (progress, token) =>
          new Promise<void>((resolve) => {
            progress.report({ message: 'reading the repository…' });
            const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ELECTRON_RUN_AS_NODE: '1' } });
            token.onCancellationRequested(() => child.kill('SIGINT'));
            child.stdout.setEncoding('utf8');
            child.stderr.setEncoding('utf8');
            child.stdout.on('data', (d: string) => {
              progress.report({ message: 'answering…' });
              channel.append(d);
            });
            child.stderr.on('data', (d: string) => channel.append(d));
            child.on('close', (code) => {
              if (code !== 0 && !token.isCancellationRequested) {
                void vscode.window.showErrorMessage(`RepoSnap: the engine exited with code ${code} (see the RepoSnap output).`);
              }
              resolve();
            });
          }),
      );
    }),
  );
}
