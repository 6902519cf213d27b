/**
 * Keeps the cached repository prefix current: file changes in the workspace are debounced, then
 * the engine is asked to restore the prefix, prefill what changed and save it (a prepare-only
 * request), so that the next question is a cache hit instead of paying for the edit. Nothing
 * runs while a question is being answered, or when no model is configured.
 */
import * as vscode from 'vscode';
import { Debouncer } from './debounce';
import type { EngineService } from './service';

/** Watches the workspace and refreshes the cached prefix 3 s after the last change. */
export function registerPrefixWatcher(context: vscode.ExtensionContext, engine: EngineService): void {
  const debouncer = new Debouncer(3000, () => engine.prepare());
  const watcher = vscode.workspace.createFileSystemWatcher('**/*');
  context.subscriptions.push(
    watcher,
    watcher.onDidChange(() => debouncer.poke()),
    watcher.onDidCreate(() => debouncer.poke()),
    watcher.onDidDelete(() => debouncer.poke()),
    { dispose: () => debouncer.dispose() },
  );
}
