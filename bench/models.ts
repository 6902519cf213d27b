/**
 * The benchmarks' models.
 *
 * - {@link textSyntheticModel}: a text-capable synthetic llama of 8 layers, n_embd 1024, 16/4
 *   heads (head size 64), n_ff 2816, F16 weights, seeded, with the tiny model's 512-token
 *   tokenizer so that text can be packed and tokenized. Written once under bench/.models by the
 *   tests' GGUF writer.
 * - {@link resolveBenchModel}: what a benchmark's `--model` option names: `tiny` (stories260K),
 *   a real model of scripts/models.json by id or alias (`smollm2`, `coder`, …, fetched by
 *   `npm run models`, SHA-256 checked), or a path to a GGUF file.
 */
import fs from 'node:fs';
import path from 'node:path';
import { checkRealModel, checkTinyModel, REAL_MODELS, TINY_MODEL, TINY_MODEL_SHA256 } from '../test/helpers/models';
import { writeSyntheticLlama } from '../test/reference/synthetic-llama';

/** Path of the model, created when missing. */
export function textSyntheticModel(): string {
  const file = path.join(__dirname, '.models', 'synthetic-8x1024-h64-f16.gguf');
  if (!fs.existsSync(file)) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    writeSyntheticLlama(file, { tokenizerFrom: TINY_MODEL, nEmbd: 1024, nHead: 16, nHeadKv: 4, nFf: 2816, nLayer: 8, weightType: 'F16', seed: 7 });
  }
  return file;
}

/** A model a benchmark runs, as named by its `--model` option. */
export interface BenchModel {
  /**
   * Short name for file names and tables: `tiny`, the scripts/models.json id of a real model
   * (e.g. `qwen2.5-coder-1.5b-instruct`), or the GGUF file's base name without `.gguf`.
   */
  id: string;
  /** Shortest name for result files: `tiny`, a real model's first alias (`smollm2`, `coder`), else `id`. */
  short: string;
  /** The GGUF file (absolute path). */
  file: string;
  /** Pinned SHA-256 (hex) that the file was checked against, or null for a plain path (not checked). */
  sha256: string | null;
  /** Human-readable name for plots and tables, e.g. `SmolLM2-135M-Instruct Q4_1`. */
  label: string;
}

/** The names `--model` accepts besides a path: `tiny` and every id and alias of scripts/models.json. */
export function benchModelNames(): string[] {
  const names = ['tiny'];
  for (const [id, m] of Object.entries(REAL_MODELS)) names.push(id, ...(((m as { aliases?: string[] }).aliases ?? []) as string[]));
  return names;
}

/**
 * Resolves a benchmark's `--model` value. `tiny` (or `stories260K`) is ../shared/models/stories260K.gguf;
 * an id or alias of scripts/models.json is that real model in the `npm run models` cache, both
 * checked by SHA-256 (a missing or different file throws checkRealModel's one-line error, which
 * names the command that fetches it); anything ending in `.gguf` or naming an existing file is
 * taken as a path, unchecked.
 * @throws Error naming the accepted names when the value is none of these.
 */
export function resolveBenchModel(name: string): BenchModel {
  if (name === 'tiny' || name === 'stories260K') return { id: 'tiny', short: 'tiny', file: checkTinyModel(), sha256: TINY_MODEL_SHA256, label: 'stories260K' };
  for (const [id, m] of Object.entries(REAL_MODELS)) {
    const aliases = (m as { aliases?: string[] }).aliases ?? [];
    if (id === name || aliases.includes(name)) {
      const file = checkRealModel(id);
      // the description starts with the model's name and quantization, e.g. "SmolLM2-135M-Instruct Q4_1 (llama, …)"
      return { id, short: aliases[0] ?? id, file, sha256: m.sha256, label: m.description.split(' (')[0]!.split(',')[0]!.trim() };
    }
  }
  if (name.endsWith('.gguf') || fs.existsSync(name)) {
    const file = path.resolve(name);
    if (!fs.existsSync(file)) throw new Error(`--model: ${file} does not exist`);
    const id = path.basename(file).replace(/\.gguf$/i, '');
    return { id, short: id, file, sha256: null, label: path.basename(file) };
  }
  throw new Error(`--model: unknown model ${JSON.stringify(name)}; use a path to a .gguf file or one of ${benchModelNames().join(', ')}`);
}
