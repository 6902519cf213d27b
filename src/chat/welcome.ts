/**
 * The first run: whether a model is chosen, and the welcome card shown while none is.
 *
 * "No model chosen" means: `reposnap.model` is not set in the user's settings (`modelSetByUser`;
 * a workspace or folder value is a repository's, not the user's choice, and `reposnap.model` is
 * application-scoped, issue 29), so it is still the default `hf:` URI, and that URI has not been downloaded yet (no
 * record in the models folder), and the user has not confirmed its download; or the setting is
 * empty. Then a question would start a ~1 GB download unasked: instead, the chat shows the
 * welcome card ("Choose a GGUF file…" or "Download <model> (size, licence)", the download
 * confirmed once), the status bar says "no model", and a question fails with
 * {@link NoModelChosenError} (a card with the same two actions). A model the user set, even the
 * default URI, counts as chosen. Plain TypeScript: tests check the logic directly.
 */
import { DEFAULT_SETTINGS, type SettingPlaces } from '../config/settings';
import { isModelUri } from '../models/resolve';
import type { ErrorCard } from './protocol';

/** What {@link modelChoice} decides from. */
export interface ModelChoiceInput {
  /** The effective `reposnap.model`. */
  spec: string;
  /** Whether the user set `reposnap.model` in their own settings (`modelSetByUser`). */
  userSet: boolean;
  /** Whether `spec` (a URI) was downloaded before (the models folder's record). */
  downloaded: boolean;
  /** Whether the user confirmed downloading `spec`. */
  downloadConfirmed: boolean;
}

/**
 * Whether the user chose `reposnap.model` themselves: a value in user settings (`inspect`'s
 * `globalValue`). A workspace or folder value comes with the repository (its
 * `.vscode/settings.json`) and is never the user's choice (issue 29, item 3).
 */
export function modelSetByUser(places: SettingPlaces<string> | undefined): boolean {
  return places?.globalValue !== undefined;
}

/** `chosen`: questions go to the model; `none`: the welcome card instead. */
export type ModelChoice = 'chosen' | 'none';

/** Whether a model is chosen (see the module's comment). */
export function modelChoice(i: ModelChoiceInput): ModelChoice {
  const spec = i.spec.trim();
  if (!spec) return 'none';
  if (i.userSet) return 'chosen';
  if (isModelUri(spec) && !i.downloaded && !i.downloadConfirmed) return 'none';
  return 'chosen';
}

/** The default model's download, as the welcome card and the confirmation name it. */
export interface ModelDownloadInfo {
  uri: string;
  /** "Qwen2.5-Coder-1.5B-Instruct Q4_K_M" */
  name: string;
  /** Approximate size of the GGUF file [bytes]. */
  sizeBytes: number;
  /** SPDX id of the model's licence. */
  licence: string;
}

/**
 * The default `reposnap.model` (src/config/settings.ts): Qwen's own GGUF of Qwen2.5-Coder-1.5B-
 * Instruct at Q4_K_M, 1.12 GB (the file listed on huggingface.co/Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF),
 * Apache-2.0 (the model card's licence).
 */
export const DEFAULT_MODEL_DOWNLOAD: Readonly<ModelDownloadInfo> = Object.freeze({
  uri: DEFAULT_SETTINGS.model,
  name: 'Qwen2.5-Coder-1.5B-Instruct Q4_K_M',
  sizeBytes: 1.12e9,
  licence: 'Apache-2.0',
});

/** A size for people: `1.1 GB`, `640 MB` (decimal units, as the hub shows them). */
export function formatSize(bytes: number): string {
  return bytes >= 1e9 ? `${(bytes / 1e9).toFixed(1)} GB` : `${Math.max(1, Math.round(bytes / 1e6))} MB`;
}

/** The download button's text: `Download Qwen2.5-Coder-1.5B-Instruct Q4_K_M (1.1 GB, Apache-2.0)`. */
export function downloadLabel(d: ModelDownloadInfo = DEFAULT_MODEL_DOWNLOAD): string {
  return `Download ${d.name} (${formatSize(d.sizeBytes)}, ${d.licence})`;
}

/** The welcome card: what RepoSnap needs, and the two ways to give it. */
export function welcomeCard(d: ModelDownloadInfo = DEFAULT_MODEL_DOWNLOAD): ErrorCard {
  return {
    title: 'Welcome to RepoSnap: choose a model',
    text:
      'RepoSnap answers questions about this workspace with a local model: nothing leaves the machine. ' +
      'Choose a GGUF model file you have, or download the default model from Hugging Face once.',
    actions: [
      { kind: 'selectModel', label: 'Choose a GGUF file…' },
      { kind: 'downloadModel', label: downloadLabel(d) },
    ],
  };
}

/** A question was asked while no model is chosen. */
export class NoModelChosenError extends Error {
  constructor(message = 'No model is chosen yet: choose a GGUF file, or download the default model.') {
    super(message);
    this.name = 'NoModelChosenError';
  }
}
