/**
 * VS Code entry point: wires the services; nothing else. (The chat view, inline explanations
 * and cache statistics arrive with their issues; this registers the ask command over the
 * headless pipeline, run in a child process so that a native crash cannot take the
 * extension host down.)
 */
import * as vscode from 'vscode';
import { registerAskCommand } from './commands/ask';

export function activate(context: vscode.ExtensionContext): void {
  registerAskCommand(context);
}

export function deactivate(): void {}
