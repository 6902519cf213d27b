/**
 * The RepoSnap actions a click on the status bar item offers, as a quick pick: Open Chat,
 * Select Model, Cache Stats, Restart Engine, Settings (issue 14, section 5).
 */
import * as vscode from 'vscode';

/** The (palette-hidden) command the status bar item runs. */
export const STATUS_MENU_COMMAND = 'reposnap.statusMenu';

/** The extension's id (`publisher.name` in package.json): the settings editor's `@ext:` filter. */
export const EXTENSION_ID = 'reposnap.reposnap';

/** One action of the menu: a quick pick row and the command it runs. */
export interface StatusMenuAction {
  /** The row's text, with a product icon (`$(comment-discussion) Open Chat`). */
  label: string;
  /** Dimmed text after the label. */
  description: string;
  command: string;
  args?: unknown[];
}

/** The menu's rows, in order. */
export const STATUS_MENU: readonly StatusMenuAction[] = [
  { label: '$(comment-discussion) Open Chat', description: 'ask about the repository', command: 'reposnap.focusChatInput' },
  { label: '$(file) Select Model', description: 'choose a GGUF model file', command: 'reposnap.selectModel' },
  { label: '$(graph) Cache Stats', description: 'questions, cache hits, SnapKV compression', command: 'reposnap.showStats' },
  { label: '$(debug-restart) Restart Engine', description: 'stop the model process; the next question starts a new one', command: 'reposnap.restartEngine' },
  { label: '$(settings-gear) Settings', description: "RepoSnap's settings", command: 'workbench.action.openSettings', args: [`@ext:${EXTENSION_ID}`] },
];

/**
 * Shows the menu and runs the chosen action's command; resolves with that action, or undefined
 * when the quick pick was dismissed.
 */
export async function showStatusMenu(): Promise<StatusMenuAction | undefined> {
  const picked = await vscode.window.showQuickPick(
    STATUS_MENU.map((a) => ({ label: a.label, description: a.description, action: a })),
    { title: 'RepoSnap', placeHolder: 'RepoSnap actions' },
  );
  if (!picked) return undefined;
  await vscode.commands.executeCommand(picked.action.command, ...(picked.action.args ?? []));
  return picked.action;
}
