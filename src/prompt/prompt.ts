/**
 * The prompt: [head │ file sections … │ between │ question │ tail]. Head, between and tail
 * come from the model's chat template (llama.cpp's built-in templates) or from a plain-text
 * layout when the model has none. The question goes last so that the observation window
 * covers it. Template text is tokenized with special tokens parsed; repository text and the
 * question never are (a file that contains `<|im_start|>` stays text).
 */
import type { EngineModel } from '../engine/model';

/** Instructions given to the model before the repository. */
export const SYSTEM_PROMPT =
  'You are RepoSnap, an assistant that answers questions about a code repository. ' +
  'The repository follows, one file per section: the file path on its own line, then the file in a fenced block. ' +
  'Answer the question after the repository. Cite files as path:line where it helps.';

const REPO = '\u0000REPOSNAP_REPOSITORY\u0000';
const QUESTION = '\u0000REPOSNAP_QUESTION\u0000';

/** The template text around the repository and the question. */
export interface PromptLayout {
  /** Text before the first file section (BOS is added when tokenizing it). */
  head: string;
  /** Text between the repository and the question. */
  between: string;
  /** Text after the question (the assistant turn's opening). */
  tail: string;
  /** Whether the model's chat template was used. */
  templated: boolean;
}

/**
 * Splits the chat-template rendering of [system, user(repository + question)] around the
 * repository and the question. Falls back to a plain-text layout when the model has no
 * template llama.cpp knows.
 */
export function promptLayout(model: EngineModel): PromptLayout {
  const rendered = model.applyChatTemplate(
    [
      { role: 'system', content: SYSTEM_PROMPT },
      { role: 'user', content: `${REPO}\n\nQuestion: ${QUESTION}` },
    ],
    true,
  );
  if (rendered !== null) {
    const i = rendered.indexOf(REPO);
    const j = rendered.indexOf(QUESTION);
    if (i >= 0 && j > i) {
      return {
        head: rendered.slice(0, i),
        between: rendered.slice(i + REPO.length, j),
        tail: rendered.slice(j + QUESTION.length),
        templated: true,
      };
    }
  }
  return {
    head: `${SYSTEM_PROMPT}\n\nRepository:\n\n`,
    between: '\n\nQuestion: ',
    tail: '\nAnswer:',
    templated: false,
  };
}

/** Token ids of the parts of a prompt; `tokens()` concatenates them. */
export interface PromptTokens {
  head: Int32Array;
  /** One array per packed file section, in pack order. */
  files: Int32Array[];
  between: Int32Array;
  question: Int32Array;
  tail: Int32Array;
}

/** Tokenizes the template parts (special tokens parsed; BOS on the head when the model adds it). */
export function tokenizeLayout(model: EngineModel, layout: PromptLayout): Pick<PromptTokens, 'head' | 'between' | 'tail'> {
  return {
    head: model.tokenize(layout.head, { addSpecial: true, parseSpecial: true }),
    between: model.tokenize(layout.between, { parseSpecial: true }),
    tail: model.tokenize(layout.tail, { parseSpecial: true }),
  };
}

/** The whole prompt as one token array. */
export function concatPrompt(p: PromptTokens): Int32Array {
  const parts = [p.head, ...p.files, p.between, p.question, p.tail];
  const out = new Int32Array(parts.reduce((n, a) => n + a.length, 0));
  let o = 0;
  for (const a of parts) {
    out.set(a, o);
    o += a.length;
  }
  return out;
}
