/**
 * What the stages of one answer share (restore → prefill → snap → decode → persist, one file
 * each in this folder; pipeline/ask.ts runs them in that order): the request, the session, and
 * the prompt as two token arrays, the repository prefix the cache store keeps uncompressed and
 * the question part after it. The question part is completed by the retrieve stage (retrieve.ts,
 * this question's retrieval section) unless the thread's cache is continued.
 */
import type { ThreadTurn } from '../../cache/store';
import type { PackResult } from '../../context/pack';
import type { EngineSession } from '../../engine/session';
import type { LayoutTokens } from '../../prompt/prompt';
import type { AskEvent, AskRequest } from '../ask';
import type { ContextReportInput } from '../context-report';
import type { OptionNames } from '../context-size';
import type { EditsInfo } from '../after-edit';

/** One question on its way through the stages, after packing and fitting the thread. */
export interface Question {
  session: EngineSession;
  req: AskRequest;
  /** The cache key of this model, engine and cache settings (see cache/identity.ts). */
  key: string;
  /** The template parts as tokens. */
  layout: LayoutTokens;
  /** The repository prefix [tokens]: head + packed files. */
  prefix: Int32Array;
  /**
   * The question part [tokens]: the retrieval section (ranked packing; added by retrieve.ts, never
   * on a continued thread), the earlier turns kept, the question.
   */
  suffix: Int32Array;
  /** The question alone [tokens], tokenized once for every use (the thread's fit, `suffix`, a continued thread's turn). */
  questionTokens: Int32Array;
  /** Tokens kept for the retrieval section (ranked packing; `AskRequest.retrievalShare` of the context), 0 for none. */
  retrievalRoom: number;
  /** The retrieval section at the start of `suffix`: its tokens, and each quoted chunk's file and tokens (context report); none (0 tokens) until retrieve.ts. */
  retrieval: NonNullable<ContextReportInput['retrieval']>;
  /** The retrieval section's text ('' when none): the code prior maps its tokens back to it. */
  retrievalText: string;
  /** Each of `pack.sections`' tokens, as tokenized alone (`prefix` is the head followed by these). */
  sectionTokens: Int32Array[];
  /** The pack; retrieve.ts adds the files its retrieval found holding a secret to the skipped ones. */
  pack: PackResult;
  /** Packing time, from the start of the question, and the retrieve stage's [ms]. */
  packMs: number;
  /** Start of the question (`performance.now()`) [ms]. */
  t0: number;
  /** Answer length limit [tokens]. */
  maxTokens: number;
  /** Tokens the packer kept free for the answer (`AskRequest.answerRoom`, or `defaultAnswerRoom`). */
  answerRoom: number;
  /** The session's context [tokens]. */
  contextSize: number;
  /** How error messages name the options. */
  names: OptionNames;
  /** The thread's turns in the prompt (the most recent ones that fit). */
  earlier: ThreadTurn[];
  /** Turns left out of the prompt, oldest first. */
  dropped: number;
  /** Every earlier turn of the thread (saved back with the new one). */
  history: ThreadTurn[];
  onEvent: (e: AskEvent) => void;
  /** With `req.editBase`: what changed since it and the strategy used (after-edit.ts). */
  edits?: EditsInfo;
  /** The erratum's text at the start of `suffix` ('' when none). */
  erratumText: string;
}

/**
 * Where SnapKV's observation window starts in the prompt: L − w [tokens] (L = prefix + suffix,
 * w the window), at least 0. The window's queries are captured only while these tokens are
 * prefilled, so a restored prefix is cut back to here (restore.ts) and a cold prefill stops here
 * once (prefill.ts): both compute the window in the same batches.
 */
export function windowStart(q: Question): number {
  return Math.max(0, q.prefix.length + q.suffix.length - q.req.snap.window);
}
