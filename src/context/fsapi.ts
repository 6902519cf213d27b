import fs, { type Dirent, type Stats } from 'node:fs';

/**
 * An open file, as the packer uses it: the subset of `fs.promises.FileHandle` it calls.
 * Errors are Node's fs errors (with `code`, e.g. `'EIO'`).
 */
export interface ContextFileHandle {
  /** `fstat` of the open file. */
  stat(): Promise<Stats>;
  /** Reads up to `length` bytes at file offset `position` into `buffer[offset..]`. */
  read(buffer: Uint8Array, offset: number, length: number, position: number): Promise<{ bytesRead: number }>;
  /** Closes the file; the packer ignores its errors. */
  close(): Promise<void>;
}

/**
 * Every file-system call the packer makes, so that tests (and hosts with a virtual file
 * system) can substitute one. `fs.promises` fits it too. All paths are absolute, in the platform's syntax. Each method
 * rejects with a Node fs error (an object with a string `code`) on failure; the packer
 * turns those into manifest entries (`'unreadable'`, `'vanished'`, ...).
 */
export interface ContextFs {
  /** Lists a directory with entry types (`fs.promises.readdir(path, { withFileTypes: true })`). */
  readdir(path: string): Promise<Dirent[]>;
  /** `lstat`: never follows a final symlink. */
  lstat(path: string): Promise<Stats>;
  /** Resolves every symlink in `path` (`fs.promises.realpath`); ELOOP for cycles. */
  realpath(path: string): Promise<string>;
  /** The target text of a symlink, verbatim (`fs.promises.readlink`). */
  readlink(path: string): Promise<string>;
  /** Opens a file with numeric `flags` (`fs.constants.O_*`). */
  open(path: string, flags: number): Promise<ContextFileHandle>;
}

/**
 * The real file system. Built on Node's callback API (about 20% faster than
 * `fs.promises.FileHandle` for many small files); `realpath` is the native one, which reports
 * symlink cycles as ELOOP.
 */
export const nodeFs: ContextFs = {
  readdir: (p) => call<Dirent[]>((done) => fs.readdir(p, { withFileTypes: true }, done)),
  lstat: (p) => call<Stats>((done) => fs.lstat(p, done)),
  realpath: (p) => call<string>((done) => fs.realpath.native(p, done)),
  readlink: (p) => call<string>((done) => fs.readlink(p, done)),
  open: async (p, flags) => {
    const fd = await call<number>((done) => fs.open(p, flags, done));
    return {
      stat: () => call<Stats>((done) => fs.fstat(fd, done)),
      read: (buffer, offset, length, position) =>
        call<number>((done) => fs.read(fd, buffer, offset, length, position, done)).then((bytesRead) => ({ bytesRead })),
      close: () => call<void>((done) => fs.close(fd, (err) => done(err, undefined))),
    };
  },
};

function call<T>(start: (done: (err: NodeJS.ErrnoException | null, value: T) => void) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => start((err, value) => (err ? reject(err) : resolve(value))));
}

/**
 * Runs async tasks with at most `concurrency` of them in flight (FIFO). Used to bound the
 * number of outstanding fs calls, which otherwise grows with the size of the repository.
 */
export class Limiter {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  /** `concurrency` must be an integer ≥ 1. */
  constructor(private readonly concurrency: number) {
    if (!Number.isInteger(concurrency) || concurrency < 1) throw new RangeError(`concurrency must be an integer >= 1, got ${concurrency}`);
  }

  /** Runs `task` when a slot is free; resolves or rejects like it. */
  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.active >= this.concurrency) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.active++;
    try {
      return await task();
    } finally {
      this.active--;
      this.waiting.shift()?.();
    }
  }
}

/**
 * Returns a function that yields to the event loop (one `setImmediate` turn, so timers, I/O
 * and signal handlers run) when at least `ms` milliseconds have passed since it last did, and
 * otherwise returns `undefined` without waiting. Long loops call it once per step:
 * `await maybeYield()` (awaiting `undefined` costs only a microtask).
 */
export function createYielder(ms: number): () => Promise<void> | undefined {
  let last = performance.now();
  return () => {
    const now = performance.now();
    if (now - last < ms) return undefined;
    return new Promise<void>((resolve) =>
      setImmediate(() => {
        last = performance.now();
        resolve();
      }),
    );
  };
}
