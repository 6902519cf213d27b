/**
 * The models `npm run models` fetched (scripts/models.mjs, pinned in scripts/models.json): where
 * they are kept and which of them `reposnap ask` uses when no `--model` is given.
 *
 * The default is the first fetched model of {@link ASK_PREFERENCE}: the coding model
 * (Qwen2.5-Coder-1.5B-Instruct) when it was fetched, since it answers questions about code
 * right, else the model the manifest marks `default` (SmolLM2-135M-Instruct, what
 * `npm run models` fetches without `--model`). Gemma 3 270M is a base model without a chat
 * template and is never chosen on its own.
 *
 * A model counts as fetched when its file is in the folder with its pinned size: the fetcher
 * writes `<file>.partial-<pid>` and renames it into place only after its SHA-256 matched, so a
 * file of the right name and size is the fetched one. Its content is hashed later, once, by the
 * cache's model fingerprint (src/engine/state-file.ts), not on every question.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import manifestJson from '../../scripts/models.json';

/** One model of scripts/models.json, the part RepoSnap reads (the parts are the fetcher's). */
export interface PinnedModel {
  aliases?: string[];
  /** Fetched by `npm run models` without `--model`. */
  default: boolean;
  description: string;
  /** The GGUF file name in the models folder. */
  file: string;
  bytes: number;
  sha256: string;
}

/** scripts/models.json: pinned models by id. */
export interface ModelManifest {
  models: Record<string, PinnedModel>;
}

/** The manifest shipped with the sources (bundled into dist/cli.js by esbuild). */
export const MODEL_MANIFEST: ModelManifest = manifestJson;

/** The coding model's id: preferred by `reposnap ask` whenever it was fetched. */
export const CODER_MODEL = 'qwen2.5-coder-1.5b-instruct';

/**
 * Ids in the order `reposnap ask` prefers them: the coding model, then the manifest's `default`
 * models in manifest order. Ids the manifest lacks are dropped.
 */
export function askPreference(manifest: ModelManifest = MODEL_MANIFEST): string[] {
  const ids = [CODER_MODEL, ...Object.keys(manifest.models).filter((id) => manifest.models[id]!.default)];
  return [...new Set(ids)].filter((id) => manifest.models[id] !== undefined);
}

/**
 * The folder `npm run models` fills, by scripts/models.mjs's rule (`modelsDir()` there; the two
 * are checked against each other by test/cli/default-model.test.ts): `$REPOSNAP_MODELS_DIR`,
 * else `$XDG_CACHE_HOME/reposnap/models`, else `~/.cache/reposnap/models`.
 */
export function fetchedModelsDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.REPOSNAP_MODELS_DIR) return path.resolve(env.REPOSNAP_MODELS_DIR);
  return path.join(env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'reposnap', 'models');
}

/** A fetched model: its manifest id and absolute path. */
export interface FetchedModel {
  id: string;
  file: string;
}

/**
 * The model `reposnap ask` uses without `--model`: the first of {@link askPreference} whose file
 * is in `dir` with its pinned size.
 * @param dir the models folder (default {@link fetchedModelsDir}).
 * @returns undefined when none was fetched (see {@link NO_MODEL_MESSAGE}).
 */
export function defaultFetchedModel(dir: string = fetchedModelsDir(), manifest: ModelManifest = MODEL_MANIFEST): FetchedModel | undefined {
  for (const id of askPreference(manifest)) {
    const file = path.join(dir, manifest.models[id]!.file);
    const st = fs.statSync(file, { throwIfNoEntry: false });
    if (st?.isFile() && st.size === manifest.models[id]!.bytes) return { id, file };
  }
  return undefined;
}

/** What `reposnap ask` says, in one line, when no `--model` is given and no model was fetched. */
export const NO_MODEL_MESSAGE = `no model: run 'npm run models -- --model coder' (1.1 GB, once) or pass --model <file.gguf>`;
