import path from 'node:path';
import { createExcludeMatcher } from './globs';
import { secretDetail, type FileSecretVerdicts } from './secrets';

/**
 * A file whose text a question quotes outside the packed prompt: the code an explanation sends
 * (RepoSnap: Explain Selection, the Explain CodeLens) comes from the editor's document, not from
 * the pack, so the packer never decided on it.
 */
export interface QuotedFile {
  /** Path relative to the repository root, `/`-separated; an absolute path for a file outside it. */
  path: string;
  /** The document's whole current text (an unsaved edit included), not only the quoted range. */
  text: string;
}

/** What `quotedFileRefusal` needs of the pack and its options. */
export interface QuotedFileContext {
  /** The pack's per-file decision (`PackResult.secrets`); disabled: nothing is refused. */
  secrets: FileSecretVerdicts;
  /** The pack's exclude patterns (`PackOptions.exclude`): a negation (`!.env.example`) brings a credential file back here too. */
  exclude?: readonly string[];
  /** Match names case-insensitively (`PackOptions.ignoreCase`). Default false. */
  ignoreCase?: boolean;
}

/**
 * Why the packer would leave `quoted` out for its secrets, or `undefined` when it would not: the
 * secret exclude that names the file or one of its folders (`secret exclude '.env'`, as the walk
 * marks it; the caller's negations apply, as in the walk), else the first secret in its whole
 * text (`FileSecretVerdicts.check`, the same decision as the pack's for that path and text;
 * `secretDetail`: the rule and where, never the value). A path outside the repository (absolute,
 * or starting with `..`) is matched by its file name alone. Rejects as `findSecret`, and with a
 * `PatternError` for an invalid exclude pattern.
 */
export async function quotedFileRefusal(quoted: QuotedFile, context: QuotedFileContext): Promise<string | undefined> {
  if (!context.secrets.enabled) return undefined;
  const inside = !path.posix.isAbsolute(quoted.path) && !path.win32.isAbsolute(quoted.path) && !quoted.path.startsWith('../') && quoted.path !== '..';
  const rel = inside ? quoted.path.replace(/^\.\//, '') : path.posix.basename(quoted.path.replace(/\\/g, '/'));
  const matcher = createExcludeMatcher(context.exclude, { defaults: false, secrets: true, ignoreCase: context.ignoreCase ?? false });
  if (matcher !== undefined && rel !== '') {
    // the walk never enters an excluded folder: test each folder on the way, then the file
    const parts = rel.split('/');
    for (let i = 1; i <= parts.length; i++) {
      const test = matcher.test(i < parts.length ? `${parts.slice(0, i).join('/')}/` : rel);
      if (test.ignored) {
        const mark = test.rule?.mark ?? test.rule?.pattern ?? '';
        if (mark.startsWith('secret exclude')) return mark;
      }
    }
  }
  const finding = await context.secrets.check(quoted.path, quoted.text);
  return finding === undefined ? undefined : secretDetail(finding);
}
