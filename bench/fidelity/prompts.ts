/**
 * The benchmark's prompts: children's stories written by stories260K itself (seeded sampling
 * from varied openings), cached in bench/fidelity/prompts.json so that every run measures the
 * same tokens. Nothing is downloaded.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { TeacherForcer } from './engine';
import { mulberry32, sampleToken } from './rng';

/** The prompt cache next to this file. */
export const PROMPTS_FILE = path.join(__dirname, 'prompts.json');

/** Story openings the prompts start from (one per prompt, cycled). */
export const OPENINGS: readonly string[] = [
  'Once upon a time, there was a little boy named Tim.',
  'Once upon a time, there was a little girl named Lily.',
  'One day, a big red truck drove into a small town.',
  'There was a small frog who lived in a green pond.',
  'Sam and his dad went to the beach on a sunny day.',
  'Once upon a time, in a big forest, there lived a kind bear.',
  'Mia had a pink ball that she loved very much.',
  'One morning, the sun was shining and the birds were singing.',
  'Once upon a time, there was a shy cat who lived in a box.',
  'Ben wanted to build the tallest tower in the world.',
  'There was a little bird who could not fly.',
  'Anna and Tom found a shiny key under a rock.',
  'Once upon a time, there was a silly dog named Max.',
  'It was a cold winter day and the snow was falling.',
  'The old man had a garden full of red flowers.',
  'Lucy was sad because her toy car was broken.',
];

/** How the cached prompts were generated. */
export interface PromptGenerator {
  temperature: number;
  topP: number;
  /** Seed of prompt i is seed + i. */
  seed: number;
  /** Shortest and longest prompt [tokens]; lengths are spread evenly between them. */
  minTokens: number;
  maxTokens: number;
}

/** One cached prompt. */
export interface Prompt {
  id: number;
  opening: string;
  seed: number;
  /** Token ids (BOS first), `tokens.length` = L. */
  tokens: number[];
  /** The prompt as text (for reading; the tokens are what runs). */
  text: string;
}

/** Defaults: 48 prompts, 400 to 1,980 tokens (so that L + 65 fits the 2,048-token context). */
export const DEFAULT_GENERATOR: PromptGenerator = { temperature: 0.8, topP: 0.95, seed: 1000, minTokens: 400, maxTokens: 1980 };

/** Target length [tokens] of prompt i of n: evenly spaced from minTokens to maxTokens. */
export function promptLength(g: PromptGenerator, i: number, n: number): number {
  return n <= 1 ? g.minTokens : Math.round(g.minTokens + ((g.maxTokens - g.minTokens) * i) / (n - 1));
}

/**
 * Samples `length` tokens in total from the model, starting with BOS + `opening` (end of
 * sequence is never sampled, so stories run on into new ones as the model writes them).
 */
export async function sampleStory(forcer: TeacherForcer, opening: string, length: number, seed: number, g: Pick<PromptGenerator, 'temperature' | 'topP'>, banned: ReadonlySet<number> = new Set()): Promise<number[]> {
  const model = forcer.model;
  const tokens = Array.from(model.tokenize(opening, { addSpecial: true }));
  const ban = new Set([model.info.eos, ...banned]);
  const rng = mulberry32(seed);
  forcer.clear();
  let logits = await forcer.extend(tokens);
  while (tokens.length < length) {
    const t = sampleToken(logits, rng, { temperature: g.temperature, topP: g.topP, banned: ban });
    tokens.push(t);
    if (tokens.length < length) logits = await forcer.step(t);
  }
  return tokens.slice(0, length);
}

/** Generates n prompts. */
export async function generatePrompts(forcer: TeacherForcer, n: number, g: PromptGenerator = DEFAULT_GENERATOR): Promise<Prompt[]> {
  const out: Prompt[] = [];
  for (let i = 0; i < n; i++) {
    const opening = OPENINGS[i % OPENINGS.length]!;
    const tokens = await sampleStory(forcer, opening, promptLength(g, i, n), g.seed + i, g);
    out.push({ id: i, opening, seed: g.seed + i, tokens, text: forcer.model.detokenize(tokens) });
  }
  return out;
}

/** sha256 of the model the cache was generated with, and the cached sections. */
export interface PromptCache {
  model: { file: string; sha256: string };
  generator: PromptGenerator;
  prompts: Prompt[];
  /** Retrieval-probe items (see retrieval.ts), absent until generated. */
  retrieval?: unknown;
  /** Follow-up-probe items (see follow-up.ts), absent until generated. */
  followUp?: unknown;
}

/** Reads the cache, or null when it is missing or was made for another model. */
export function readPromptCache(sha256: string, file = PROMPTS_FILE): PromptCache | null {
  if (!fs.existsSync(file)) return null;
  const cache = JSON.parse(fs.readFileSync(file, 'utf8')) as PromptCache;
  return cache.model.sha256 === sha256 ? cache : null;
}

/** Writes the cache, indented, with each token array on one line. */
export function writePromptCache(cache: PromptCache, file = PROMPTS_FILE): void {
  const text = JSON.stringify(cache, null, 1).replace(/\[\s*-?\d+(?:\s*,\s*-?\d+)*\s*\]/g, (m) => m.replace(/\s+/g, ''));
  fs.writeFileSync(file, text + '\n');
}
