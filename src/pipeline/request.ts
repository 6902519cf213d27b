/**
 * What one question asks and what it answers (moved out of pipeline/ask.ts, behaviour unchanged):
 * the request of {@link askRepository}, its progress events and its stats. Types only.
 */
import type { CacheOutcome, CacheStore } from '../cache/store';
import type { FollowUpMode } from '../config/settings';
import type { SnapOptions } from '../config/snap-options';
import type { PackOptions, PackResult } from '../context/pack';
import type { QuotedFile } from '../context/quoted';
import type { AfterEdit } from '../context/erratum';
import type { EditsInfo } from './after-edit';
import type { EngineModel } from '../engine/model';
import type { EngineSession, SessionOptions } from '../engine/session';
import type { ContextReport } from './context-report';
import type { OptionNames } from './context-size';
import type { askRepository } from './ask';

/** Inputs of {@link askRepository}. */
export interface AskRequest {
  repo: string;
  question: string;
  model: EngineModel;
  snap: SnapOptions;
  /** Context size [tokens]; default min(model's training context, 8192). See {@link checkContextSize}. */
  contextSize?: number;
  /** Allow a context size above the model's training context (answers degrade past it). Default false. */
  forceContextSize?: boolean;
  /** Answer length limit [tokens]; default `DEFAULT_MAX_TOKENS` (256). Does not change what is packed (see `answerRoom`). */
  maxTokens?: number;
  /**
   * Tokens the packer keeps free for the answer [tokens], ≥ 0; default `defaultAnswerRoom`
   * (256, at most an eighth of the context). The repository prefix, and so its cached state, is
   * packed for this room and not for `maxTokens`: questions that differ only in their answer
   * length share one prefix. A `maxTokens` above it is served from what the prompt leaves free,
   * or refused before the prefill (`AnswerRoomError`, code `context_overflow`) with the number
   * that fits. The extension sets it to its `reposnap.maxTokens` setting.
   */
  answerRoom?: number;
  temperature?: number;
  topP?: number;
  seed?: number;
  session?: Omit<SessionOptions, 'contextSize' | 'snapWindow' | 'fingerprintMemo'>;
  /** Per-file size cap [bytes]. */
  maxFileBytes?: number;
  /** What to pack beyond .gitignore: include/exclude globs (e.g. VS Code's files.exclude), defaults, order, packing (issue 15). */
  pack?: Pick<PackOptions, 'include' | 'exclude' | 'defaultExcludes' | 'skipGenerated' | 'order' | 'packing' | 'maxWalkEntries' | 'recentFiles' | 'rankedShares' | 'tagsCache' | 'cacheDirs'>;
  /**
   * With `pack.packing: 'ranked'`, or `'auto'` when it chooses ranked: the share of the context,
   * in [0, 1), kept for the question's retrieval section (the BM25-best chunks of files not in
   * full, after the cached prefix and before the thread; `retrieveChunks`): floor(contextSize ×
   * share) tokens, taken from the files' budget before packing. `'auto'` decides whether
   * smallest-first fits against the budget without it. Default 0 (none).
   */
  retrievalShare?: number;
  /** The workspace's cache; without it every question starts cold. */
  store?: CacheStore;
  /** Thread the question belongs to (its earlier turns are in the store). */
  threadId?: string;
  /**
   * A thread whose turns a new thread starts from (an explanation continued in chat): used while
   * `threadId` has no turns of its own yet; the first answer saves them under `threadId`.
   */
  forkFrom?: string;
  /** Called after SnapKV compacted the cache, before decoding (tests and benchmarks read the kept positions). */
  afterSnap?: (session: EngineSession) => void;
  /** How error messages name options; default {@link CLI_OPTION_NAMES}. */
  optionNames?: OptionNames;
  /** Default 'resnap'. */
  followUp?: FollowUpMode;
  /**
   * Only bring the cached repository prefix up to date (restore, prefill what changed, save):
   * no question, no answer. The file watcher calls this so that the next question is a hit.
   */
  prepareOnly?: boolean;
  /**
   * The file whose code the question quotes (an explanation's document: its path relative to
   * `repo` and its whole current text). The question is refused with a `SecretRefusedError`,
   * before anything is prefilled or saved, when the packer would leave that file out for its
   * secrets (`quotedFileRefusal`: a credential file by name, or a secret anywhere in the text).
   */
  quoted?: QuotedFile;
  /**
   * What to do when the repository changed since `editBase` was packed (issue 30, after-edit.ts):
   * `exact` (default) runs on the repository packed now; `erratum` and `erratum-diff` run on
   * `editBase`'s prefix (restored whole from the cache) with the new text, or a diff, of each
   * changed file after it, when that prefills fewer tokens and fits. Needs `editBase` and `store`.
   */
  afterEdit?: AfterEdit;
  /**
   * The pack of an earlier question on this repository whose prefix the cache holds (its
   * `packed` event's `pack`; with an erratum that is the earlier base again). Absent: `exact`.
   */
  editBase?: PackResult;
  signal?: AbortSignal;
}

/** Progress events, in order. */
export type AskEvent =
  | ({ kind: 'pack' } & Parameters<NonNullable<PackOptions['onProgress']>>[0])
  /**
   * The repository is packed and the cache restored: `promptTokens` is the prompt this question runs
   * on (L); `pack` the pack whose sections are in its prefix (an erratum's base), `erratum` the
   * erratum's text after it (after-edit.ts), absent when none.
   */
  | { kind: 'packed'; pack: PackResult; promptTokens: number; erratum?: string }
  | { kind: 'cache'; outcome: CacheOutcome; reusedTokens: number }
  | { kind: 'prefill'; done: number; total: number; tokensPerSecond: number }
  | { kind: 'snap'; L: number; B: number; ms: number; compacted: boolean }
  | { kind: 'notice'; message: string }
  | { kind: 'token'; text: string };

/** Measurements of one answered question (the CLI's stats line). */
export interface AskStats {
  /** Prompt tokens (repository prefix + thread + question). */
  L: number;
  /** Tokens of the repository prefix (head + packed files), the part the cache store keeps uncompressed. */
  prefixTokens: number;
  /**
   * Cells kept per layer and KV head after SnapKV (L with full attention); for an interleaved
   * sliding-window model (Gemma 2/3, Cohere 2, gpt-oss) the global layers', the ones SnapKV compacts.
   */
  B: number;
  /**
   * Interleaved sliding-window models only (issue 17; absent for others): cells the sliding-window
   * layers hold for the sequence after SnapKV, never compacted: the positions the window does not
   * mask at the last one, min(L, n_swa) (`SessionStats.swaCells`, llama.cpp's iSWA cache).
   */
  swaCells?: number;
  /** Interleaved sliding-window models only: the sliding-window layers' window n_swa [tokens] (the model's `nSwa`). */
  swaWindow?: number;
  ratio: number;
  files: number;
  skipped: number;
  /** Earlier turns of the thread left out of the prompt (oldest first) so that the repository keeps its share. */
  droppedTurns: number;
  packMs: number;
  /** How the cache served the question. */
  cache: CacheOutcome;
  /** Tokens restored from the cache instead of prefilled. */
  reusedTokens: number;
  /** Tokens prefilled for this question. */
  prefilledTokens: number;
  /**
   * Restoring the cached state [ms]: reading and checking it (`restoreReadMs`) and putting it into
   * the engine; 0 when nothing was restored (a miss, no cache, a state the engine refused).
   */
  restoreMs: number;
  /** The part of `restoreMs` spent reading and checking the cached state (its file on disk, or the prefix kept in memory, and its index) [ms]. */
  restoreReadMs: number;
  /** This question's prefill calls (prefix and question part), `prefilledTokens` of them [ms]: no restore, wait or cache write. */
  prefillMs: number;
  /** prefilledTokens / prefillMs [tokens/s]; 0 when nothing was prefilled. */
  prefillTokS: number;
  snapMs: number;
  /** Time to first token from the start of the question [ms]. */
  ttftMs: number;
  decodeTokens: number;
  decodeMs: number;
  decodeTokS: number;
  nKvBefore: number;
  nKvAfter: number;
  /** K and V bytes of the sequence before and after SnapKV, exact; an iSWA model's sliding-window layers included. */
  kvBytesBefore: number;
  kvBytesAfter: number;
  snap: boolean;
  stopReason: string;
  /**
   * What the model read and what SnapKV kept of it: every file with its status, tokens and kept
   * share, and a summary (see context-report.ts). Absent for a prepare-only request.
   */
  context?: ContextReport;
  /** With `AskRequest.editBase`: the files changed since it and whether an erratum was used (after-edit.ts). */
  edits?: EditsInfo;
}
