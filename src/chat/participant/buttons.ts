/**
 * A failed answer in VS Code's Chat view as the webview shows it (issue 32, item 1): the same
 * card (src/chat/errors.ts `errorCard`: title, text worded for the editor, actions by error
 * class), its title and text as markdown, its actions as `stream.button` commands
 * (`vscode.ChatResponseStream.button`, a `vscode.Command`). Editor-wide actions run the command
 * the explanations' links run (`actionCommand`); the chat's own actions map to the Chat view:
 * Retry asks the same question of `@reposnap` again (`workbench.action.chat.open` with the query),
 * New Thread opens a new chat (`workbench.action.chat.newChat`), which is a new RepoSnap thread.
 * Plain TypeScript: tests check the buttons directly.
 */
import { actionCommand, errorCardMarkdown, type ActionCommand } from '../errors';
import type { ErrorCard } from '../protocol';

/** A button under a failed answer: `vscode.Command`'s fields. */
export interface CardButton extends ActionCommand {
  title: string;
}

/** The Chat view's command that opens it with a query (VS Code's `workbench.action.chat.open`, argument `{ query }`). */
export const CHAT_OPEN_COMMAND = 'workbench.action.chat.open';
/** The Chat view's command that starts a new chat session (`workbench.action.chat.newChat`). */
export const CHAT_NEW_COMMAND = 'workbench.action.chat.newChat';

/**
 * The card's buttons, in the card's order: each action with a command. `retryQuery` is the
 * request as typed (`@reposnap /explain …` included) that Retry sends again; without it Retry is
 * left out.
 */
export function cardButtons(card: ErrorCard, retryQuery?: string): CardButton[] {
  return card.actions.flatMap((a): CardButton[] => {
    if (a.kind === 'retry') return retryQuery ? [{ title: a.label, command: CHAT_OPEN_COMMAND, arguments: [{ query: retryQuery }] }] : [];
    if (a.kind === 'newThread') return [{ title: a.label, command: CHAT_NEW_COMMAND }];
    const c = actionCommand(a);
    return c ? [{ title: a.label, ...c }] : [];
  });
}

/**
 * The card's title and text as markdown, as an explanation shows them (`errorCardMarkdown`:
 * markdown's special characters escaped, `**title**`, a blank line, the text), without links: the
 * actions are buttons here.
 */
export function cardMarkdown(card: ErrorCard): string {
  return errorCardMarkdown(card, () => undefined);
}
