/**
 * One VS Code chat session ↔ one RepoSnap thread (issue 32, item 1). VS Code's chat API gives a
 * participant no session id: the session is its `context.history` (`vscode.ChatContext.history`,
 * `ChatRequestTurn` and `ChatResponseTurn` objects). Each answer of `@reposnap` returns its
 * RepoSnap thread and message id in `ChatResult.metadata` ({@link TurnMetadata}), which VS Code
 * hands back in the history's response turns; the next request finds its thread there and checks
 * the history against the thread's turns. When the chat's turns were edited or removed the engine
 * thread holds turns the chat no longer shows, so the question starts a new RepoSnap thread (the
 * repository prefix is still cached: only the thread's turns are new). Plain TypeScript: no
 * `vscode` import, tests map histories directly.
 */

/** What `@reposnap` keeps in each answer's `ChatResult.metadata`. */
export interface TurnMetadata {
  /** The RepoSnap thread (src/chat/threads.ts) the answer belongs to. */
  threadId: string;
  /** The answer's message id in that thread; absent for answers that asked nothing (`/stats`, `/new`). */
  messageId?: string;
  /** The slash command of the request (`explain`, `stats`, `new`), when one was used. */
  command?: string;
}

/** One `@reposnap` turn of a chat's history: the request's text and the answer's metadata. */
export interface HistoryTurn {
  prompt: string;
  command?: string;
  /** The answer's metadata; absent when the response carried none (another participant's, or an error before it ran). */
  metadata?: TurnMetadata;
}

/** A turn of a RepoSnap thread: its question and the answer's message id. */
export interface ThreadTurn {
  question: string;
  answerId: string;
}

/** What a request does with its thread. */
export type ThreadChoice =
  | { kind: 'continue'; threadId: string }
  /** A new thread; `reason` says why the last one is not continued (shown to the user), absent for a first question. */
  | { kind: 'new'; reason?: string };

const isObj = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null;

/** The `TurnMetadata` in a `ChatResult.metadata`, or undefined when it is not one. */
export function turnMetadata(x: unknown): TurnMetadata | undefined {
  if (!isObj(x) || typeof x.threadId !== 'string') return undefined;
  return {
    threadId: x.threadId,
    ...(typeof x.messageId === 'string' ? { messageId: x.messageId } : {}),
    ...(typeof x.command === 'string' ? { command: x.command } : {}),
  };
}

/**
 * The `@reposnap` turns of `context.history`, oldest first: each `ChatRequestTurn` (it has
 * `prompt`) of `participantId` paired with the `ChatResponseTurn` after it (it has `result`). The
 * turns are read by shape, so the function runs without `vscode`.
 */
export function participantTurns(history: readonly unknown[], participantId: string): HistoryTurn[] {
  const out: HistoryTurn[] = [];
  for (const turn of history) {
    if (!isObj(turn) || turn.participant !== participantId) continue;
    if (typeof turn.prompt === 'string') {
      out.push({ prompt: turn.prompt, ...(typeof turn.command === 'string' ? { command: turn.command } : {}) });
    } else if (isObj(turn.result) && out.length > 0 && out[out.length - 1]!.metadata === undefined) {
      const m = turnMetadata(turn.result.metadata);
      if (m) out[out.length - 1]!.metadata = m;
    }
  }
  return out;
}

/**
 * The thread a new request continues: the thread of the history's last `@reposnap` answer, when
 * the history's answers in it are exactly the thread's turns (same message ids in the same order,
 * and each plain question's text the thread's question). Otherwise a new thread, with the reason:
 * the thread is gone (deleted in the RepoSnap view, or the workspace's threads were trimmed), or a
 * turn was edited or removed in the chat. `threadTurns` gives a thread's turns (undefined: no such
 * thread).
 */
export function chooseThread(turns: readonly HistoryTurn[], threadTurns: (threadId: string) => ThreadTurn[] | undefined): ThreadChoice {
  const last = [...turns].reverse().find((t) => t.metadata !== undefined)?.metadata;
  if (!last) return { kind: 'new' };
  const thread = threadTurns(last.threadId);
  if (!thread) return { kind: 'new', reason: 'The RepoSnap thread of this chat no longer exists: this question starts a new one.' };
  const shown = turns.filter((t) => t.metadata?.threadId === last.threadId && t.metadata.messageId !== undefined);
  const mismatch = (i: number) => `Turn ${i + 1} of this chat's RepoSnap thread was edited or removed: this question starts a new thread, so that the model does not read turns the chat no longer shows (the repository stays cached).`;
  for (let i = 0; i < Math.max(shown.length, thread.length); i++) {
    const h = shown[i];
    const t = thread[i];
    if (!h || !t || h.metadata!.messageId !== t.answerId) return { kind: 'new', reason: mismatch(i) };
    // a plain question is asked as typed; a slash command's question is built from it (/explain's code)
    if (h.command === undefined && h.prompt.trim() !== t.question.trim()) return { kind: 'new', reason: mismatch(i) };
  }
  return { kind: 'continue', threadId: last.threadId };
}
