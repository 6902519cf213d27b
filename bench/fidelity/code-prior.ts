/**
 * The code-aware prior's flags for the fidelity suite's code prompts (issue 16 item 4; the prior:
 * src/engine/policies/code-prior.ts, its flags in a packed prompt: src/pipeline/code-prior.ts).
 *
 * A code prompt (./code-prompts.ts) is one text, the {@link fileBlock}s of its source files
 * (`// <package>/<path>` line, the file, a blank line), tokenized whole and cut to its first L
 * tokens. Its prior flags come from the product's own functions:
 * - definitions: each file's definition name lines from the product's tree-sitter tags
 *   ({@link fileDefinitionLines}, what `sectionDefinitionLines` flags in a packed file), shifted to
 *   the line the file starts on in the prompt's text (after its path line);
 * - identifiers: the fidelity prompt has no question; SnapKV's observation window (the prompt's
 *   last w tokens, which play the question's part: their attention ranks the prefix) is read as
 *   one, through the product's {@link questionIdentifiers} (identifiers written as code: with `_`,
 *   `$` or a digit, an inner capital, in backticks, or called). The continuation that is
 *   teacher-forced after compression is never read (it is what the cache is scored on);
 * - token positions: {@link codePriorFlags} maps both to the prompt's tokens byte by byte, the
 *   prompt being one run that starts after the tokenizer's leading special tokens (BOS) and spells
 *   the first bytes of the text (a cut inside a multi-byte character drops the token that splits
 *   it from the run).
 */
import type { TagsCache } from '../../src/context/map/cache';
import { codePriorFlags, fileDefinitionLines, questionIdentifiers, type CodePriorFlags, type PromptRun } from '../../src/pipeline/code-prior';
import { fileBlock, type SourceFile } from './code-prompts';

/** A token's raw UTF-8 bytes (`EngineModel.tokenBytes`). */
export type TokenBytes = (token: number) => Uint8Array;

/**
 * The 1-based lines of the text `sources.map(fileBlock).join('')` that hold a definition's name
 * line: file k's definition line d (of its own text) is line (lines before block k) + 1 + d.
 * @throws the tags parser's error when a grammar cannot be loaded.
 */
export async function promptDefinitionLines(sources: readonly SourceFile[], tags: TagsCache): Promise<number[]> {
  const out: number[] = [];
  let before = 0;
  for (const f of sources) {
    const block = fileBlock(f);
    for (const d of await fileDefinitionLines(f.name, f.text, tags)) out.push(before + 1 + d);
    before += block.split('\n').length - 1;
  }
  return out;
}

/**
 * The prompt as one {@link PromptRun}: tokens `tokens[special…]` from position `special`, with the
 * text their bytes spell (the first bytes of `sources`' blocks), and the definition lines. When
 * the tokens' bytes end inside a UTF-8 character, the trailing tokens that split it are left out
 * of the run (they get no flag). When the bytes are not a prefix of the text (a tokenizer that
 * normalizes it), the run's text is the text's prefix of the same length, which
 * {@link codePriorFlags} then leaves unflagged as unmapped.
 * @param special leading special tokens (BOS) the tokenizer added, not part of the text
 */
export async function codePromptRun(sources: readonly SourceFile[], tokens: readonly number[], special: number, tokenBytes: TokenBytes, tags: TagsCache): Promise<PromptRun> {
  const text = Buffer.from(sources.map(fileBlock).join(''), 'utf8');
  let own = tokens.slice(special);
  const lengths = own.map((t) => tokenBytes(t).length);
  let bytes = lengths.reduce((a, b) => a + b, 0);
  // drop tokens while the bytes end inside a character (a UTF-8 continuation byte follows, or the cut splits a lead byte's sequence)
  while (own.length > 0 && bytes < text.length && (text[bytes]! & 0xc0) === 0x80) {
    bytes -= lengths[own.length - 1]!;
    own = own.slice(0, -1);
  }
  return { start: special, tokens: own, text: text.subarray(0, Math.min(bytes, text.length)).toString('utf8'), definitionLines: await promptDefinitionLines(sources, tags) };
}

/** The text the last `window` tokens spell (UTF-8, a split character replaced), read as the question. */
export function windowText(tokens: readonly number[], window: number, tokenBytes: TokenBytes): string {
  return Buffer.concat(tokens.slice(Math.max(0, tokens.length - window)).map((t) => tokenBytes(t))).toString('utf8');
}

/** The prior's flags of one code prompt and what they were made from. */
export interface CodePromptPrior extends CodePriorFlags {
  /** The identifiers taken from the observation window ({@link questionIdentifiers}). */
  identifiers: string[];
  /** Definition name lines in the prompt's text (all of its sources, including lines past the cut). */
  definitionLines: number;
}

/**
 * The code-aware prior's flags for a code prompt of L = tokens.length positions (see the file's
 * doc): definition name lines of its files and the identifiers its last `window` tokens name.
 * @param special leading special tokens (BOS) the tokenizer added
 * @throws the tags parser's error when a grammar cannot be loaded.
 */
export async function codePromptPrior(prompt: { tokens: readonly number[]; sources: readonly SourceFile[] }, opts: { window: number; special: number; tokenBytes: TokenBytes; tags: TagsCache }): Promise<CodePromptPrior> {
  const run = await codePromptRun(prompt.sources, prompt.tokens, opts.special, opts.tokenBytes, opts.tags);
  const identifiers = questionIdentifiers(windowText(prompt.tokens, opts.window, opts.tokenBytes));
  return { ...codePriorFlags(prompt.tokens.length, [run], identifiers, opts.tokenBytes), identifiers, definitionLines: run.definitionLines?.length ?? 0 };
}
