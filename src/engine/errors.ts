/**
 * Errors of the engine layer. Messages say what failed and what to try; the CLI prints
 * `message` alone (no stack) for these.
 */

/** Base class: an error whose message is meant for the user. */
export class EngineError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EngineError';
  }
}

/** The model file is missing, unreadable, or not a model llama.cpp can load. */
export class ModelLoadError extends EngineError {
  constructor(message: string) {
    super(message);
    this.name = 'ModelLoadError';
  }
}

/** The prompt does not fit the context (tokens > context size). */
export class ContextOverflowError extends EngineError {
  constructor(message: string) {
    super(message);
    this.name = 'ContextOverflowError';
  }
}

/** SnapKV refused to compact (a guard: SWA, ALiBi, shared cells, …); the cache is unchanged. */
export class SnapRefusedError extends EngineError {
  constructor(message: string, readonly code: number) {
    super(message);
    this.name = 'SnapRefusedError';
  }
}

/** Work cancelled through an AbortSignal. */
export class AbortError extends Error {
  constructor(message = 'cancelled') {
    super(message);
    this.name = 'AbortError';
  }
}

/** Throws AbortError if the signal is aborted. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new AbortError();
}
