/**
 * Where an explanation goes (issue 14, section 3): its comment thread is anchored at the first
 * line of the explained range, so that explaining a class shows the answer under the class's
 * first line (a thread at the range's end sits below the last line, off screen for anything
 * longer than the viewport); one thread per explained symbol (or selection), reused when the
 * same code is explained again; and how far the editor scrolls to show it.
 * Plain TypeScript over line/character pairs: `vscode.Range` and `vscode.Position` fit.
 */

/** A zero-based position, as `vscode.Position` has it. */
export interface LineCharacter {
  line: number;
  character: number;
}

/** A range of a document, as `vscode.Range` has it (start ≤ end). */
export interface LineRange {
  start: LineCharacter;
  end: LineCharacter;
}

/**
 * The line an explanation's comment thread is anchored at: the range's first line (VS Code
 * draws a comment thread under its anchor's last line, so an empty range at the start puts
 * the answer right under the symbol's first line).
 */
export function anchorLine(range: LineRange): number {
  return range.start.line;
}

/**
 * The key of the one thread an explanation reuses: the document and the symbol's qualified
 * name (`symbolPath`, from the CodeLens: the same symbol keeps its key while
 * lines above it are edited), or the document and the selection's exact range when there is
 * no symbol. `documentUri` is the document's URI as a string.
 */
export function explanationKey(documentUri: string, range: LineRange, symbolPath?: string): string {
  if (symbolPath) return `${documentUri}#symbol:${symbolPath}`;
  const { start: s, end: e } = range;
  return `${documentUri}#range:${s.line}:${s.character}-${e.line}:${e.character}`;
}

/**
 * Whether the editor must scroll to show a thread anchored at `line`: the thread widget opens
 * under the anchor line, so the line must be on screen and in the upper half of what is
 * visible (lower down the widget falls below the viewport). `visible` is the editor's first
 * visible range (`TextEditor.visibleRanges[0]`); no range (not known) means scroll.
 */
export function needsScroll(line: number, visible: LineRange | undefined): boolean {
  if (!visible) return true;
  const top = visible.start.line;
  const bottom = visible.end.line;
  if (line < top || line > bottom) return true;
  return line > top + Math.floor((bottom - top) / 2);
}
