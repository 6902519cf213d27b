/**
 * Repository text in terminal output: file names and symlink targets come from the repository
 * and may hold characters a terminal acts on instead of printing (an escape sequence that sets the
 * window title, clears the screen or recolours what follows; a bidirectional override that shows a
 * name reversed). The CLI writes every such string through these functions, so that a hostile
 * repository cannot drive the terminal of whoever packs it. The model's answer, which may copy
 * such text from the repository, goes through {@link ControlFilter} (docs/cli.md, "The answer on the terminal").
 */

import ansiRegex from 'ansi-regex';
// the bidirectional controls (embeddings, overrides, isolates, marks): the chat view shows them, the terminal loses them
import { BIDI_CONTROLS } from '../chat/bidi';


/**
 * Characters a terminal may act on rather than print: the C0 controls (U+0000–U+001F, ESC among
 * them), DEL (U+007F), the C1 controls (U+0080–U+009F; U+009B is a CSI on some terminals) and the
 * bidirectional controls ({@link BIDI_CONTROLS}).
 */
const UNSAFE = new RegExp(`[\\u0000-\\u001f\\u007f-\\u009f${BIDI_CONTROLS}]`, 'gu');
/** {@link UNSAFE} without the global flag, for a stateless `test`. */
const HAS_UNSAFE = new RegExp(UNSAFE.source, 'u');

/** `\uXXXX` for one UTF-16 code unit. */
const uEscape = (c: string): string => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/**
 * `text` with every character of {@link UNSAFE} written as `\uXXXX` (lowercase hex), the rest
 * unchanged. For free text around a path (a left-out file's detail, a notice). Pure.
 */
export function escapeControls(text: string): string {
  return text.replace(UNSAFE, uEscape);
}

/**
 * A path as-is, or in double quotes when it holds whitespace, a double quote, a backslash or a
 * character of {@link UNSAFE}: JSON's escapes (`\n`, `\"`, `\\`, `\u001b`, …) and `\uXXXX` for the
 * C1 controls and bidirectional controls JSON leaves as they are. Pure.
 */
export function quotePath(p: string): string {
  return /[\s"\\]/u.test(p) || HAS_UNSAFE.test(p) ? JSON.stringify(p).replace(UNSAFE, uEscape) : p;
}

/**
 * A message that names `p` (a path the user gave, or one derived from it): every occurrence of
 * `p` written as {@link quotePath} writes it, the rest through {@link escapeControls}. For
 * messages built elsewhere (the cache store's warnings) that hold the path raw. Pure.
 */
export function quotePathIn(message: string, p: string): string {
  if (p === '') return escapeControls(message);
  return message.split(p).map(escapeControls).join(quotePath(p));
}

/**
 * How the CLI writes text that a model produced or a repository holds (the streamed answer):
 * - `tty` (stdout is a terminal): escape sequences (ECMA-48's CSI, OSC, DCS, SOS, PM, APC and
 *   two-byte escapes, introduced by ESC or by their 8-bit C1 forms) are removed whole, and every
 *   other C0 control, DEL and C1 control except `\n` and `\t` is removed, and every bidirectional
 *   control ({@link BIDI_CONTROLS}): no colour, cursor move, title, OSC 8 link, OSC 52 clipboard
 *   write, bell, backspace, carriage return (which could overwrite a line already shown) or
 *   reordering of the text shown reaches the terminal;
 * - `pipe` (stdout is a pipe or a file): the text is kept as it is, carriage returns, bells and
 *   backspaces included, except escape sequences, removed whole, and lone ESC, C1 characters and
 *   bidirectional controls, removed too, so that a file of the answer shown later with `cat` or
 *   `less -R` cannot drive a terminal, nor show its lines reordered, either;
 * - `raw` (`--raw`): unchanged.
 */
export type ControlPolicy = 'tty' | 'pipe' | 'raw';

/** The policy for a stream: `raw` when asked for, else `tty` or `pipe` by whether it is a terminal. */
export function controlPolicy(isTTY: boolean | undefined, raw: boolean): ControlPolicy {
  return raw ? 'raw' : isTTY ? 'tty' : 'pipe';
}

/**
 * One whole escape sequence: ansi-regex's pattern (chalk's, kept by its authors; since 6.2 it
 * covers OSC with either terminator, DCS/SOS/PM/APC strings to ST, CSI, two-byte escapes and the
 * 8-bit C1 introducers, not only the SGR colours strip-ansi was first written for).
 */
const SEQUENCE_SOURCE = ansiRegex().source;
/** Every whole escape sequence in a text. */
const SEQUENCES = new RegExp(SEQUENCE_SOURCE, 'g');
/** A text that is exactly one escape sequence. */
const ONE_SEQUENCE = new RegExp(`^(?:${SEQUENCE_SOURCE})$`);
/** Characters that can start an escape sequence: ESC, and the C1 DCS, SOS, CSI, OSC, PM and APC. */
const INTRODUCER = /[\u001b\u0090\u0098\u009b\u009d\u009e\u009f]/g;
/** What `tty` removes after the sequences: C0 controls but `\t` and `\n`, DEL, C1 controls, bidirectional controls. */
const TTY_CONTROLS = new RegExp(`[\\u0000-\\u0008\\u000b-\\u001f\\u007f-\\u009f${BIDI_CONTROLS}]`, 'g');
/** What `pipe` removes after the sequences: a lone ESC, the C1 controls (8-bit introducers among them), bidirectional controls. */
const PIPE_CONTROLS = new RegExp(`[\\u001b\\u0080-\\u009f${BIDI_CONTROLS}]`, 'g');
/** Endings that complete every kind of sequence: a CSI or two-byte final, BEL (OSC), `\` after an ESC, ST. */
const COMPLETIONS = ['m', '\u0007', '\\', '\u001b\\'];
/** The longest unfinished sequence held back across pieces [UTF-16 code units]; a longer one is let through as text (its introducer removed). */
export const MAX_HELD = 4096;

/**
 * `text` under `policy` (see {@link ControlPolicy}), taken as complete: an unfinished sequence at
 * its end is not a sequence, so its introducer is removed and the rest kept as text. Pure.
 */
export function neutralizeControls(text: string, policy: ControlPolicy): string {
  if (policy === 'raw') return text;
  const stripped = text.replace(SEQUENCES, '');
  return stripped.replace(policy === 'tty' ? TTY_CONTROLS : PIPE_CONTROLS, '');
}

/** Whether `tail` (starting with an introducer) could still become one escape sequence. */
function unfinishedSequence(tail: string): boolean {
  return COMPLETIONS.some((c) => ONE_SEQUENCE.test(tail + c));
}

/**
 * {@link neutralizeControls} over a text that arrives in pieces (an answer streamed token by
 * token, where one sequence can span two pieces): `push` returns what can be written now and
 * holds back, from the first introducer on, an end that could still become a sequence (up to
 * {@link MAX_HELD} code units); `end` returns the rest. The concatenation of everything returned
 * equals `neutralizeControls` of the whole text whenever no sequence is longer than `MAX_HELD`.
 */
export class ControlFilter {
  private held = '';

  constructor(readonly policy: ControlPolicy) {}

  /** Filters the next piece; returns the text to write now (may be ''). */
  push(piece: string): string {
    if (this.policy === 'raw') return piece;
    const text = this.held + piece;
    this.held = '';
    let cut = text.length;
    INTRODUCER.lastIndex = 0;
    for (let m = INTRODUCER.exec(text); m; m = INTRODUCER.exec(text)) {
      if (text.length - m.index <= MAX_HELD && unfinishedSequence(text.slice(m.index))) {
        cut = m.index;
        break;
      }
    }
    this.held = text.slice(cut);
    return neutralizeControls(text.slice(0, cut), this.policy);
  }

  /** The held-back end, filtered as complete text; the filter is empty afterwards. */
  end(): string {
    const rest = this.held;
    this.held = '';
    return neutralizeControls(rest, this.policy);
  }
}

/**
 * `JSON.stringify(value)` with DEL, the C1 controls and the bidirectional controls ({@link BIDI_CONTROLS}) written as
 * `\uXXXX` too (JSON.stringify escapes only C0): the same JSON value, safe to print on a
 * terminal. For the CLI's `--json` output, which holds repository paths and model text.
 */
export function terminalJson(value: unknown): string {
  return JSON.stringify(value).replace(JSON_UNSAFE, uEscape);
}
/** What {@link terminalJson} escapes besides JSON's own escapes. */
const JSON_UNSAFE = new RegExp(`[\\u007f-\\u009f${BIDI_CONTROLS}]`, 'gu');
