/**
 * One answer at a time per window, in the order asked: the chat's threads and the inline
 * explanations share one engine process, which answers one request at a time. A request waits
 * for its turn here, before anything of it runs (model resolution included), so that while it
 * waits it shows "waiting for the other answer" rather than another request's progress, and
 * stopping it while it waits drops it without touching the running answer. Plain TypeScript.
 */
import { AbortError } from '../engine/errors';

interface Entry {
  readonly key: string;
  start?: () => void;
}

/** A first-in, first-out turn queue. */
export class AnswerQueue {
  private readonly entries: Entry[] = [];

  /** Requests holding (first) or waiting for a turn, by key, in order. */
  get keys(): string[] {
    return this.entries.map((e) => e.key);
  }

  /** Whether the request `key` waits behind another (false when it runs or is unknown). */
  isWaiting(key: string): boolean {
    const i = this.entries.findIndex((e) => e.key === key);
    return i > 0;
  }

  /**
   * Waits for the turn of request `key`; resolves with the function that ends the turn (call it
   * once, when the request is over, answered or failed). `onWait` is called once when the request
   * has to wait. Rejects with `AbortError`, and leaves the queue, when `signal` aborts first.
   */
  async acquire(key: string, signal?: AbortSignal, onWait?: () => void): Promise<() => void> {
    if (signal?.aborted) throw new AbortError();
    const entry: Entry = { key };
    this.entries.push(entry);
    const release = () => this.release(entry);
    if (this.entries[0] === entry) return release;
    onWait?.();
    await new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        this.remove(entry);
        reject(new AbortError());
      };
      entry.start = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    });
    return release;
  }

  private release(entry: Entry): void {
    this.remove(entry);
  }

  /** Removes `entry`; when it held the turn, the next one starts. */
  private remove(entry: Entry): void {
    const i = this.entries.indexOf(entry);
    if (i < 0) return;
    this.entries.splice(i, 1);
    if (i === 0) this.entries[0]?.start?.();
  }
}
