/**
 * The engine tests' shared fixture: the tiny model (sha256 checked), its float64 reference, the
 * story as a prompt (BOS first) and a short continuation to teacher-force after it.
 */
import { loadModel, type EngineModel } from '../../src/engine/model';
import { LlamaReference } from '../reference/llama-ref';
import { checkTinyModel, STORY } from './models';

/** What {@link loadStory} gives; the caller disposes `model`. */
export interface StoryFixture {
  model: EngineModel;
  ref: LlamaReference;
  /** {@link STORY} tokenized with BOS (~380 tokens). */
  prompt: number[];
  /** ' The dog ran to the park and found a big red ball.' tokenized without BOS. */
  continuation: number[];
}

/** Loads the tiny model and its reference, and tokenizes the story and the continuation. */
export async function loadStory(): Promise<StoryFixture> {
  const file = checkTinyModel();
  const model = await loadModel(file);
  return {
    model,
    ref: LlamaReference.load(file),
    prompt: Array.from(model.tokenize(STORY, { addSpecial: true })),
    continuation: Array.from(model.tokenize(' The dog ran to the park and found a big red ball.')),
  };
}
