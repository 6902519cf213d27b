/**
 * One question about a repository, end to end (DESIGN.md § 1):
 * pack → tokenize → prefill → SnapKV → decode, with progress, cancellation and timings.
 * Used by the CLI and the extension; knows nothing about either.
 */
import { packRepository, type PackResult } from '../context/pack';
import { AbortError, EngineError } from '../engine/errors';
import type { EngineModel } from '../engine/model';
import { createSession, type EngineSession, type SessionOptions } from '../engine/session';
import { concatPrompt, promptLayout, tokenizeLayout } from '../prompt/prompt';

/** SnapKV settings of a question; `enabled: false` answers with full attention. */
export interface SnapSettings {
  enabled: boolean;
  /** Observation window w [tokens]. Default 32. */
  window: number;
  /** Budget B [cells per layer and KV head], window included. Default 1024. */
  budget: number;
  /** Pooling kernel (odd). Default 7. */
  kernel: number;
  pooling: 'max' | 'avg';
}

/** Defaults from the SnapKV paper and its reference implementation (DESIGN.md § 3). */
export const DEFAULT_SNAP: SnapSettings = { enabled: true, window: 32, budget: 1024, kernel: 7, pooling: 'max' };

/** Inputs of {@link askRepository}. */
export interface AskRequest {
  repo: string;
  question: string;
  model: EngineModel;
  snap: SnapSettings;
  /** Context size [tokens]; default min(model's training context, 8192). */
  contextSize?: number;
  maxTokens?: number;
  temperature?: number;
  topP?: number;
  seed?: number;
  session?: Omit<SessionOptions, 'contextSize' | 'snapWindow'>;
  /** Per-file size cap [bytes]. */
  maxFileBytes?: number;
  signal?: AbortSignal;
}

/** Progress events, in order. */
export type AskEvent =
  | { kind: 'pack'; phase: 'walk' | 'read' | 'tokenize'; done: number; total?: number }
  | { kind: 'packed'; pack: PackResult; promptTokens: number }
  | { kind: 'prefill'; done: number; total: number; tokensPerSecond: number }
  | { kind: 'snap'; L: number; B: number; ms: number; compacted: boolean }
  | { kind: 'notice'; message: string }
  | { kind: 'token'; text: string };

/** Measurements of one answered question (the CLI's stats line). */
export interface AskStats {
  /** Prompt tokens (repository prefix + question). */
  L: number;
  /** Cells kept per layer and KV head after SnapKV (L with full attention). */
  B: number;
  ratio: number;
  files: number;
  skipped: number;
  packMs: number;
  prefillMs: number;
  prefillTokS: number;
  snapMs: number;
  /** Time to first token from the start of the question [ms]. */
  ttftMs: number;
  decodeTokens: number;
  decodeMs: number;
  decodeTokS: number;
  nKvBefore: number;
  nKvAfter: number;
  kvBytesBefore: number;
  kvBytesAfter: number;
  snap: boolean;
  stopReason: string;
}

/** Context size used when none is given: the model's training context, at most 8192 tokens. */
export function defaultContextSize(model: EngineModel): number {
  const train = model.info.nCtxTrain > 0 ? model.info.nCtxTrain : 4096;
  return Math.min(train, 8192);
}

/**
 * Answers one question. Calls `onEvent` for progress and each text piece.
 * @throws EngineError for user-facing failures (context too small, …); AbortError on cancel.
 */
export async function askRepository(req: AskRequest, onEvent: (e: AskEvent) => void): Promise<AskStats> {
  const t0 = performance.now();
  const model = req.model;
  const contextSize = req.contextSize ?? defaultContextSize(model);
  const maxTokens = req.maxTokens ?? 256;

  const layout = promptLayout(model);
  const fixed = tokenizeLayout(model, layout);
  const question = model.tokenize(req.question);
  const reserve = fixed.head.length + fixed.between.length + question.length + fixed.tail.length + maxTokens;
  const tokenBudget = contextSize - reserve;
  if (tokenBudget < 0) {
    throw new EngineError(
      `the context (${contextSize} tokens) is too small for the question and the answer (${reserve} tokens): raise --context-size or lower --max-tokens`,
    );
  }
  if (req.snap.enabled && question.length + fixed.tail.length < req.snap.window) {
    onEvent({ kind: 'notice', message: `the question is shorter than the observation window (${req.snap.window} tokens): the window also covers the end of the repository` });
  }

  // tokenize each file section once: the budget is exact and the prompt is the concatenation
  const sectionTokens = new Map<string, Int32Array>();
  const pack = await packRepository(req.repo, {
    tokenBudget,
    maxFileBytes: req.maxFileBytes,
    signal: req.signal,
    countTokens: (text) => {
      const t = model.tokenize(text);
      sectionTokens.set(text, t);
      return t.length;
    },
    onProgress: (p) => onEvent({ kind: 'pack', ...p }),
  });
  const files = pack.files.map((f) => sectionTokens.get(f.text) ?? model.tokenize(f.text));
  const prompt = concatPrompt({ ...fixed, files, question });
  const packMs = performance.now() - t0;
  onEvent({ kind: 'packed', pack, promptTokens: prompt.length });

  const session = createSession(model, { ...req.session, contextSize, snapWindow: req.snap.enabled ? req.snap.window : 0 });
  try {
    return await answer(session, req, prompt, pack, packMs, t0, maxTokens, onEvent);
  } finally {
    session.dispose();
  }
}

async function answer(
  session: EngineSession,
  req: AskRequest,
  prompt: Int32Array,
  pack: PackResult,
  packMs: number,
  t0: number,
  maxTokens: number,
  onEvent: (e: AskEvent) => void,
): Promise<AskStats> {
  const tp = performance.now();
  await session.prefill(prompt, { signal: req.signal, onProgress: (p) => onEvent({ kind: 'prefill', ...p }) });
  const prefillMs = performance.now() - tp;
  const before = session.stats();

  let B = prompt.length;
  let snapMs = 0;
  if (req.snap.enabled) {
    if (req.signal?.aborted) throw new AbortError();
    try {
      const r = await session.snap({ window: req.snap.window, budget: req.snap.budget, kernel: req.snap.kernel, pooling: req.snap.pooling });
      B = r.B;
      snapMs = r.ms;
      onEvent({ kind: 'snap', L: r.L, B: r.B, ms: r.ms, compacted: r.compacted });
    } catch (e) {
      if (!(e instanceof EngineError)) throw e;
      onEvent({ kind: 'notice', message: `${e.message}; answering with full attention` });
    }
  }
  const after = session.stats();

  let ttftMs = 0;
  let first = true;
  const td = performance.now();
  const gen = session.generate({
    maxTokens,
    sampling: { temperature: req.temperature ?? 0, topP: req.topP, seed: req.seed },
    signal: req.signal,
  });
  let summary;
  for (;;) {
    const r = await gen.next();
    if (r.done) {
      summary = r.value;
      break;
    }
    if (first) {
      ttftMs = performance.now() - t0;
      first = false;
    }
    onEvent({ kind: 'token', text: r.value });
  }
  const decodeMs = performance.now() - td;
  if (summary.reason === 'aborted') throw new AbortError();

  return {
    L: prompt.length,
    B,
    ratio: B / prompt.length,
    files: pack.files.length,
    skipped: pack.skipped.length,
    packMs,
    prefillMs,
    prefillTokS: prompt.length / (prefillMs / 1000),
    snapMs,
    ttftMs,
    decodeTokens: summary.tokens,
    decodeMs,
    decodeTokS: summary.tokens > 0 ? summary.tokens / (decodeMs / 1000) : 0,
    nKvBefore: before.nKv,
    nKvAfter: after.nKv,
    kvBytesBefore: before.kvBytes,
    kvBytesAfter: after.kvBytes,
    snap: req.snap.enabled,
    stopReason: summary.reason,
  };
}
