/**
 * A large repository's prompt for each packing of bench/repoqa/large (issue 15), built by the
 * product's functions exactly as `askRepository` (src/pipeline/ask.ts) builds it for a thread's
 * first question:
 *
 * - the layout (`promptLayout` + `tokenizeLayout`), the question's room (`threadRoom`,
 *   `questionReserve`) and the retrieval room (`floor(contextSize · retrievalShare)` with the
 *   ranked packing, else 0); the files' budget is the context less the head, the question's room,
 *   the answer's tokens and the retrieval room;
 * - the cached prefix: [head │ sections] with the sections of `packRepository` (`packing`
 *   `'smallest-first'` or `'ranked'`: tree, files in full, repository map), each tokenized alone;
 * - after the prefix, per question: the retrieval section (`retrieveChunks` over
 *   `PackResult.retrievable`, BM25 for the question, within the retrieval room), then the
 *   thread's first turn (`threadTokens`: between │ question │ tail).
 *
 * test/bench/repoqa-large.test.ts checks that askRepository prefills exactly these tokens.
 */
import { packRepository, type Packing, type PackResult, type RankedShares } from '../../../src/context/pack';
import { retrieveChunks } from '../../../src/context/retrieve/retrieve';
import type { EngineModel } from '../../../src/engine/model';
import { questionReserve, threadRoom } from '../../../src/pipeline/ask';
import { concatTokens, promptLayout, threadTokens, tokenizeLayout, type LayoutTokens } from '../../../src/prompt/prompt';

/**
 * The packings compared: the issue's three (the `summary` rows' `packing`) and
 * `ranked+small+map+retrieval`, an attempt at the `inside` subset measured after them
 * (ranked+map+retrieval with `rankedShares.smallest` {@link SMALL_FILES_SHARE}).
 */
export type LargePacking = 'smallest-first' | 'ranked+map' | 'ranked+map+retrieval' | 'ranked+small+map+retrieval';

/** The three packings, in report order: `summary` and the target are over these. */
export const LARGE_PACKINGS: readonly LargePacking[] = ['smallest-first', 'ranked+map', 'ranked+map+retrieval'];

/** Packings measured besides the three (reported apart, on the questions they answered). */
export const EXTRA_PACKINGS: readonly LargePacking[] = ['ranked+small+map+retrieval'];

/** Every packing, in report order. */
export const ALL_PACKINGS: readonly LargePacking[] = [...LARGE_PACKINGS, ...EXTRA_PACKINGS];

/** The retrieval share of `ranked+map+retrieval`: the product's suggested setting (`reposnap.retrievalShare` 0.15). */
export const PRODUCT_RETRIEVAL_SHARE = 0.15;

/**
 * `rankedShares.smallest` of `ranked+small+map+retrieval`: half of the files' default share (0.6)
 * goes to files chosen smallest first, after the ranked ones (src/context/ranked.ts).
 */
export const SMALL_FILES_SHARE = 0.3;

/** The `askRepository` options of a packing: `pack.packing`, `pack.rankedShares` (when not the default) and `retrievalShare`. */
export function askOptions(p: LargePacking): { packing: Packing; retrievalShare: number; rankedShares?: RankedShares } {
  switch (p) {
    case 'smallest-first':
      return { packing: 'smallest-first', retrievalShare: 0 };
    case 'ranked+map':
      return { packing: 'ranked', retrievalShare: 0 };
    case 'ranked+map+retrieval':
      return { packing: 'ranked', retrievalShare: PRODUCT_RETRIEVAL_SHARE };
    case 'ranked+small+map+retrieval':
      return { packing: 'ranked', retrievalShare: PRODUCT_RETRIEVAL_SHARE, rankedShares: { smallest: SMALL_FILES_SHARE } };
  }
}

/** Tokens of each part of a packed prefix. */
export interface SectionTokens {
  /** The chat template's head (system prompt and the user turn's opening). */
  head: number;
  /** The file tree (ranked packing; 0 otherwise). */
  tree: number;
  /** The repository map (ranked packing; 0 otherwise). */
  map: number;
  /** The files in full. */
  files: number;
}

/** One packing's question-independent prefix of one repository. */
export interface PackedPrompt {
  packing: LargePacking;
  layout: LayoutTokens;
  pack: PackResult;
  /** [head │ sections] tokens: what the prefix cache keeps. */
  prefix: Int32Array;
  sections: SectionTokens;
  /** Paths of the files in full, in prompt order. */
  full: string[];
  /** Paths of the files in the repository map, by rank. */
  mapped: string[];
  /** Context size [tokens]. */
  contextSize: number;
  /** Room for the question's thread turn [tokens] (askRepository's `questionRoom` for a short question). */
  questionRoom: number;
  /** Room for the retrieval section [tokens] (0 without retrieval). */
  retrievalRoom: number;
  /** The answer's tokens kept free (askRepository's `answerRoom`; its `maxTokens` before the answer room existed). */
  answerTokens: number;
}

/**
 * Packs a repository for one packing, as askRepository does with `pack: { include, order: 'path',
 * packing, rankedShares }`, `retrievalShare`, `contextSize` and `answerRoom: answerTokens`.
 * @throws what `packRepository` throws; Error when nothing is packed.
 */
export async function packedPrompt(model: EngineModel, dir: string, include: readonly string[], packing: LargePacking, contextSize: number, answerTokens: number): Promise<PackedPrompt> {
  const { packing: mode, retrievalShare, rankedShares } = askOptions(packing);
  const layout = tokenizeLayout(model, promptLayout(model));
  const room = threadRoom(contextSize, layout.head.length, answerTokens);
  const questionRoom = Math.min(questionReserve(contextSize), room);
  const retrievalRoom = mode === 'ranked' ? Math.floor(contextSize * retrievalShare) : 0;
  const tokenBudget = contextSize - (layout.head.length + questionRoom + answerTokens) - retrievalRoom;
  const cache = new Map<string, Int32Array>();
  const pack = await packRepository(dir, {
    include,
    order: 'path',
    packing: mode,
    ...(rankedShares !== undefined ? { rankedShares } : {}),
    tokenBudget,
    countTokens: (text) => {
      const t = model.tokenize(text);
      cache.set(text, t);
      return t.length;
    },
  });
  if (pack.sections.length === 0) throw new Error(`${dir}: nothing packed for ${packing} within ${tokenBudget} tokens`);
  const sectionTokens = pack.sections.map((s) => cache.get(s.text) ?? model.tokenize(s.text));
  const sum = (kind: 'tree' | 'file' | 'map') => pack.sections.reduce((n, s, i) => n + (s.kind === kind ? sectionTokens[i]!.length : 0), 0);
  return {
    packing,
    layout,
    pack,
    prefix: concatTokens([layout.head, ...sectionTokens]),
    sections: { head: layout.head.length, tree: sum('tree'), map: sum('map'), files: sum('file') },
    full: pack.files.map((f) => f.path),
    mapped: pack.mapped.map((m) => m.path),
    contextSize,
    questionRoom,
    retrievalRoom,
    answerTokens,
  };
}

/** What follows the cached prefix for one question. */
export interface QuestionPart {
  /** [retrieval │ between │ question │ tail] tokens. */
  tokens: Int32Array;
  /** Tokens of the retrieval section (0 when none). */
  retrievalTokens: number;
  /** Tokens of the thread's turn (between │ question │ tail). */
  questionTokens: number;
  /** The quoted chunks, best first: `path#name`. */
  retrieved: string[];
}

/**
 * Why a question cannot be asked after a packed prefix, or null when it can: its thread turn
 * (between │ question │ tail) is longer than the question's room. askRepository would then pack
 * the repository with a smaller budget (`questionRoom` grows to the question), so the prompt would
 * have another prefix than the one every other question of the packing shares: the benchmark skips
 * such a question and records why.
 * @param questionTokens tokens of the question's thread turn
 * @param questionRoom the room kept for it in the packed prompt ({@link PackedPrompt.questionRoom}) [tokens]
 */
export function questionSkipReason(questionTokens: number, questionRoom: number): string | null {
  return questionTokens > questionRoom ? `the question takes ${questionTokens} tokens, more than its room (${questionRoom})` : null;
}

/** Tokens of a question's thread turn (between │ question │ tail) in a packed prompt's layout. */
export function questionTokenCount(model: EngineModel, p: PackedPrompt, question: string): number {
  return threadTokens(model, p.layout, [{ question }]).length;
}

/**
 * The tokens askRepository prefills after the cached prefix for a thread's first question.
 * @throws Error when the question is longer than the question's room ({@link questionSkipReason};
 *   askRepository would then pack with a smaller budget: another prefix).
 */
export async function questionPart(model: EngineModel, p: PackedPrompt, question: string): Promise<QuestionPart> {
  const suffix = threadTokens(model, p.layout, [{ question }]);
  const skip = questionSkipReason(suffix.length, p.questionRoom);
  if (skip !== null) throw new Error(skip);
  let retrieval: Int32Array = new Int32Array(0);
  let retrieved: string[] = [];
  if (p.retrievalRoom > 0 && p.pack.retrievable.length > 0) {
    const r = await retrieveChunks(p.pack.retrievable, question, { budget: p.retrievalRoom, countTokens: (t) => model.tokenize(t).length, secrets: p.pack.secrets });
    if (r.text !== '') retrieval = model.tokenize(r.text);
    retrieved = r.chunks.map((c) => `${c.path}#${c.name}`);
  }
  return { tokens: concatTokens([retrieval, suffix]), retrievalTokens: retrieval.length, questionTokens: suffix.length, retrieved };
}
