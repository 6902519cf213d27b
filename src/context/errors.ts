import { AbortError } from '../engine/errors';

/**
 * Returns the error an aborted operation rejects with: RepoSnap's one {@link AbortError}
 * (engine/errors.ts): the signal's `reason` itself when it is one, otherwise a new one whose
 * `cause` is `reason` (what `AbortController.abort()` with no argument gives is a platform
 * `DOMException` named `'AbortError'`; it becomes the cause too). Callers can test
 * `err instanceof AbortError` or `err.name === 'AbortError'`.
 */
export function abortError(reason?: unknown): Error {
  if (reason instanceof AbortError) return reason;
  // the engine's wording: a front end says "cancelled" wherever the abort was seen
  const error = new AbortError();
  if (reason !== undefined) {
    Object.defineProperty(error, 'cause', { value: reason, configurable: true, writable: true });
  }
  return error;
}

/** Throws `abortError(signal.reason)` if `signal` is aborted; does nothing otherwise. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw abortError(signal.reason);
}

/**
 * Resolves or rejects like `promise`, but rejects with an AbortError as soon as `signal`
 * aborts, without waiting for `promise` (whose eventual result is then ignored).
 */
export function raceAbort<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return promise;
  if (signal.aborted) {
    promise.catch(() => undefined);
    return Promise.reject(abortError(signal.reason));
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(abortError(signal.reason));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}

/** The errno code of an fs error (e.g. `'EACCES'`), else its message, else `'unknown error'`. */
export function errorCode(err: unknown): string {
  if (typeof err === 'object' && err !== null) {
    const code = (err as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    const message = (err as { message?: unknown }).message;
    if (typeof message === 'string') return message;
  }
  return 'unknown error';
}

/**
 * An `include` or `exclude` pattern that can never match anything, so that using it would
 * silently pack too much or nothing at all: a `[` that opens a bracket expression without its
 * `]`, an unknown POSIX class (`[[:foo:]]`), a lone backslash at the end, or a line break.
 * `message` is one line that names the option, the pattern (JSON-quoted) and the fix.
 * Thrown by `createIncludeMatcher` / `createExcludeMatcher`, hence by `walkRepository` and
 * `packRepository` before anything is read.
 */
export class PatternError extends Error {
  constructor(
    /** Which option held the pattern. */
    readonly option: 'include' | 'exclude',
    /** The pattern as given. */
    readonly pattern: string,
    /** Why it is refused, e.g. `'[' at column 1 is never closed by ']'`. */
    readonly problem: string,
  ) {
    super(`invalid ${option} pattern ${JSON.stringify(pattern)}: ${problem}`);
    this.name = 'PatternError';
  }
}

/**
 * A question that quotes a file the packer leaves out for its secrets (`quotedFileRefusal`: an
 * explanation of code in `.env`, or in a file holding a credential anywhere), refused before
 * anything is prefilled or saved, so that the quoted code reaches neither the model, its KV
 * cache nor the cache files. `message` names the file and the reason (the rule and where, never
 * the value) and how to bring the file back.
 */
export class SecretRefusedError extends Error {
  constructor(
    /** The quoted file's path, as the question gave it. */
    readonly path: string,
    /** Why: `secret exclude '.env'` or a `secretDetail`. */
    readonly reason: string,
  ) {
    super(
      `${path} is kept out of the prompt (${reason}): RepoSnap does not send a file holding a secret to the model. ` +
        'Move the secret out of the file, or mark a false alarm with a secretlint-disable-line comment (a credential file by name: a negation in the exclude patterns).',
    );
    this.name = 'SecretRefusedError';
  }
}
