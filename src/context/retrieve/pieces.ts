import { throwIfAborted } from '../errors';
import type { Chunk } from './chunks';

/**
 * The piece of `chunk` from line `startLine` to `endLine` (1-based, inclusive, within the
 * chunk's lines): the same path, name and owner, its lines' text, the chunk's `nameLine` when the
 * piece holds that line, and `partOf` the chunk's own (a piece of a header piece) or else the
 * chunk's lines. Pure.
 */
export function pieceOf(chunk: Chunk, startLine: number, endLine: number): Chunk {
  const lines = chunk.text.split('\n').slice(startLine - chunk.startLine, endLine - chunk.startLine + 1);
  const { nameLine } = chunk;
  return {
    path: chunk.path,
    name: chunk.name,
    ...(chunk.owner !== undefined ? { owner: chunk.owner } : {}),
    startLine,
    ...(nameLine !== undefined && startLine <= nameLine && nameLine <= endLine ? { nameLine } : {}),
    endLine,
    text: lines.join('\n'),
    partOf: chunk.partOf ?? { startLine: chunk.startLine, endLine: chunk.endLine },
  };
}

/**
 * Splits a chunk too large for the retrieval room into consecutive pieces at line boundaries,
 * each as long as `fits` allows (`fits(piece)`: whether the piece's block, header and fence
 * included, fits the room alone; it must not shrink as lines are added, as a token count does
 * not). The first piece starts at the chunk's first line (the definition's signature, or its
 * leading doc comment) and holds the signature: when a chunk with a doc comment (`nameLine`) does
 * not fit from its first line to its name's line, the first piece starts at the latest comment
 * line from which it does (the comment's first lines are then quoted nowhere; the name's line
 * alone when nothing above it fits). Every piece has `partOf` (`pieceOf`) and at least one line
 * (a single line that does not fit is a piece of its own, which the fitter then leaves out). A
 * piece that would end inside a run of lines ends instead before the last blank line of its second
 * half, when there is one (the first piece not before the name's line), and the next starts after
 * the blank lines: only blank lines lie between two pieces. The longest
 * fitting end is found by bisection: about log2(lines) calls of `fits` per piece. Rejects with
 * whatever `fits` throws, and with an AbortError when `signal` aborts (checked before each piece).
 */
export async function piecesToFit(chunk: Chunk, fits: (piece: Chunk) => Promise<boolean>, signal?: AbortSignal): Promise<Chunk[]> {
  const lines = chunk.text.split('\n');
  const blank = (line: number): boolean => /^\s*$/.test(lines[line - chunk.startLine] ?? '');
  const pieces: Chunk[] = [];
  const nameLine = chunk.nameLine ?? chunk.startLine;
  for (let start = chunk.startLine; start <= chunk.endLine; ) {
    throwIfAborted(signal);
    if (pieces.length === 0 && start < nameLine && !(await fits(pieceOf(chunk, start, nameLine)))) {
      // the doc comment pushes the signature out: the earliest start from which both fit, by bisection
      let lo = start + 1;
      let hi = nameLine;
      while (lo < hi) {
        const mid = Math.floor((lo + hi) / 2);
        if (await fits(pieceOf(chunk, mid, nameLine))) hi = mid;
        else lo = mid + 1;
      }
      start = lo;
    }
    // the last end that fits, by bisection over [start, endLine]; start itself when none does
    let lo = start;
    let hi = chunk.endLine;
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      if (await fits(pieceOf(chunk, start, mid))) lo = mid;
      else hi = mid - 1;
    }
    let end = lo;
    if (end < chunk.endLine) {
      for (let b = end + 1; b > start + (end - start + 1) / 2 && (pieces.length > 0 || b > nameLine); b--) {
        if (blank(b) && !blank(b - 1)) {
          end = b - 1;
          break;
        }
      }
    }
    pieces.push(pieceOf(chunk, start, end));
    start = end + 1;
    while (start <= chunk.endLine && blank(start)) start++;
  }
  return pieces;
}
