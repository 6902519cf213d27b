/**
 * Which of VS Code's chat APIs the running host has (issue 32, item 4): the `@reposnap`
 * participant (`vscode.chat.createChatParticipant`, VS Code 1.90), the Language Model Chat
 * Provider (`vscode.lm.registerLanguageModelChatProvider`, finalized in 1.104) and the Language
 * Model Tool (`vscode.lm.registerTool`, 1.95). package.json's `engines.vscode` names 1.104, but a
 * fork or an older host that installs the extension anyway (an engine field lowered, forks
 * without chat) lacks some: each is checked at run time and registered only where present; the
 * webview chat is registered always. Plain TypeScript over the `vscode` namespace's shape.
 */

/** The chat APIs present. */
export interface ChatApis {
  participant: boolean;
  modelProvider: boolean;
  tools: boolean;
}

const fn = (x: unknown, name: string) => typeof x === 'object' && x !== null && typeof (x as Record<string, unknown>)[name] === 'function';

/** The chat APIs of a `vscode` namespace (the module itself, or a test's stand-in). */
export function chatApis(api: { chat?: unknown; lm?: unknown }): ChatApis {
  return {
    participant: fn(api.chat, 'createChatParticipant'),
    modelProvider: fn(api.lm, 'registerLanguageModelChatProvider'),
    tools: fn(api.lm, 'registerTool'),
  };
}
