/**
 * After an edit (issue 30): the prompt a question runs on when the repository changed since an
 * earlier question's prefix was cached (`AskRequest.editBase`). `exact` runs on the repository
 * packed now (the cache restores up to the first changed token). `erratum` / `erratum-diff`
 * (context/erratum.ts) run on the earlier prefix, restored whole, with the erratum after it, when
 * that prefills fewer tokens than `exact` would and fits the context. Smallest-first packs only: a
 * ranked pack's tree, map and retrieval chunks would still describe the old files.
 */
import { hashChain } from '../cache/hash-chain';
import type { CacheStore } from '../cache/store';
import { buildErratum, type AfterEdit, type FileChange } from '../context/erratum';
import type { PackResult } from '../context/pack';
import type { EngineModel } from '../engine/model';
import { concatTokens } from '../prompt/prompt';

/** What a question did after an edit (`AskStats.edits`). */
export interface EditsInfo {
  /** The strategy asked for. */
  asked: AfterEdit;
  /** The strategy the prompt used: an erratum asked for falls back to `exact` (see `reason`). */
  used: AfterEdit;
  /** The files that differ from the earlier prefix's (`editBase`), in erratum order. */
  changes: FileChange[];
  /** Tokens of the erratum in the prompt (0 with `exact`). */
  erratumTokens: number;
  /** Why an erratum was not used ('' when it was, or with `exact`). */
  reason: string;
}

/** The prompt's repository part after {@link afterEdit}. */
export interface EditedPrompt {
  /** The pack whose sections are in the prefix (the earlier one with an erratum). */
  pack: PackResult;
  /** head + the sections' tokens. */
  prefix: Int32Array;
  /** Each of `pack.sections`' tokens. */
  sectionTokens: Int32Array[];
  /** The erratum's tokens (empty with `exact`), at the start of the question part. */
  erratum: Int32Array;
  /** The erratum's text ('' with `exact`). */
  erratumText: string;
  info: EditsInfo;
}

/**
 * Chooses the prompt after an edit. `current` is the repository packed now, `prefix` its prefix;
 * `base` the pack of an earlier question whose prefix the store may hold. The erratum is used when
 * `asked` is not `exact`, both packs are smallest-first, some file changed, the store's match of
 * the earlier prefix plus the erratum prefills fewer tokens than the store's match of the current
 * prefix (both at the store's 64-token checkpoints), and base prefix + erratum + `questionPart` +
 * `answerRoom` ≤ `contextSize`. Units: tokens.
 */
export function afterEdit(input: {
  asked: AfterEdit;
  base: PackResult;
  current: PackResult;
  prefix: Int32Array;
  sectionTokens: Int32Array[];
  head: Int32Array;
  model: EngineModel;
  store: CacheStore | undefined;
  key: () => string;
  questionPart: number;
  answerRoom: number;
  contextSize: number;
}): EditedPrompt {
  const { asked, base, current, model } = input;
  const files = (p: PackResult) => p.files.map((f) => ({ path: f.path, text: f.text }));
  const changes = buildErratum(files(base), files(current), 'file').changes;
  const exact = (reason: string): EditedPrompt => ({
    pack: current,
    prefix: input.prefix,
    sectionTokens: input.sectionTokens,
    erratum: new Int32Array(0),
    erratumText: '',
    info: { asked, used: 'exact', changes, erratumTokens: 0, reason },
  });
  if (asked === 'exact') return exact('');
  if (base.packing !== 'smallest-first' || current.packing !== 'smallest-first') return exact('ranked packing');
  if (changes.length === 0) return exact('no file changed');
  if (!input.store) return exact('no cache');
  const erratum = buildErratum(files(base), files(current), asked === 'erratum-diff' ? 'diff' : 'file');
  const erratumTokens = model.tokenize(erratum.text);
  const baseTokens = base.sections.map((s) => model.tokenize(s.text));
  const basePrefix = concatTokens([input.head, ...baseTokens]);
  const matched = (tokens: Int32Array) => input.store!.findPrefix(input.key(), hashChain(tokens))?.matched ?? 0;
  const exactCost = input.prefix.length - Math.min(matched(input.prefix), input.prefix.length);
  const erratumCost = basePrefix.length - Math.min(matched(basePrefix), basePrefix.length) + erratumTokens.length;
  if (erratumCost >= exactCost) return exact(`exact prefills fewer tokens (${exactCost} against ${erratumCost})`);
  if (basePrefix.length + erratumTokens.length + input.questionPart + input.answerRoom > input.contextSize) return exact('the erratum does not fit the context');
  return {
    pack: base,
    prefix: basePrefix,
    sectionTokens: baseTokens,
    erratum: erratumTokens,
    erratumText: erratum.text,
    info: { asked, used: asked, changes: erratum.changes, erratumTokens: erratumTokens.length, reason: '' },
  };
}
