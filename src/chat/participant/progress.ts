/**
 * The progress lines `@reposnap` shows while it answers (`stream.progress`: packing, prefill
 * percent, SnapKV), from the pipeline's events through the webview's own wording (src/chat/view.ts
 * `progressOf`). Each `stream.progress` call adds a line to the Chat view (the previous one is
 * shown done), so lines are thinned: a new phase always shows, a prefill only at each further
 * {@link PREFILL_STEP_PERCENT}, packing once per stage (walk, read, tokenize). Plain TypeScript over the labels.
 */
import type { ChatProgress } from '../protocol';

/** Prefill progress is shown at each multiple of this [percent]. */
export const PREFILL_STEP_PERCENT = 25;

/** Thins progress lines for the Chat view; one per answer. */
export class ProgressLines {
  private lastPhase: string | undefined;
  private readonly packStages = new Set<string>();
  private lastStep = -1;

  /** The line to show for `p`, or undefined when it adds too little to the last one shown. */
  next(p: ChatProgress | undefined): string | undefined {
    if (!p) return undefined;
    const phaseChanged = p.phase !== this.lastPhase;
    this.lastPhase = p.phase;
    if (p.phase === 'pack') {
      // "packing the repository: read 3 / 40 files": a line the first time each stage (walk, read,
      // tokenize, …) shows, not per file (the packer interleaves read and tokenize file by file)
      const stage = /: (\w+)/.exec(p.label)?.[1] ?? '';
      if (this.packStages.has(stage)) return undefined;
      this.packStages.add(stage);
      return p.label;
    }
    if (p.phase === 'prefill' && p.percent !== undefined) {
      const step = Math.floor(p.percent / PREFILL_STEP_PERCENT);
      // the 0 % lines (packed, cache restored) always show: they say what happens next
      if (!phaseChanged && p.percent > 0 && step <= this.lastStep) return undefined;
      this.lastStep = Math.max(p.percent > 0 ? step : this.lastStep, this.lastStep);
      return p.label;
    }
    return p.label;
  }
}
