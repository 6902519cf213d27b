/** Debouncing for the file watcher (no VS Code dependency, so that it is testable on its own). */

/**
 * Calls `run` once `delayMs` after the last `poke`; pokes during a run schedule one more run
 * after it. Pure TypeScript (testable without VS Code).
 */
export class Debouncer {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private running = false;
  private again = false;

  constructor(
    private readonly delayMs: number,
    private readonly run: () => Promise<void>,
  ) {}

  /** A change happened. */
  poke(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.fire(), this.delayMs);
  }

  private async fire(): Promise<void> {
    this.timer = undefined;
    this.running = true;
    try {
      await this.run();
    } catch {
      // a failed refresh only means the next question prefills more
    } finally {
      this.running = false;
      if (this.again) {
        this.again = false;
        this.poke();
      }
    }
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
