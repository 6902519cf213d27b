/**
 * Errors as the editor shows them: a card with a title, the message worded for the editor (the
 * settings' names, never CLI flags), and the actions that fit the error's class (Select Model
 * File…, Open Settings at the right key, Retry, New Thread, Show Log, …). The chat view renders
 * the card under the failed answer; the inline explanation renders it as Markdown with command
 * links. Plain TypeScript (no `vscode` import): tests check the mapping directly.
 *
 * The classes are recognised by `Error.name`, which survives the engine process's IPC
 * (src/host/protocol.ts `WireError`): ModelResolveError, ModelLoadError, ContextSizeError,
 * ContextOverflowError, QuestionTooLongError, PatternError, SnapRefusedError, SecretRefusedError,
 * StateFileError, EngineCrashedError, NoWorkspaceError, NoModelChosenError.
 */
import path from 'node:path';
import type { ErrorAction, ErrorCard } from './protocol';

/** What {@link errorCard} needs to know about a failure. */
export interface FailureInfo {
  /** The error's class name (`Error.name`). */
  name: string;
  message: string;
  /** Close matches of a missing model file ({@link ModelResolveError.suggestions}), absolute paths. */
  suggestions?: string[];
  /** Display text of the default model's download ("Download Qwen2.5-Coder… (about 1.1 GB, Apache-2.0)"), for NoModelChosenError. */
  downloadLabel?: string;
}

/** CLI flags that have a `reposnap.*` setting, with the words the editor uses instead. */
const FLAG_SETTINGS: Record<string, string> = {
  '--context-size': 'the reposnap.contextSize setting',
  '--max-tokens': 'the reposnap.maxTokens setting',
  '--answer-room': 'the reposnap.maxTokens setting',
  '--budget': 'the reposnap.budget setting',
  '--window': 'the reposnap.window setting',
  '--kernel': 'the reposnap.kernel setting',
  '--pooling': 'the reposnap.pooling setting',
  '--model': 'the reposnap.model setting',
  '--include': 'the reposnap.include setting',
  '--exclude': 'the reposnap.exclude setting',
  '--gpu-layers': 'the reposnap.GPULayers setting',
  '--kv-cache-type': 'the reposnap.KVCacheType setting',
  '--no-snap': 'the reposnap.snap setting',
};

/**
 * `message` worded for the editor: each CLI flag that has a setting (`--context-size`) becomes
 * the setting's name (`the reposnap.contextSize setting`); a clause offering a flag the editor
 * has no setting for (` (or pass --force-context-size)`) is dropped. The pipeline already words
 * its messages so (src/host/engine.ts `SETTING_NAMES`); this is the net under it.
 */
export function editorWording(message: string): string {
  return message
    .replace(/ \((?:or )?pass --force-context-size\)/g, '')
    .replace(/(?<![\w-])--[a-z][a-z-]*/g, (flag) => FLAG_SETTINGS[flag] ?? flag);
}

const openSettings = (setting: string): ErrorAction => ({ kind: 'openSettings', label: `Open Settings (${setting})`, setting });
const RETRY: ErrorAction = { kind: 'retry', label: 'Retry' };
const SHOW_LOG: ErrorAction = { kind: 'showLog', label: 'Show Log' };
const NEW_THREAD: ErrorAction = { kind: 'newThread', label: 'New Thread' };
const SELECT_MODEL: ErrorAction = { kind: 'selectModel', label: 'Select Model File…' };

/**
 * The card of a failed answer: title, text (worded for the editor) and actions, by error class.
 * A ModelResolveError's title and actions follow its message: a malformed model URI (the CLI's
 * message, Open Settings first), a missing or damaged file, no model set, else "The model cannot
 * be used". Unknown classes get "RepoSnap could not answer" with Retry and Show Log.
 */
export function errorCard(f: FailureInfo): ErrorCard {
  const text = editorWording(f.message);
  const card = (title: string, actions: ErrorAction[]): ErrorCard => ({ title, text, actions });
  switch (f.name) {
    case 'NoModelChosenError':
      return card('Choose a model', [
        { kind: 'selectModel', label: 'Choose a GGUF file…' },
        { kind: 'downloadModel', label: f.downloadLabel ?? 'Download the default model' },
      ]);
    case 'ModelResolveError': {
      if (/^Cannot download/i.test(f.message)) return card('The model could not be downloaded', [RETRY, SELECT_MODEL, SHOW_LOG]);
      // a malformed URI (src/models/hub.ts malformedModelUri, the CLI's own message): the setting is what to fix
      if (/^The model URI .* is malformed \(/s.test(f.message)) return card('The model URI is malformed', [openSettings('reposnap.model'), SELECT_MODEL]);
      const use = (f.suggestions ?? []).map((p): ErrorAction => ({ kind: 'useModel', label: `Use ${path.basename(p)}`, path: p }));
      const title = /does not exist|is not a file/.test(f.message)
        ? 'Model file not found'
        : /corrupted|SHA-256/.test(f.message)
          ? 'The model file is damaged'
          : /^No model is set/.test(f.message)
            ? 'No model is set'
            : 'The model cannot be used';
      return card(title, [...use, SELECT_MODEL, openSettings('reposnap.model')]);
    }
    case 'ModelLoadError':
      return card('The model could not be loaded', [SELECT_MODEL, openSettings('reposnap.model'), SHOW_LOG]);
    case 'ContextSizeError':
      return card('The context size does not fit', [openSettings('reposnap.contextSize'), RETRY]);
    case 'ContextOverflowError':
      return card('The prompt does not fit the context', [openSettings('reposnap.contextSize'), openSettings('reposnap.exclude'), NEW_THREAD]);
    case 'QuestionTooLongError':
      return card('The question is too long', [NEW_THREAD, openSettings('reposnap.contextSize')]);
    case 'PatternError': {
      const key = /\bexclude\b/.test(f.message) ? 'reposnap.exclude' : 'reposnap.include';
      return card('A file pattern is invalid', [openSettings(key), RETRY]);
    }
    case 'SnapRefusedError':
      return card('SnapKV cannot compress this model', [openSettings('reposnap.snap'), SHOW_LOG]);
    case 'SecretRefusedError':
      return card('This file holds a secret', [openSettings('reposnap.exclude'), SHOW_LOG]);
    case 'StateFileError':
      return card('The cache could not be read', [RETRY, SHOW_LOG]);
    case 'EngineCrashedError': {
      const memory = /out of memory|SIGKILL/i.test(f.message);
      return card('The engine stopped', memory ? [RETRY, openSettings('reposnap.contextSize'), SHOW_LOG] : [RETRY, SHOW_LOG]);
    }
    case 'NoWorkspaceError':
      return card('No folder is open', [{ kind: 'openFolder', label: 'Open Folder…' }]);
    default:
      return card('RepoSnap could not answer', [RETRY, SHOW_LOG]);
  }
}

/** The card of an answer saved before cards existed (only its message): the generic one. */
export function legacyErrorCard(message: string): ErrorCard {
  return errorCard({ name: 'Error', message });
}

/**
 * The card as Markdown for a comment thread (the inline explanation): bold title, text, then one
 * `command:` link per action that has a command (Retry and New Thread are the chat's; an
 * explanation offers Show Log and the settings instead). `commandOf` gives the command URI.
 */
export function errorCardMarkdown(c: ErrorCard, commandOf: (a: ErrorAction) => string | undefined): string {
  const esc = (s: string) => s.replace(/([\\`*_{}[\]()#+!|<>])/g, '\\$1');
  const links = c.actions.flatMap((a) => {
    const uri = commandOf(a);
    return uri ? [`[${esc(a.label)}](${uri})`] : [];
  });
  return `**${esc(c.title)}**\n\n${esc(c.text)}${links.length > 0 ? `\n\n${links.join(' · ')}` : ''}`;
}

/** Commands an explanation's error card may link to (the comment's `isTrusted.enabledCommands`). */
export const EXPLAIN_CARD_COMMANDS = ['reposnap.selectModel', 'reposnap.useModel', 'reposnap.downloadModel', 'reposnap.showLog', 'workbench.action.openSettings', 'workbench.action.files.openFolder'];

/** A VS Code command and its arguments (the shape of `vscode.Command` without its title). */
export interface ActionCommand {
  command: string;
  arguments?: unknown[];
}

/**
 * The command of a card action that any front end can run, or undefined for a front end's own
 * actions (Retry, New Thread: the webview runs them itself, an explanation is retried from its
 * CodeLens or selection, the chat participant maps them to the Chat view's commands). The one
 * mapping of actions to commands: explanations' `command:` links and `@reposnap`'s
 * `stream.button`s both use it.
 */
export function actionCommand(a: ErrorAction): ActionCommand | undefined {
  switch (a.kind) {
    case 'selectModel':
      return { command: 'reposnap.selectModel' };
    case 'useModel':
      return a.path ? { command: 'reposnap.useModel', arguments: [a.path] } : undefined;
    case 'downloadModel':
      return { command: 'reposnap.downloadModel' };
    case 'showLog':
      return { command: 'reposnap.showLog' };
    case 'openSettings':
      return { command: 'workbench.action.openSettings', arguments: [a.setting ?? 'reposnap'] };
    case 'openFolder':
      return { command: 'workbench.action.files.openFolder' };
    default:
      return undefined;
  }
}

/**
 * The `command:` URI of a card action in an explanation ({@link actionCommand}), or undefined for
 * the chat's own actions (Retry, New Thread).
 */
export function explainActionCommand(a: ErrorAction): string | undefined {
  const c = actionCommand(a);
  return c ? `command:${c.command}${c.arguments ? `?${encodeURIComponent(JSON.stringify(c.arguments))}` : ''}` : undefined;
}
