/**
 * Retrieval probe (issue 7, item 3): a girl's name is introduced once at the start of a long
 * story; at the end, a cue makes the name the expected next tokens. Does a compressed cache
 * still let the model recall it?
 *
 * stories260K has a strong prior for a few names (" Lily" after "named"), and most names are
 * several tokens (" Zoe" = " ", "Z", "o", "e"). So an item counts as recalled when, with the
 * name's first token given (teacher forcing), every following token of the name is the model's
 * top-1. Items are kept only when full attention recalls the name AND fails when the intro
 * names someone else ("Ann"): then the recall comes from the intro, not from the prior.
 * The filler between intro and cue is the model's own story text sampled without names
 * (single capital letters, " Lily", " Tim", " Timmy" and " named" are never sampled).
 */
import type { EngineModel } from '../../src/engine/model';
import { budgetFor, preparePrompt } from './benchmark';
import type { TeacherForcer } from './engine';
import { argmax } from './metrics';
import { checkKept, type EvictionPolicy, type PolicyInput } from './policy';
import { sampleStory } from './prompts';

/** Candidate names, each several tokens (a single-token name would leave nothing to recall after its first token). */
export const RETRIEVAL_NAMES: readonly string[] = [
  'Zoe', 'Pip', 'Rex', 'Jill', 'Daisy', 'Roxy', 'Bella', 'Mandy', 'Sue', 'Max', 'Kitty', 'Molly',
  'Sally', 'Bob', 'Jack', 'Lucy', 'Ben', 'Gina', 'Kim', 'Fay', 'Hope', 'Tom', 'Sam', 'Mia',
  'Nina', 'Ella', 'Lola', 'Rosa', 'Tina', 'Dot', 'Meg', 'Amy', 'Jane', 'Beth', 'Polly', 'Sophie',
];
/** Cues that end right before the name. */
export const RETRIEVAL_CUES: readonly string[] = [' The girl,', ' The little girl named'];
/** Filler lengths between the intro and the cue [tokens]. */
export const RETRIEVAL_DISTANCES: readonly number[] = [100, 200, 350, 500, 700, 1000, 1400];
/** The name the control intro uses. */
export const CONTROL_NAME = 'Ann';

/** The intro sentence that names the girl once. */
export function introText(name: string): string {
  return `Once upon a time, there was a little girl named ${name}. She lived in a small house near the woods.`;
}

/** Neutral openings of the filler stories. */
const FILLER_OPENINGS = ['One day, a dog and a cat went to the park.', 'The sun was warm and the birds sang in the big tree.', 'A little car drove down the road to the farm.', 'The rabbit and the duck were best friends.'];

/** One retrieval item, as cached (the tokens are rebuilt from it). */
export interface RetrievalItem {
  name: string;
  cue: string;
  /** Filler tokens between the intro and the cue. */
  distance: number;
  /** Index of the filler story. */
  filler: number;
}

/** The cached retrieval section of prompts.json. */
export interface RetrievalCache {
  /** Filler stories [tokens], no BOS. */
  fillers: number[][];
  /** Candidates tried when the items were chosen. */
  candidates: number;
  /** Candidates that full attention recalled (before the control). */
  fullRecalled: number;
  /** Candidates that full attention recalled and the control did not: the items. */
  items: RetrievalItem[];
}

/** The prompt (BOS, intro, filler, cue) and the name's tokens of an item. */
export function buildItem(model: EngineModel, fillers: readonly number[][], item: RetrievalItem, introName = item.name): { prefix: number[]; name: number[] } {
  const intro = Array.from(model.tokenize(introText(introName), { addSpecial: true }));
  const filler = fillers[item.filler]!.slice(0, item.distance);
  const cue = Array.from(model.tokenize(item.cue));
  // tokens of " Name" after a word, as in "named Name"
  const name = Array.from(model.tokenize(`named ${item.name}`)).slice(1);
  return { prefix: [...intro, ...filler, ...cue], name };
}

/**
 * Whether the name is recalled on the current cache: teacher-forces the name's tokens after the
 * prompt and checks that each after the first is the top-1 of the previous step.
 */
export async function recalls(forcer: TeacherForcer, name: readonly number[]): Promise<boolean> {
  let ok = true;
  for (let i = 0; i + 1 < name.length; i++) {
    const logits = await forcer.step(name[i]!);
    if (argmax(logits) !== name[i + 1]) ok = false;
  }
  return ok;
}

/** Full-attention recall of an item with the intro naming `introName`. */
async function fullRecall(forcer: TeacherForcer, fillers: readonly number[][], item: RetrievalItem, introName: string): Promise<boolean> {
  const { prefix, name } = buildItem(forcer.model, fillers, item, introName);
  forcer.clear();
  forcer.arm(0);
  await forcer.extend(prefix);
  return recalls(forcer, name);
}

/** Tokens never sampled in the filler: names and what starts them. */
export function fillerBanned(model: EngineModel): Set<number> {
  const banned = new Set<number>([model.info.bos]);
  for (const word of ['named', 'Lily', 'Tim', 'Timmy']) for (const t of Array.from(model.tokenize(` ${word}`)).slice(1)) banned.add(t);
  for (let t = 0; t < model.info.nVocab; t++) if (/^ ?[A-Z]$/.test(model.tokenBytes(t).toString('utf8')) && !/^ ?[AI]$/.test(model.tokenBytes(t).toString('utf8'))) banned.add(t);
  return banned;
}

/**
 * Builds the retrieval items: samples the fillers, tries every name × cue × distance, keeps the
 * candidates that pass the full-attention check and the control.
 */
export async function generateRetrieval(forcer: TeacherForcer, log: (s: string) => void = () => {}): Promise<RetrievalCache> {
  const model = forcer.model;
  const banned = fillerBanned(model);
  const maxDistance = Math.max(...RETRIEVAL_DISTANCES);
  const fillers: number[][] = [];
  for (const [i, opening] of FILLER_OPENINGS.entries()) {
    const story = await sampleStory(forcer, opening, maxDistance + 40, 500 + i, { temperature: 0.8, topP: 0.95 }, banned);
    fillers.push(story.slice(1)); // without BOS
  }
  let candidates = 0;
  let fullRecalled = 0;
  const items: RetrievalItem[] = [];
  for (const [ni, name] of RETRIEVAL_NAMES.entries()) {
    for (const cue of RETRIEVAL_CUES) {
      for (const distance of RETRIEVAL_DISTANCES) {
        const item: RetrievalItem = { name, cue, distance, filler: (ni + distance) % fillers.length };
        candidates++;
        if (!(await fullRecall(forcer, fillers, item, name))) continue;
        fullRecalled++;
        if (await fullRecall(forcer, fillers, item, CONTROL_NAME)) continue;
        items.push(item);
      }
    }
    log(`retrieval: ${name}: ${items.length} items of ${candidates} candidates so far`);
  }
  return { fillers, candidates, fullRecalled, items };
}

/** Recall of one item under each policy and budget. */
export interface RetrievalItemResult {
  item: RetrievalItem;
  /** Prompt length [tokens]. */
  L: number;
  /** Full attention recalls the name (true for every item when they were chosen). */
  full: boolean;
  /** By policy id: recalled at each budget fraction (same order as the fractions). */
  byPolicy: Record<string, boolean[]>;
}

/** Runs the retrieval probe on one item. */
export async function runRetrievalItem(forcer: TeacherForcer, fillers: readonly number[][], item: RetrievalItem, policies: readonly EvictionPolicy[], fractions: readonly number[]): Promise<RetrievalItemResult> {
  const { prefix, name } = buildItem(forcer.model, fillers, item);
  const L = prefix.length;
  const { full, scores } = await preparePrompt(forcer, prefix, policies.map((p) => p.scoreWindow).filter((w) => w > 0));
  const { nLayer, nHeadKv } = forcer.shape;
  await forcer.restore(full);
  const out: RetrievalItemResult = { item, L, full: await recalls(forcer, name), byPolicy: {} };
  for (const p of policies) out.byPolicy[p.id] = [];
  for (const fraction of fractions) {
    const B = budgetFor(fraction, L);
    const input: PolicyInput = { L, budget: B, nLayer, nHeadKv, windowScores: scores };
    for (const p of policies) {
      const kept = p.select(input);
      checkKept(input, kept);
      await forcer.restore(full);
      await forcer.compact(B, kept);
      out.byPolicy[p.id]!.push(await recalls(forcer, name));
    }
  }
  return out;
}
