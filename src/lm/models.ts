/**
 * The models "RepoSnap (local)" offers in VS Code's model picker (issue 32, item 2): the
 * configured GGUF file (`reposnap.model`, a file or a downloaded URI) as one
 * `vscode.LanguageModelChatInformation`, with the real context size (the `reposnap.contextSize`
 * setting, else the model's training context at most 8192, the engine's default:
 * src/pipeline/context-size.ts `defaultContextSize`) and a description that says SnapKV applies
 * only to `@reposnap`'s repository prompts. Plain TypeScript.
 */
import path from 'node:path';
import type { ModelMetadata } from '../models/metadata';

/** The provider's vendor id (package.json `contributes.languageModelChatProviders[0].vendor`). */
export const VENDOR = 'reposnap';
/** The provider's name in the picker's "Manage Models" list. */
export const PROVIDER_NAME = 'RepoSnap (local)';

/** The engine's context size when none is set: the training context, at most 8192 (4096 when the GGUF names none). */
export function contextSizeOf(meta: Pick<ModelMetadata, 'contextLength'>, setting: number): number {
  if (setting > 0) return setting;
  const train = meta.contextLength > 0 ? meta.contextLength : 4096;
  return Math.min(train, 8192);
}

/** What the picker shows of one model (`vscode.LanguageModelChatInformation`'s fields). */
export interface LocalModelInfo {
  id: string;
  name: string;
  family: string;
  version: string;
  tooltip: string;
  detail: string;
  maxInputTokens: number;
  maxOutputTokens: number;
  capabilities: { imageInput: false; toolCalling: false };
}

/**
 * The model information of a local GGUF file: id the file's absolute path, name its file name
 * without `.gguf`, family its architecture, input room the context size less the answer's
 * (`maxTokens`), output room `maxTokens`. No tool calling and no images (the engine decodes text).
 */
export function localModelInfo(file: string, meta: Pick<ModelMetadata, 'contextLength' | 'architecture'>, settings: { contextSize: number; maxTokens: number }): LocalModelInfo {
  const contextSize = contextSizeOf(meta, settings.contextSize);
  const maxOutputTokens = Math.min(settings.maxTokens, contextSize);
  return {
    id: file,
    name: path.basename(file).replace(/\.gguf$/i, ''),
    family: meta.architecture,
    version: 'gguf',
    detail: 'local',
    tooltip: `${file}: runs on RepoSnap's llama.cpp engine on this machine, context ${contextSize.toLocaleString('en-US')} tokens. SnapKV compresses the KV cache only for @reposnap's repository prompts; requests from other chats run with full attention.`,
    maxInputTokens: contextSize - maxOutputTokens,
    maxOutputTokens,
    capabilities: { imageInput: false, toolCalling: false },
  };
}
