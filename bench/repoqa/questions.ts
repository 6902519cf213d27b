/**
 * Questions with exact answers, generated from a repository's code (issue 13, part 3).
 *
 * The sources are parsed with the TypeScript compiler's own parser (the `typescript` package of
 * devDependencies, 7.x: its `unstable/sync` API runs the compiler in a child process and returns
 * the syntax tree; it parses JavaScript like TypeScript). Nothing here runs the repository's code
 * or matches code with regular expressions. Kinds:
 *
 * - `file`: which file defines function X (only in repositories of two files or more; X defined
 *   once in the repository). Answer: the path as the prompt shows it.
 * - `constant`: the value of a `const` (or top-level `var`) initialised with a number or a short
 *   string literal, its name declared once in the repository. Answer: the literal's value.
 * - `doc`: which function a doc comment (JSDoc description, tags left out) describes: the
 *   description shown, the name asked. Descriptions that are section headers (`Module exports.`),
 *   shorter than three words, repeated in the repository, or that contain the name are left out.
 * - `first-call`: which function X calls first: the first call expression of X's first statement
 *   (a variable, expression or return statement), that call not under a conditional or a
 *   short-circuit operator, its callee a plain identifier other than `require`, its arguments
 *   without calls (so that it is also the first call evaluated).
 * - `return`: what X returns when an `if` condition holds: `if (cond) return <v>` (or a block of
 *   that one statement) with v a literal (number, short string, true/false/null) or an identifier,
 *   the condition on one line of at most 60 characters.
 * - `param`: the name of X's first parameter (a plain identifier).
 *
 * Functions: `function X`, `var/let/const X = function/arrow`, and `a.b.X = function/arrow`
 * (not `module.exports = function`, which has no name); names of at least three characters.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** The kinds of question. */
export type QuestionKind = 'file' | 'constant' | 'doc' | 'first-call' | 'return' | 'param';

/** Every kind, in report order. */
export const QUESTION_KINDS: readonly QuestionKind[] = ['file', 'constant', 'doc', 'first-call', 'return', 'param'];

/** One question about one repository, with its exact answer. */
export interface Question {
  /** Stable id: `<repo>#<kind>:<subject>[:<line>]`. */
  id: string;
  /** Repository id (`name@version`). */
  repo: string;
  kind: QuestionKind;
  /** The function or constant asked about. */
  subject: string;
  /** The question as asked (the user's turn of the product's prompt). */
  question: string;
  /** The exact answer: a path, a literal's value, or an identifier. */
  answer: string;
  /** Where the subject is defined: path relative to the repository root, `/`-separated. */
  file: string;
  /** 1-based line of the subject's definition (for `return`: of the `if`). */
  line: number;
  /** `return`: the condition's text; `doc`: the description; `constant`: the literal as written. */
  detail?: string;
}

/** The instruction that ends every question: one short answer, no sentence. */
const TERSE = {
  file: 'Answer with the file path only.',
  value: 'Answer with the value only.',
  name: 'Answer with the function name only.',
  param: 'Answer with the parameter name only.',
};

/** The question text of each kind (exported for the tests and the report). */
export function questionText(kind: QuestionKind, subject: string, detail = ''): string {
  switch (kind) {
    case 'file':
      return `Which file defines the function \`${subject}\`? ${TERSE.file}`;
    case 'constant':
      return `What is the value of the constant \`${subject}\`? ${TERSE.value}`;
    case 'doc':
      return `Which function is documented as follows: "${detail}"? ${TERSE.name}`;
    case 'first-call':
      return `Which function does \`${subject}\` call first? ${TERSE.name}`;
    case 'return':
      return `What is returned by \`${subject}\` if \`${detail}\`? ${TERSE.value}`;
    case 'param':
      return `What is the name of the first parameter of the function \`${subject}\`? ${TERSE.param}`;
  }
}

// The compiler's syntax tree, typed loosely: the 7.x API's node types live in an ES module that
// this CommonJS code loads dynamically.
type SyntaxKindEnum = Record<string, number | string>;
interface TsNode {
  kind: number;
  parent?: TsNode;
  jsDoc?: readonly TsNode[];
  forEachChild<T>(visit: (n: TsNode) => T): T | undefined;
  getStart(sf?: TsNode): number;
  getText(sf?: TsNode): string;
  [key: string]: unknown;
}
interface Parsed {
  /** Path relative to the repository root. */
  file: string;
  text: string;
  root: TsNode;
}

/** A function definition found in a file. */
interface FunctionDef {
  name: string;
  file: string;
  line: number;
  /** The function-like node (declaration, expression or arrow). */
  fn: TsNode;
  /** The node the doc comment is attached to (declaration or statement). */
  docHost: TsNode;
}

/** A constant with a literal initializer. */
interface ConstantDef {
  name: string;
  file: string;
  line: number;
  value: string;
  written: string;
}

/**
 * Parses the repository's files with the TypeScript compiler (a throwaway tsconfig listing them,
 * allowJs, no lib) and returns each file's syntax tree.
 * @throws Error when a file is missing from the compiler's program.
 */
async function parseFiles(repoDir: string, files: readonly string[]): Promise<{ parsed: Parsed[]; K: SyntaxKindEnum; NodeFlags: { Const: number }; jsdocText: (c: unknown) => string | undefined }> {
  const { API } = await import('typescript/unstable/sync');
  const astMod = (await import('typescript/unstable/ast')) as unknown as { SyntaxKind: SyntaxKindEnum; NodeFlags: { Const: number }; getTextOfJSDocComment: (c: unknown) => string | undefined };
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'repoqa-ts-'));
  const abs = files.map((f) => path.resolve(repoDir, f));
  fs.writeFileSync(
    path.join(tmp, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: { allowJs: true, checkJs: false, noEmit: true, noLib: true, types: [], target: 'es2022', module: 'commonjs' }, files: abs }),
  );
  const api = new API({ cwd: tmp });
  try {
    const snapshot = api.updateSnapshot({ openProjects: [path.join(tmp, 'tsconfig.json')] });
    const project = snapshot.getProjects()[0];
    if (!project) throw new Error('the TypeScript compiler opened no project');
    const parsed = files.map((file, i) => {
      const sf = project.program.getSourceFile(abs[i]!) as unknown as TsNode | undefined;
      if (!sf) throw new Error(`the TypeScript compiler did not parse ${file}`);
      return { file, text: String(sf.text), root: sf };
    });
    return { parsed, K: astMod.SyntaxKind, NodeFlags: astMod.NodeFlags, jsdocText: astMod.getTextOfJSDocComment };
  } finally {
    api.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

/** 1-based line of a character offset. */
function lineOf(text: string, offset: number): number {
  let n = 1;
  for (let i = 0; i < offset && i < text.length; i++) if (text.charCodeAt(i) === 10) n++;
  return n;
}

/** Every node under `root`, depth first in source order. */
function walk(root: TsNode, visit: (n: TsNode) => void): void {
  const go = (n: TsNode): void => {
    visit(n);
    n.forEachChild((c) => {
      go(c);
      return undefined;
    });
  };
  go(root);
}

/** Children of a node, in source order. */
function children(n: TsNode): TsNode[] {
  const out: TsNode[] = [];
  n.forEachChild((c) => {
    out.push(c);
    return undefined;
  });
  return out;
}

const MIN_NAME = 3;
const MAX_STRING = 30;
const MAX_CONDITION = 60;

/**
 * Generates every question the kinds above allow for a repository.
 * @param repoDir the repository's folder
 * @param files the packed files (relative paths, as the prompt shows them)
 * @param repo the repository's id (`name@version`)
 */
export async function generateQuestions(repoDir: string, files: readonly string[], repo: string): Promise<Question[]> {
  const sourceFiles = files.filter((f) => /\.(c|m)?js$/.test(f) || /\.ts$/.test(f));
  const { parsed, K, NodeFlags, jsdocText } = await parseFiles(repoDir, sourceFiles);
  const kind = (n: TsNode, name: string) => n.kind === K[name];
  const isFunctionLike = (n: TsNode) => kind(n, 'FunctionDeclaration') || kind(n, 'FunctionExpression') || kind(n, 'ArrowFunction');

  const functions: FunctionDef[] = [];
  const constants: ConstantDef[] = [];
  /** Names declared anywhere (functions, variables, parameters), with their counts: a constant's name must be declared once. */
  const declared = new Map<string, number>();
  const declare = (name: string) => declared.set(name, (declared.get(name) ?? 0) + 1);
  /** Function definitions by name: a function asked about must be defined once (a `require` alias of it is not a definition). */
  const defined = new Map<string, number>();

  for (const p of parsed) {
    const sf = p.root;
    walk(sf, (n) => {
      if (kind(n, 'FunctionDeclaration')) {
        const id = n.name as TsNode | undefined;
        if (id) {
          const name = id.getText(sf);
          declare(name);
          functions.push({ name, file: p.file, line: lineOf(p.text, n.getStart(sf)), fn: n, docHost: n });
        }
      } else if (kind(n, 'VariableDeclaration')) {
        const id = n.name as TsNode;
        if (!kind(id, 'Identifier')) return;
        const name = id.getText(sf);
        declare(name);
        const init = n.initializer as TsNode | undefined;
        if (!init) return;
        const statement = n.parent?.parent; // VariableDeclaration → List → VariableStatement
        if (kind(init, 'FunctionExpression') || kind(init, 'ArrowFunction')) {
          functions.push({ name, file: p.file, line: lineOf(p.text, n.getStart(sf)), fn: init, docHost: statement && kind(statement, 'VariableStatement') ? statement : n });
          return;
        }
        const isConst = n.parent !== undefined && (Number(n.parent.flags) & NodeFlags.Const) !== 0;
        const topLevel = statement?.parent === sf;
        if (!isConst && !topLevel) return;
        const value = literalValue(init, sf, K);
        if (value !== undefined) constants.push({ name, file: p.file, line: lineOf(p.text, n.getStart(sf)), value, written: init.getText(sf) });
      } else if (kind(n, 'Parameter')) {
        const id = n.name as TsNode;
        if (kind(id, 'Identifier')) declare(id.getText(sf));
      } else if (kind(n, 'BinaryExpression') && kind(n.operatorToken as TsNode, 'EqualsToken')) {
        const left = n.left as TsNode;
        const right = n.right as TsNode;
        if (kind(left, 'PropertyAccessExpression') && (kind(right, 'FunctionExpression') || kind(right, 'ArrowFunction'))) {
          const name = (left.name as TsNode).getText(sf);
          if (name === 'exports') return; // `module.exports = function …`: the module's anonymous export
          declare(name);
          const statement = n.parent && kind(n.parent, 'ExpressionStatement') ? n.parent : n;
          functions.push({ name, file: p.file, line: lineOf(p.text, n.getStart(sf)), fn: right, docHost: statement });
        }
      }
    });
  }

  for (const f of functions) defined.set(f.name, (defined.get(f.name) ?? 0) + 1);
  const uniqueFunction = (name: string) => defined.get(name) === 1;
  const uniqueConstant = (name: string) => declared.get(name) === 1 && !defined.has(name);
  const questions: Question[] = [];
  const push = (q: Omit<Question, 'id' | 'repo' | 'question'>, suffix = '') =>
    questions.push({ id: `${repo}#${q.kind}:${q.subject}${suffix}`, repo, question: questionText(q.kind, q.subject, q.detail), ...q });
  const byFile = new Map(parsed.map((p) => [p.file, p]));

  // file
  if (sourceFiles.length >= 2) {
    for (const f of functions) {
      if (f.name.length >= MIN_NAME && uniqueFunction(f.name)) push({ kind: 'file', subject: f.name, answer: f.file, file: f.file, line: f.line });
    }
  }

  // constant
  for (const c of constants) {
    if (c.name.length >= MIN_NAME && uniqueConstant(c.name)) push({ kind: 'constant', subject: c.name, answer: c.value, file: c.file, line: c.line, detail: c.written });
  }

  // doc
  const docs = new Map<string, FunctionDef[]>();
  const docOf = new Map<FunctionDef, string>();
  for (const f of functions) {
    const doc = f.docHost.jsDoc?.[f.docHost.jsDoc.length - 1];
    if (!doc) continue;
    const text = (jsdocText(doc.comment) ?? '').replace(/\s+/g, ' ').trim();
    if (!text) continue;
    docOf.set(f, text);
    docs.set(text, [...(docs.get(text) ?? []), f]);
  }
  for (const [f, text] of docOf) {
    if (f.name.length < MIN_NAME || !uniqueFunction(f.name)) continue;
    if (docs.get(text)!.length !== 1) continue;
    if (/^module\b/i.test(text) || text.split(' ').length < 3 || text.toLowerCase().includes(f.name.toLowerCase()) || text.includes('"')) continue;
    push({ kind: 'doc', subject: f.name, answer: f.name, file: f.file, line: f.line, detail: text });
  }

  // first-call, return and param
  for (const f of functions) {
    if (f.name.length < MIN_NAME || !uniqueFunction(f.name)) continue;
    const sf = byFile.get(f.file)!.root;
    const param = ((f.fn.parameters as readonly TsNode[] | undefined) ?? [])[0];
    if (param && kind(param.name as TsNode, 'Identifier') && !param.dotDotDotToken) {
      push({ kind: 'param', subject: f.name, answer: (param.name as TsNode).getText(sf), file: f.file, line: f.line });
    }
    const body = f.fn.body as TsNode | undefined;
    if (!body || !kind(body, 'Block')) continue;
    const statements = (body.statements as readonly TsNode[] | undefined) ?? [];
    const first = statements[0];
    if (first && (kind(first, 'VariableStatement') || kind(first, 'ExpressionStatement') || kind(first, 'ReturnStatement'))) {
      const call = firstCall(first, K, isFunctionLike);
      if (call) {
        const callee = call.expression as TsNode;
        const args = (call.arguments as readonly TsNode[]) ?? [];
        const argsHaveCalls = args.some((a) => firstCall(a, K, isFunctionLike) !== undefined);
        if (kind(callee, 'Identifier') && callee.getText(sf) !== 'require' && !argsHaveCalls && !underCondition(call, first, K)) {
          push({ kind: 'first-call', subject: f.name, answer: callee.getText(sf), file: f.file, line: f.line });
        }
      }
    }
    const seen = new Set<string>();
    walkOwn(body, isFunctionLike, (n) => {
      if (!kind(n, 'IfStatement')) return;
      let then = n.thenStatement as TsNode;
      if (kind(then, 'Block')) {
        const inner = (then.statements as readonly TsNode[]) ?? [];
        if (inner.length !== 1) return;
        then = inner[0]!;
      }
      if (!kind(then, 'ReturnStatement') || !then.expression) return;
      const value = returnValue(then.expression as TsNode, sf, K);
      const cond = (n.expression as TsNode).getText(sf);
      if (value === undefined || cond.includes('\n') || cond.length > MAX_CONDITION || cond.includes('`') || seen.has(cond)) return;
      seen.add(cond);
      const text = byFile.get(f.file)!.text;
      const line = lineOf(text, n.getStart(sf));
      push({ kind: 'return', subject: f.name, answer: value, file: f.file, line, detail: cond }, `:${line}`);
    });
  }
  // the same subject and kind twice (a `return` at two lines is told apart by its line)
  const ids = new Set<string>();
  return questions.filter((q) => (ids.has(q.id) ? false : (ids.add(q.id), true)));
}

/** Walks a function body without entering nested functions. */
function walkOwn(root: TsNode, isFunctionLike: (n: TsNode) => boolean, visit: (n: TsNode) => void): void {
  const go = (n: TsNode): void => {
    visit(n);
    for (const c of children(n)) if (!isFunctionLike(c)) go(c);
  };
  go(root);
}

/**
 * The first call expression under a node (the node itself included) in source order, pre-order,
 * not inside nested functions.
 */
function firstCall(root: TsNode, K: SyntaxKindEnum, isFunctionLike: (n: TsNode) => boolean): TsNode | undefined {
  let found: TsNode | undefined;
  const go = (n: TsNode): void => {
    if (found) return;
    if (n.kind === K.CallExpression) {
      found = n;
      return;
    }
    for (const c of children(n)) if (!isFunctionLike(c)) go(c);
  };
  go(root);
  return found;
}

/** Whether a call sits under a conditional, `&&`, `||` or `??` between it and the statement. */
function underCondition(call: TsNode, statement: TsNode, K: SyntaxKindEnum): boolean {
  for (let n = call.parent; n && n !== statement; n = n.parent) {
    if (n.kind === K.ConditionalExpression) return true;
    if (n.kind === K.BinaryExpression) {
      const op = (n.operatorToken as TsNode).kind;
      if (op === K.AmpersandAmpersandToken || op === K.BarBarToken || op === K.QuestionQuestionToken) return true;
    }
  }
  return false;
}

/** The value of a number or short string literal (a leading minus kept), else undefined. */
function literalValue(n: TsNode, sf: TsNode, K: SyntaxKindEnum): string | undefined {
  if (n.kind === K.NumericLiteral) return String(Number(n.getText(sf).replace(/_/g, '')));
  if (n.kind === K.PrefixUnaryExpression && n.operator === K.MinusToken && (n.operand as TsNode).kind === K.NumericLiteral) {
    return String(-Number((n.operand as TsNode).getText(sf).replace(/_/g, '')));
  }
  if (n.kind === K.StringLiteral || n.kind === K.NoSubstitutionTemplateLiteral) {
    const v = String(n.text);
    if (v.length === 0 || v.length > MAX_STRING || /[\n`]/.test(v) || v.trim() !== v) return undefined;
    return v;
  }
  return undefined;
}

/** The value of a `return` expression the `return` kind accepts, else undefined. */
function returnValue(n: TsNode, sf: TsNode, K: SyntaxKindEnum): string | undefined {
  if (n.kind === K.TrueKeyword) return 'true';
  if (n.kind === K.FalseKeyword) return 'false';
  if (n.kind === K.NullKeyword) return 'null';
  if (n.kind === K.Identifier) return n.getText(sf);
  return literalValue(n, sf, K);
}
