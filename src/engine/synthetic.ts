/**
 * Synthetic llama models for benchmarks and tests: a chosen shape with seeded random weights,
 * written by llama.cpp itself (`llama_model_init_from_user` + `llama_model_save_to_file`), no
 * real tokenizer: a SentencePiece-style vocabulary of dummy pieces with byte fallback, so that
 * tokenizers load (ours and node-llama-cpp's). Weights do not change speed; shapes do.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { loadAddon, type SyntheticShape } from './native';
import { makeFolder } from './state-file';

export type { SyntheticShape };

/** A file name that encodes the shape, so that a cache folder can hold several (a sink table by the first 12 hex digits of its SHA-256). */
export function syntheticName(s: SyntheticShape): string {
  const experts = s.architecture === 'gpt-oss' ? `-x${s.nExpert ?? 4}u${s.nExpertUsed ?? 2}${s.sinkLogit === undefined ? '' : `-sink${s.sinkLogit}`}${s.sinkLogits === undefined ? '' : `-sinks${createHash('sha256').update(s.sinkLogits.join(',')).digest('hex').slice(0, 12)}`}` : '';
  return `synthetic-${s.architecture ?? 'llama'}${s.slidingWindow ? `-swa${s.slidingWindow}` : ''}${s.swaPattern === undefined ? '' : `-p${s.swaPattern}`}${experts}-l${s.nLayer}-e${s.nEmbd}-h${s.nHead}-kv${s.nHeadKv}-ff${s.nFf}-v${s.nVocab}-${s.weightType}-s${s.seed ?? 1}.gguf`;
}

/**
 * Returns the path of a synthetic model of this shape under `dir`, creating it when missing
 * (atomically: a temporary file, then rename).
 */
export async function ensureSyntheticModel(dir: string, shape: SyntheticShape): Promise<string> {
  const file = path.join(dir, syntheticName(shape));
  if (fs.existsSync(file)) return file;
  makeFolder(dir);
  const tmp = `${file}.${process.pid}.tmp`;
  await loadAddon().createSyntheticModel(tmp, shape);
  fs.renameSync(tmp, file);
  return file;
}
