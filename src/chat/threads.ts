/**
 * The chat's threads, kept per workspace (VS Code's `workspaceState`, or any key-value store
 * of the same shape). Keeps the most recent {@link MAX_THREADS} threads; the active thread is
 * the one the view shows and new questions go to.
 */
import { randomUUID } from 'node:crypto';
import { withoutFiles } from './context-line';
import type { ChatMessage, ChatThread, ThreadSummary } from './protocol';

/** A key-value store like `vscode.Memento`. */
export interface KeyValueStore {
  get<T>(key: string): T | undefined;
  update(key: string, value: unknown): PromiseLike<void>;
}

/** Threads kept per workspace; older ones are dropped. */
export const MAX_THREADS = 50;
/** Characters of the first question used as a thread's title. */
export const TITLE_CHARS = 60;
/**
 * Answers per thread whose Context line keeps its file list (the most recent ones); older
 * answers keep only the summary, so that a long thread's storage stays bounded.
 */
export const MAX_CONTEXT_LISTS = 10;

interface Stored {
  version: 1;
  activeId: string;
  threads: ChatThread[];
}

const KEY = 'reposnap.chat.threads';

/** The threads of one workspace. Changes are saved at once (token appends: see {@link appendText}). */
export class ThreadStore {
  private data: Stored;

  constructor(private readonly store: KeyValueStore) {
    const saved = store.get<Stored>(KEY);
    if (saved && saved.version === 1 && Array.isArray(saved.threads) && saved.threads.length > 0) {
      this.data = saved;
      // an answer that was streaming when the window closed is finished as stopped
      for (const t of this.data.threads) {
        for (const m of t.messages) if (m.role === 'assistant' && !m.stats && !m.error && !m.cancelled) m.cancelled = true;
      }
      if (!this.data.threads.some((t) => t.id === this.data.activeId)) this.data.activeId = this.data.threads[0]!.id;
    } else {
      const t = emptyThread();
      this.data = { version: 1, activeId: t.id, threads: [t] };
    }
  }

  /** The active thread. */
  get active(): ChatThread {
    return this.data.threads.find((t) => t.id === this.data.activeId)!;
  }

  /** Threads, most recent first. */
  summaries(): ThreadSummary[] {
    return this.data.threads.map((t) => ({ id: t.id, title: t.title, createdAt: t.createdAt, messages: t.messages.length }));
  }

  /** A thread by id. */
  get(id: string): ChatThread | undefined {
    return this.data.threads.find((t) => t.id === id);
  }

  /**
   * Starts a new thread and makes it active (the active one is reused when still empty).
   * `forkedFrom` names the engine thread whose turns (question, answer tokens) the seed shows,
   * so that the model sees them too.
   */
  newThread(seed: ChatMessage[] = [], title?: string, forkedFrom?: string): ChatThread {
    let t = this.active;
    if (t.messages.length > 0 || seed.length > 0) {
      t = emptyThread();
      this.data.threads.unshift(t);
      this.data.threads.splice(MAX_THREADS);
    }
    t.messages.push(...seed);
    if (forkedFrom) t.forkedFrom = forkedFrom;
    else delete t.forkedFrom;
    if (title) t.title = title;
    else if (seed[0]) t.title = titleOf(seed[0].text);
    this.data.activeId = t.id;
    this.save();
    return t;
  }

  /** Starts a new empty thread without making it active (another front end's: a `@reposnap` chat session). */
  create(): ChatThread {
    const t = emptyThread();
    this.data.threads.unshift(t);
    this.data.threads.splice(MAX_THREADS);
    if (!this.get(this.data.activeId)) this.data.activeId = t.id;
    this.save();
    return t;
  }

  /** Makes a thread active; false when it does not exist. */
  select(id: string): boolean {
    if (!this.get(id)) return false;
    this.data.activeId = id;
    this.save();
    return true;
  }

  /** Deletes a thread; the most recent other one (or a new empty one) becomes active. */
  delete(id: string): void {
    this.data.threads = this.data.threads.filter((t) => t.id !== id);
    if (this.data.threads.length === 0) this.data.threads.push(emptyThread());
    if (!this.get(this.data.activeId)) this.data.activeId = this.data.threads[0]!.id;
    this.save();
  }

  /** Appends a message to a thread; the first question names the thread. */
  add(threadId: string, message: ChatMessage): void {
    const t = this.get(threadId);
    if (!t) return;
    if (t.messages.length === 0 && message.role === 'user') t.title = titleOf(message.text);
    t.messages.push(message);
    this.save();
  }

  /**
   * Changes a message (answer finished, failed, stopped). A new Context line drops the file
   * lists of the thread's answers older than the last {@link MAX_CONTEXT_LISTS}.
   */
  patch(threadId: string, messageId: string, change: Partial<ChatMessage>): void {
    const t = this.get(threadId);
    const m = t?.messages.find((x) => x.id === messageId);
    if (!t || !m) return;
    Object.assign(m, change);
    if (change.context) trimContexts(t);
    this.save();
  }

  /** Appends streamed text to an answer; saved with the next other change (not per token). */
  appendText(threadId: string, messageId: string, text: string): void {
    const m = this.get(threadId)?.messages.find((x) => x.id === messageId);
    if (m) m.text += text;
  }

  /** Writes everything to the store. */
  save(): void {
    void this.store.update(KEY, this.data);
  }
}

/** Keeps the file lists of the last {@link MAX_CONTEXT_LISTS} Context lines of a thread; older ones keep their summary. */
function trimContexts(t: ChatThread): void {
  let listed = 0;
  for (let i = t.messages.length - 1; i >= 0; i--) {
    const m = t.messages[i]!;
    if (!m.context || m.context.files.length === 0) continue;
    if (++listed > MAX_CONTEXT_LISTS) m.context = withoutFiles(m.context);
  }
}

/** A new empty thread. */
export function emptyThread(): ChatThread {
  return { id: randomUUID(), title: 'New thread', createdAt: Date.now(), messages: [] };
}

/** A thread title from a question: its first line, shortened. */
export function titleOf(text: string): string {
  const line = text.trim().split('\n')[0]!.trim();
  return line.length > TITLE_CHARS ? `${line.slice(0, TITLE_CHARS - 1)}…` : line || 'New thread';
}

/** A new message id. */
export function messageId(): string {
  return randomUUID();
}
