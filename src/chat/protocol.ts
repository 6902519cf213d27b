/**
 * Messages between the chat view's webview (media/src/chat.ts) and the extension
 * (src/chat/view.ts), and the chat's data model. The webview is untrusted input: the extension
 * checks each message with {@link parseFromWebview}.
 */
import type { CacheOutcome } from '../host/protocol';
import type { ChatContext } from './context-line';

/** What the badge under an answer shows (from the pipeline's stats). */
export interface AnswerStats {
  /** Prompt tokens. */
  L: number;
  /** Cells kept per layer and KV head (L with full attention). */
  B: number;
  ratio: number;
  snap: boolean;
  files: number;
  packMs: number;
  prefillMs: number;
  prefillTokS: number;
  snapMs: number;
  decodeMs: number;
  decodeTokens: number;
  decodeTokS: number;
  ttftMs: number;
  cache: CacheOutcome;
  /** Earlier turns of the thread left out of the prompt (absent in answers saved before it existed). */
  droppedTurns?: number;
  /** Interleaved sliding-window models only (`AskStats.swaCells`): cells the sliding-window layers hold; B counts the global layers. */
  swaCells?: number;
  /** Interleaved sliding-window models only: the sliding-window layers' window [tokens]. */
  swaWindow?: number;
}

/**
 * What an action button of an error card (or of the welcome card) does: choose a GGUF file
 * (`reposnap.selectModel`), use a close match of a missing model file (`path`), open the Settings
 * editor at `setting`, ask the question again, start a new thread, show the RepoSnap log, open a
 * folder, download the default model (confirmed once).
 */
export type ErrorActionKind = 'selectModel' | 'useModel' | 'openSettings' | 'retry' | 'newThread' | 'showLog' | 'openFolder' | 'downloadModel';

/** One button of a card. */
export interface ErrorAction {
  kind: ErrorActionKind;
  /** The button's text ("Open Settings (reposnap.contextSize)"). */
  label: string;
  /** `openSettings`: the setting's full key (`reposnap.contextSize`). */
  setting?: string;
  /** `useModel`: the model file's absolute path. */
  path?: string;
}

/** A failure as the chat shows it (src/chat/errors.ts `errorCard`). */
export interface ErrorCard {
  title: string;
  /** The error's message, worded for the editor. */
  text: string;
  actions: ErrorAction[];
}

/** Id of the welcome card in `action` messages (it belongs to no message). */
export const WELCOME_CARD_ID = 'welcome';

/** One message of a thread. */
export interface ChatMessage {
  id: string;
  role: 'user' | 'assistant';
  /** Markdown (answers) or plain text (questions). */
  text: string;
  /** Set on a finished answer. */
  stats?: AnswerStats;
  /** What the model read and what SnapKV kept (the Context line; absent in answers saved before it existed). */
  context?: ChatContext;
  /** Why the answer failed (engine crash, bad model, …). */
  error?: string;
  /** The failure as a card with actions (answers saved before cards existed have only `error`). */
  errorCard?: ErrorCard;
  /** The answer was stopped by the user. */
  cancelled?: boolean;
}

/** A conversation; questions in it share a `threadId` in the engine. */
export interface ChatThread {
  id: string;
  title: string;
  createdAt: number;
  messages: ChatMessage[];
  /** The engine thread this one was started from (`explain:<key>`): its turns are the start of this one's. */
  forkedFrom?: string;
}

/** A thread in the thread list. */
export interface ThreadSummary {
  id: string;
  title: string;
  createdAt: number;
  messages: number;
}

/** What is happening while an answer is being prepared. */
export interface ChatProgress {
  phase: 'model' | 'download' | 'pack' | 'prefill' | 'snap' | 'decode';
  /** 0..100 where known. */
  percent?: number;
  tokensPerSecond?: number;
  /** Human-readable line (`prefill 43 % · 1,250 tok/s`). */
  label: string;
}

/** Everything the view shows; sent whole on `ready` and after thread changes. */
export interface ChatViewState {
  threads: ThreadSummary[];
  active: ChatThread;
  /**
   * The active thread's answer being streamed, if any; `waiting` while it is queued behind
   * another thread's answer (one answer at a time per window).
   */
  busy?: { messageId: string; progress?: ChatProgress; waiting?: boolean };
  /** Shown while no model is chosen (src/chat/welcome.ts): the welcome card and its actions. */
  welcome?: ErrorCard;
  /** Model name shown in the header, or empty when none is set. */
  model: string;
}

/** Extension → webview. */
export type ToWebview =
  | { type: 'state'; state: ChatViewState }
  | { type: 'progress'; messageId: string; progress: ChatProgress }
  | { type: 'token'; messageId: string; text: string }
  | { type: 'done'; messageId: string; stats: AnswerStats; context?: ChatContext }
  | { type: 'failed'; messageId: string; error?: string; errorCard?: ErrorCard; cancelled?: boolean }
  | { type: 'focusInput' };

/** Webview → extension. */
export type FromWebview =
  | { type: 'ready' }
  | { type: 'ask'; text: string }
  | { type: 'stop' }
  | { type: 'newThread' }
  | { type: 'selectThread'; id: string }
  | { type: 'deleteThread'; id: string }
  | { type: 'openFile'; path: string; line?: number; column?: number }
  | { type: 'openExternal'; url: string }
  | { type: 'copy'; text: string }
  /** A card's button: `messageId` is the failed answer's id (or {@link WELCOME_CARD_ID}), `index` the action's. */
  | { type: 'action'; messageId: string; index: number }
  /** Ask an answer's question again (the Retry under each answer). */
  | { type: 'retry'; messageId: string };

const isObj = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);
const isPosInt = (x: unknown): x is number => typeof x === 'number' && Number.isInteger(x) && x >= 1;

/** Longest question the view accepts [characters]. */
export const MAX_QUESTION_CHARS = 20_000;

/**
 * Checks a message from the webview: known type, fields of the right types, no extra
 * surprises (line numbers are positive integers, questions non-empty and bounded). Returns a
 * clean copy, or undefined.
 */
export function parseFromWebview(x: unknown): FromWebview | undefined {
  if (!isObj(x) || typeof x.type !== 'string') return undefined;
  switch (x.type) {
    case 'ready':
    case 'stop':
    case 'newThread':
      return { type: x.type };
    case 'ask': {
      if (typeof x.text !== 'string') return undefined;
      const text = x.text.trim();
      if (text.length === 0 || text.length > MAX_QUESTION_CHARS) return undefined;
      return { type: 'ask', text };
    }
    case 'selectThread':
    case 'deleteThread':
      return typeof x.id === 'string' && x.id.length > 0 ? { type: x.type, id: x.id } : undefined;
    case 'openFile': {
      if (typeof x.path !== 'string' || x.path.length === 0 || x.path.includes('\0')) return undefined;
      if (x.line !== undefined && !isPosInt(x.line)) return undefined;
      if (x.column !== undefined && !isPosInt(x.column)) return undefined;
      const m: FromWebview = { type: 'openFile', path: x.path };
      if (x.line !== undefined) m.line = x.line;
      if (x.column !== undefined) m.column = x.column;
      return m;
    }
    case 'openExternal':
      return typeof x.url === 'string' && /^https?:\/\//i.test(x.url) ? { type: 'openExternal', url: x.url } : undefined;
    case 'copy':
      return typeof x.text === 'string' ? { type: 'copy', text: x.text } : undefined;
    case 'action':
      return typeof x.messageId === 'string' && x.messageId.length > 0 && typeof x.index === 'number' && Number.isInteger(x.index) && x.index >= 0 && x.index < 16
        ? { type: 'action', messageId: x.messageId, index: x.index }
        : undefined;
    case 'retry':
      return typeof x.messageId === 'string' && x.messageId.length > 0 ? { type: 'retry', messageId: x.messageId } : undefined;
    default:
      return undefined;
  }
}

/** A model download's progress as the chat's progress line (`downloading the model 43 % · 482 / 1,120 MB`). */
export function downloadProgressOf(p: { phase: 'download' | 'verify'; downloadedBytes: number; totalBytes: number }): ChatProgress {
  const percent = p.totalBytes > 0 ? (100 * p.downloadedBytes) / p.totalBytes : undefined;
  const mb = (b: number) => Math.round(b / 1e6).toLocaleString('en-US');
  const verb = p.phase === 'verify' ? 'checking the model (SHA-256)' : 'downloading the model';
  return {
    phase: 'download',
    ...(percent === undefined ? {} : { percent }),
    label: `${verb}${percent === undefined ? '' : ` ${Math.floor(percent)} %`} · ${mb(p.downloadedBytes)}${p.totalBytes > 0 ? ` / ${mb(p.totalBytes)}` : ''} MB`,
  };
}

/** Formats a duration for the badge: `850 ms`, `1.6 s`, `2 min 5 s`. */
export function formatMs(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)} min ${s % 60} s`;
}

/**
 * The badge line under an answer: `L 2,004 → B 1,024 (0.51) · prefill 1.6 s · snap 17 ms ·
 * decode 0.2 s · cache miss` (`full attention` instead of the ratio when SnapKV was off), then
 * `· 3 oldest turns left out` when the thread was trimmed to leave the repository its share. For
 * an interleaved sliding-window model (Gemma 3) B counts the global layers, and `· sliding layers
 * 512 cells (window 512)` follows it (issue 17).
 */
export function badgeText(s: AnswerStats): string {
  const n = (x: number) => x.toLocaleString('en-US');
  const kv = s.snap && s.B < s.L ? `L ${n(s.L)} → B ${n(s.B)} (${s.ratio.toFixed(2)})` : `L ${n(s.L)} → B ${n(s.B)} (full attention)`;
  const dropped = s.droppedTurns ? [`${s.droppedTurns} oldest turn${s.droppedTurns === 1 ? '' : 's'} left out`] : [];
  // an interleaved sliding-window model: B is the global layers'; the sliding layers keep their window
  const swa = s.swaWindow !== undefined ? [`sliding layers ${n(s.swaCells ?? 0)} cells (window ${n(s.swaWindow)})`] : [];
  return [kv, ...swa, `prefill ${formatMs(s.prefillMs)}`, `snap ${formatMs(s.snapMs)}`, `decode ${formatMs(s.decodeMs)}`, `cache ${s.cache}`, ...dropped].join(' · ');
}
