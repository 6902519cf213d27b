/**
 * A repository's prompt, built by the product's own functions exactly as `askRepository`
 * (src/pipeline/ask.ts) builds it, and its cached prefix state (issue 13, part 3).
 *
 * What runs through which product function:
 * - the layout: `promptLayout` + `tokenizeLayout` (src/prompt/prompt.ts): the model's chat
 *   template split around the repository and the question;
 * - the context size: `defaultContextSize` (the model's training context, at most 8,192), and
 *   the token budget of the files as `answerQuestion` computes it (context − head − the question's
 *   room (`questionReserve`, `threadRoom`) − the answer's tokens);
 * - the files: `packRepository` (src/context/pack.ts) with the package's include patterns and
 *   path order, each section tokenized by the model (`formatFileSection` inside the packer);
 * - the prefix: [head │ file sections] concatenated (`concatTokens`), the part askRepository's
 *   cache store keeps uncompressed;
 * - the question: `threadTokens(model, layout, [{ question }])` (a thread's first turn:
 *   between │ question │ tail), what askRepository prefills after the prefix;
 * - the session: `createSession` with the product's defaults (f16 KV cache, flash attention
 *   `auto`, the product's thread counts), SnapKV's window capture armed (w = 32);
 * - the prefix's state: `EngineSession.saveState` / `loadState` (the product's state files),
 *   kept under bench/.repoqa/state so that a second run (or a resumed one) does not prefill again.
 * test/bench/repoqa.test.ts checks that askRepository prefills exactly these tokens.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { packRepository, type PackResult } from '../../src/context/pack';
import type { EngineModel } from '../../src/engine/model';
import { createSession, type EngineSession, type PrefillProgress, type SessionSnapshot } from '../../src/engine/session';
import { defaultContextSize, questionReserve, threadRoom } from '../../src/pipeline/ask';
import { concatTokens, promptLayout, threadTokens, tokenizeLayout, type LayoutTokens } from '../../src/prompt/prompt';
import { WORK_DIR } from './packages';

/** The packed repository and its prompt prefix. */
export interface RepositoryPrompt {
  /** Repository folder. */
  dir: string;
  layout: LayoutTokens;
  pack: PackResult;
  /** Packed file paths, in prompt order. */
  files: string[];
  /** [head │ file sections] tokens. */
  prefix: Int32Array;
  /** Context size of the session [tokens]. */
  contextSize: number;
}

/**
 * Packs a repository into the product's prompt prefix.
 * @param answerTokens the longest answer [tokens] (askRepository's `answerRoom`, the room kept free for it; its `maxTokens` before the answer room existed)
 * @throws Error when a file of the repository does not fit the token budget (the benchmark
 *   needs every package whole in the context).
 */
export async function repositoryPrompt(model: EngineModel, dir: string, include: readonly string[], answerTokens: number): Promise<RepositoryPrompt> {
  const contextSize = defaultContextSize(model);
  const layout = tokenizeLayout(model, promptLayout(model));
  // answerQuestion's budget for a question that fits its reserve (every question here does)
  const room = threadRoom(contextSize, layout.head.length, answerTokens);
  const questionRoom = Math.min(questionReserve(contextSize), room);
  const tokenBudget = contextSize - (layout.head.length + questionRoom + answerTokens);
  const sections = new Map<string, Int32Array>();
  const pack = await packRepository(dir, {
    include,
    order: 'path',
    tokenBudget,
    countTokens: (text) => {
      const t = model.tokenize(text);
      sections.set(text, t);
      return t.length;
    },
  });
  const over = pack.skipped.filter((s) => s.reason === 'over-budget');
  if (over.length > 0) throw new Error(`${dir}: ${over.map((s) => s.path).join(', ')} do not fit the ${tokenBudget}-token budget of a ${contextSize}-token context`);
  if (pack.files.length === 0) throw new Error(`${dir}: nothing packed with include ${include.join(' ')}`);
  const prefix = concatTokens([layout.head, ...pack.files.map((f) => sections.get(f.text) ?? model.tokenize(f.text))]);
  return { dir, layout, pack, files: pack.files.map((f) => f.path), prefix, contextSize };
}

/** The question's tokens after the prefix (a thread's first turn, as askRepository prefills it). */
export function questionTokens(model: EngineModel, layout: LayoutTokens, question: string): Int32Array {
  return threadTokens(model, layout, [{ question }]);
}

/** SnapKV's observation window of the product's default settings [tokens]. */
export const SNAP_WINDOW = 32;

/** A session with the product's settings for a repository's context. */
export function benchSession(model: EngineModel, contextSize: number): EngineSession {
  return createSession(model, { contextSize, snapWindow: SNAP_WINDOW });
}

/** The prefix's uncompressed state and what it cost. */
export interface PrefixState {
  snapshot: SessionSnapshot;
  /** Prefix tokens. */
  tokens: number;
  /** Wall time of the prefix's prefill [ms] (measured when the state was made, possibly in an earlier run). */
  prefillMs: number;
  /** Whether this call prefilled (false: loaded from the state file). */
  prefilled: boolean;
  /** Wall time of loading the state file [ms] (0 when prefilled). */
  loadMs: number;
}

/** Where the prefix state of a repository lives (without extension: `.state`, `.json`). */
function stateBase(prefix: ArrayLike<number>, modelKey: string, repoKey: string, dir: string): string {
  return path.join(dir, modelKey, `${repoKey}-${tokensHash(prefix)}`);
}

/** What the state's sidecar records about its prefill: tokens, wall time [ms], when; null when absent. */
export function readPrefixMeta(prefix: ArrayLike<number>, modelKey: string, repoKey: string, dir = path.join(WORK_DIR, 'state')): { tokens: number; prefillMs: number; at?: string } | null {
  const meta = `${stateBase(prefix, modelKey, repoKey, dir)}.json`;
  return fs.existsSync(meta) ? (JSON.parse(fs.readFileSync(meta, 'utf8')) as { tokens: number; prefillMs: number; at?: string }) : null;
}

/** SHA-256 of a token sequence (the state file's key). */
export function tokensHash(tokens: ArrayLike<number>): string {
  return createHash('sha256').update(Buffer.from(Int32Array.from(tokens).buffer)).digest('hex').slice(0, 16);
}

/**
 * The repository prefix's state: loaded from `<dir>/<modelKey>/<repo>.state` when its tokens
 * match, else prefilled once (one prefill per repository) and saved. Leaves the session holding
 * the prefix.
 * @param onProgress called after each prefilled chunk (`EngineSession.prefill`'s progress: tokens
 *   done of total, tokens/s so far); not called when the state is loaded
 */
export async function prefixState(
  session: EngineSession,
  prefix: Int32Array,
  modelKey: string,
  repoKey: string,
  dir = path.join(WORK_DIR, 'state'),
  onProgress?: (p: PrefillProgress) => void,
): Promise<PrefixState> {
  const base = stateBase(prefix, modelKey, repoKey, dir);
  const meta = `${base}.json`;
  session.clear();
  if (fs.existsSync(meta) && fs.existsSync(`${base}.state`)) {
    const m = JSON.parse(fs.readFileSync(meta, 'utf8')) as { prefillMs: number; tokens: number };
    try {
      const t0 = performance.now();
      await session.loadState(`${base}.state`);
      const loadMs = performance.now() - t0;
      if (session.position === prefix.length) return { snapshot: await session.snapshot(), tokens: prefix.length, prefillMs: m.prefillMs, prefilled: false, loadMs };
    } catch {
      // a foreign or damaged state (another engine build): prefill again below
    }
    session.clear();
  }
  const t0 = performance.now();
  await session.prefill(prefix, onProgress ? { onProgress } : {});
  const prefillMs = performance.now() - t0;
  fs.mkdirSync(path.dirname(base), { recursive: true });
  await session.saveState(`${base}.state`);
  fs.writeFileSync(meta, JSON.stringify({ tokens: prefix.length, prefillMs, at: new Date().toISOString() }));
  return { snapshot: await session.snapshot(), tokens: prefix.length, prefillMs, prefilled: true, loadMs: 0 };
}
