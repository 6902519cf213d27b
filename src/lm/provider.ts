/**
 * "RepoSnap (local)", a Language Model Chat Provider (issue 32, item 2;
 * `vscode.lm.registerLanguageModelChatProvider`, finalized in VS Code 1.104; package.json
 * `contributes.languageModelChatProviders`). Its models are the configured GGUF file
 * (src/lm/models.ts); `provideTokenCount` counts with the model's own tokenizer in the engine
 * process; `provideLanguageModelChatResponse` runs the messages on RepoSnap's engine as a plain
 * chat completion (src/pipeline/complete.ts: the model's chat template, full attention, nothing
 * packed or cached), one answer at a time with the chat view's questions, cancelled by its token.
 * With it the Chat view has a model when the user is signed out, and other extensions reach the
 * model through `vscode.lm.selectChatModels({ vendor: 'reposnap' })`.
 */
import * as vscode from 'vscode';
import type { WireAskEvent } from '../host/protocol';
import { readModelMetadata } from '../models/metadata';
import type { CompleteStats } from '../pipeline/complete';
import { engineMessages, messageText, type EngineMessage } from './messages';
import { localModelInfo, VENDOR, type LocalModelInfo } from './models';

/** What the provider runs on: the window's engine service (src/host/service.ts). */
export interface ProviderEngine {
  localModelFile(): Promise<string | undefined>;
  countTokens(texts: string[]): Promise<{ counts: number[]; trainContext: number } | undefined>;
  complete(messages: EngineMessage[], opts: { maxTokens?: number; signal?: AbortSignal; onEvent?: (e: WireAskEvent) => void }): Promise<CompleteStats>;
}

/** The provider's settings: `reposnap.contextSize` and `reposnap.maxTokens`. */
export type ProviderSettings = () => { contextSize: number; maxTokens: number };

/** The provider. */
export class RepoSnapModelProvider implements vscode.LanguageModelChatProvider<LocalModelInfo>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  /** Fires when the configured model or its sizes may have changed. */
  readonly onDidChangeLanguageModelChatInformation = this.changed.event;

  constructor(
    private readonly engine: ProviderEngine,
    private readonly settings: ProviderSettings,
  ) {}

  /** The model list changed (a model setting, a download finished). */
  refresh(): void {
    this.changed.fire();
  }

  /** The configured model, when it is a local file (a URI not downloaded yet offers none: nothing is downloaded for a list). */
  async provideLanguageModelChatInformation(): Promise<LocalModelInfo[]> {
    const file = await this.engine.localModelFile();
    if (!file) return [];
    try {
      return [localModelInfo(file, await readModelMetadata(file), this.settings())];
    } catch {
      return []; // not a GGUF llama.cpp can read: the RepoSnap view's card says why
    }
  }

  /** Streams the engine's answer to the messages as text parts; cancelled by `token` (the engine stops within one ubatch). */
  async provideLanguageModelChatResponse(
    model: LocalModelInfo,
    messages: readonly vscode.LanguageModelChatRequestMessage[],
    options: vscode.ProvideLanguageModelChatResponseOptions,
    progress: vscode.Progress<vscode.LanguageModelResponsePart>,
    token: vscode.CancellationToken,
  ): Promise<void> {
    const controller = new AbortController();
    const cancel = token.onCancellationRequested(() => controller.abort());
    try {
      const maxTokens = typeof options.modelOptions?.maxTokens === 'number' ? Math.min(options.modelOptions.maxTokens, model.maxOutputTokens) : undefined;
      await this.engine.complete(engineMessages(messages), {
        signal: controller.signal,
        ...(maxTokens !== undefined ? { maxTokens } : {}),
        onEvent: (e) => {
          if (e.kind === 'token') progress.report(new vscode.LanguageModelTextPart(e.text));
        },
      });
    } finally {
      cancel.dispose();
    }
  }

  /** Tokens of a text or a message's text with the model's own tokenizer (`llama_tokenize` in the engine process). */
  async provideTokenCount(_model: LocalModelInfo, text: string | vscode.LanguageModelChatRequestMessage): Promise<number> {
    const counted = await this.engine.countTokens([messageText(text)]);
    if (!counted) throw new Error('RepoSnap: the model is not on this machine yet: ask @reposnap once to download it.');
    return counted.counts[0]!;
  }

  /** Drops the change event. */
  dispose(): void {
    this.changed.dispose();
  }
}

/** Registers the provider under {@link VENDOR}; the caller checks that the API exists (src/chat/api-presence.ts). */
export function registerModelProvider(provider: RepoSnapModelProvider): vscode.Disposable {
  return vscode.lm.registerLanguageModelChatProvider(VENDOR, provider);
}
