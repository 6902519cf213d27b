/**
 * Retrieval of a type's own declaration: a class (struct, trait) with methods is chunked into its
 * header (declaration and fields) and its methods, each method owned by its type, so that a
 * question naming the type quotes the declaration (ajv's ValidationError was retrieved only by its
 * `constructor`, and the model named a file that used it). Hand-written sources in TypeScript,
 * Python, Go, Rust, Java and C++, parsed with the product's tree-sitter tags.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { GrammarId } from '../../src/context/map/languages';
import { createTagsParser } from '../../src/context/map/tags';
import { rankChunks } from '../../src/context/retrieve/bm25';
import { chunksOf, HEADER_MAX_CHARS, type Chunk } from '../../src/context/retrieve/chunks';
import { retrieveChunks } from '../../src/context/retrieve/retrieve';
import { FileSecretVerdicts } from '../../src/context/secrets';

const parser = createTagsParser();

async function chunksOfSource(path: string, text: string, grammar: GrammarId): Promise<Chunk[]> {
  return chunksOf(path, text, await parser.parse(text, grammar));
}

/** `[name, owner, startLine, endLine]` of each chunk: what the tests compare. */
const outline = (chunks: readonly Chunk[]): Array<[string, string | undefined, number, number]> => chunks.map((c) => [c.name, c.owner, c.startLine, c.endLine]);

// ajv's lib/runtime/validation_error.ts, and two files that use the class (their text is rich in
// the question's words: "errors", "validation"), as in the tester's report
const VALIDATION_ERROR = [
  'import type {ErrorObject} from "../types"',
  '',
  'export default class ValidationError extends Error {',
  '  readonly errors: Partial<ErrorObject>[]',
  '  readonly ajv: true',
  '  readonly validation: true',
  '',
  '  /** Fails a validation with its errors. */',
  '  constructor(errors: Partial<ErrorObject>[]) {',
  '    super("validation failed")',
  '    this.errors = errors',
  '    this.ajv = this.validation = true',
  '  }',
  '}',
  '',
].join('\n');
const ERRORS_TS = [
  'export function returnErrors(it: SchemaCxt, errs: Code): void {',
  '  const {gen, validateName, schemaEnv} = it',
  '  if (schemaEnv.$async) {',
  '    gen.throw(_`new ${it.ValidationError as Name}(${errs})`)',
  '  } else {',
  '    gen.assign(_`${validateName}.errors`, errs)',
  '    gen.return(false)',
  '  }',
  '}',
  '',
  'export function reportErrors(errors: ErrorObject[], validation: boolean): void {',
  '  if (validation) for (const e of errors) console.log(e.message)',
  '}',
  '',
].join('\n');
const INDEX_TS = [
  'export function compileSchema(sch: SchemaEnv): SchemaEnv {',
  '  const gen = new CodeGen(this.scope, {es5, lines})',
  '  if (sch.$async) gen.scopeValue("Error", {ref: ValidationError, code: _`require("ajv/dist/runtime/validation_error").default`})',
  '  return sch',
  '}',
  '',
].join('\n');

test('a TypeScript class with methods: its header (declaration and fields, the lead-in doc comment left to the method) and its constructor owned by it, from its doc comment', async () => {
  const chunks = await chunksOfSource('lib/runtime/validation_error.ts', VALIDATION_ERROR, 'typescript');
  assert.deepEqual(outline(chunks), [
    ['ValidationError', undefined, 3, 6],
    ['constructor', 'ValidationError', 8, 13],
  ]);
  assert.equal(chunks[0]!.text, 'export default class ValidationError extends Error {\n  readonly errors: Partial<ErrorObject>[]\n  readonly ajv: true\n  readonly validation: true');
});

test('a question naming a class retrieves its header first, then its constructor, before the files that use it', async () => {
  const chunks = [
    ...(await chunksOfSource('lib/compile/errors.ts', ERRORS_TS, 'typescript')),
    ...(await chunksOfSource('lib/compile/index.ts', INDEX_TS, 'typescript')),
    ...(await chunksOfSource('lib/runtime/validation_error.ts', VALIDATION_ERROR, 'typescript')),
  ];
  const question = 'Which file defines the class ValidationError, and what property holds the errors array?';
  const ranked = rankChunks(chunks, question);
  // reportErrors neither names nor uses ValidationError: left out
  assert.deepEqual(
    ranked.map((r) => `${r.chunk.path}#${r.chunk.name}`),
    ['lib/runtime/validation_error.ts#ValidationError', 'lib/runtime/validation_error.ts#constructor', ...ranked.slice(2).map((r) => `${r.chunk.path}#${r.chunk.name}`)],
  );
  assert.deepEqual(new Set(ranked.slice(2).map((r) => r.chunk.name)), new Set(['returnErrors', 'compileSchema']));
  // quoted within a budget that holds the header and little else (section title 7 words, the header's block 24)
  const words = (t: string): number => t.split(/\s+/).filter((w) => w !== '').length;
  const secrets = new FileSecretVerdicts(false);
  const retrieved = await retrieveChunks(chunks, question, { budget: 31, countTokens: words, secrets });
  assert.deepEqual(retrieved.chunks.map((c) => c.name), ['ValidationError']);
  assert.ok(retrieved.text.includes('lib/runtime/validation_error.ts:3-6\n```\nexport default class ValidationError extends Error {\n  readonly errors: Partial<ErrorObject>[]'));
});

test('a method belongs to the innermost type around it; a nested class ends its outer class header', async () => {
  const text = [
    'export class Outer {',
    '  size = 1',
    '  static Inner = class Inner {',
    '    run() {}',
    '  }',
    '  grow() {',
    '    this.size++',
    '  }',
    '}',
    'class Inner2 {',
    '  count = 0',
    '}',
  ].join('\n');
  const tags = await parser.parse(text, 'typescript');
  // a class expression (`static Inner = class Inner {`) is no definition of the tags: its method is Outer's
  const chunks = chunksOf('o.ts', text, tags);
  assert.deepEqual(outline(chunks.filter((c) => c.name === 'run' || c.name === 'grow')), [
    ['run', 'Outer', 4, 4],
    ['grow', 'Outer', 6, 8],
  ]);
  assert.deepEqual(outline(chunks.filter((c) => c.name === 'Outer' || c.name === 'Inner2')), [
    ['Outer', undefined, 1, 3],
    ['Inner2', undefined, 10, 12],
  ]);
  const nested = 'class A {\n  class_b = 0\n}\nclass Outer {\n  x = 1\n  m() {\n    class Local {\n      n() {}\n    }\n  }\n}\n';
  const nestedChunks = chunksOf('n.ts', nested, await parser.parse(nested, 'typescript'));
  assert.deepEqual(outline(nestedChunks), [
    ['A', undefined, 1, 3],
    ['Outer', undefined, 4, 5],
    ['m', 'Outer', 6, 10],
    ['Local', undefined, 7, 7],
    ['n', 'Local', 8, 8],
  ]);
});

test('a long header is cut after the last line within HEADER_MAX_CHARS, its first line always kept; its other fields go on in a header piece', async () => {
  const fields = Array.from({ length: 120 }, (_, i) => `  field${String(i).padStart(3, '0')}: number`); // 18 characters each
  const text = ['class Wide {', ...fields, '  get(): number {', '    return this.field000', '  }', '}'].join('\n');
  const chunks = await chunksOfSource('w.ts', text, 'typescript');
  const header = chunks[0]!;
  // 'class Wide {' is 12 characters; each field adds 1 + 18: (1600 − 12) / 19 = 83.6 → 83 fields
  assert.deepEqual([header.name, header.startLine, header.endLine], ['Wide', 1, 84]);
  assert.equal(header.text.length, 12 + 83 * 19);
  assert.ok(header.text.length <= HEADER_MAX_CHARS);
  // fields 84-120 (lines 85-121, 37 × 19 − 1 = 702 characters) in one more header piece of Wide's lines 1-125
  assert.deepEqual(outline(chunks.slice(1)), [
    ['Wide', undefined, 85, 121],
    ['get', 'Wide', 122, 124],
  ]);
  assert.equal(chunks[1]!.text, fields.slice(83).join('\n'));
  assert.deepEqual(chunks[1]!.partOf, { startLine: 1, endLine: 125 });
  assert.equal(header.partOf, undefined);
});

test('a Python class: its header holds the docstring and class attributes, not the comment and decorator of its first method (the method holds them); methods are owned by it', async () => {
  const text = [
    'import heapq',
    '',
    'class TaskQueue:',
    '    """A queue of tasks, by priority."""',
    '',
    '    limit = 64',
    '',
    '    # the heap of (priority, task)',
    '    @property',
    '    def size(self):',
    '        return len(self.heap)',
    '',
    '    def push(self, task):',
    '        heapq.heappush(self.heap, task)',
    '',
    'def drain(queue):',
    '    while queue.size:',
    '        queue.pop()',
    '',
  ].join('\n');
  const chunks = await chunksOfSource('tasks/queue.py', text, 'python');
  assert.deepEqual(outline(chunks), [
    ['TaskQueue', undefined, 3, 6],
    ['size', 'TaskQueue', 8, 11],
    ['push', 'TaskQueue', 13, 14],
    ['drain', undefined, 16, 18],
  ]);
  assert.equal(chunks[0]!.text, 'class TaskQueue:\n    """A queue of tasks, by priority."""\n\n    limit = 64');
  const other = await chunksOfSource('tasks/worker.py', 'def run_queue(queue):\n    """Runs the queue of tasks: every task of the queue, by priority."""\n    return TaskQueue()\n', 'python');
  const ranked = rankChunks([...other, ...chunks], 'Which file defines the class TaskQueue?');
  // the header, then the methods (by score), then the function that uses the class
  assert.deepEqual(ranked[0]!.chunk.name, 'TaskQueue');
  assert.deepEqual(new Set(ranked.slice(1, 3).map((r) => r.chunk.name)), new Set(['size', 'push']));
  assert.deepEqual(ranked.slice(3).map((r) => r.chunk.name), ['run_queue']);
});

test('Go: a struct is one chunk; its methods, with pointer, value and generic receivers, are owned by it and ranked after it when the question names the type', async () => {
  const text = [
    'package limit',
    '',
    '// RateLimiter spaces calls out.',
    'type RateLimiter struct {',
    '\tevery time.Duration',
    '\tlast  time.Time',
    '}',
    '',
    'func (r *RateLimiter) Wait() {',
    '\ttime.Sleep(r.every - time.Since(r.last))',
    '}',
    '',
    'func (RateLimiter) Kind() string { return "rate" }',
    '',
    'type Ring[T any] struct{ items []T }',
    '',
    'func (q *Ring[T]) Len() int { return len(q.items) }',
    '',
    'func NewRateLimiter(every time.Duration) *RateLimiter {',
    '\treturn &RateLimiter{every: every}',
    '}',
    '',
  ].join('\n');
  const chunks = await chunksOfSource('limit/rate.go', text, 'go');
  assert.deepEqual(outline(chunks), [
    ['RateLimiter', undefined, 3, 7],
    ['Wait', 'RateLimiter', 9, 11],
    ['Kind', 'RateLimiter', 13, 13],
    ['Ring', undefined, 15, 15],
    ['Len', 'Ring', 17, 17],
    ['NewRateLimiter', undefined, 19, 21],
  ]);
  const ranked = rankChunks(chunks, 'Which file defines the type RateLimiter?');
  // the type (it defines the name), then its methods (they belong to it), then the function using it
  assert.deepEqual(ranked.map((r) => r.chunk.name), ['RateLimiter', ...ranked.slice(1, 3).map((r) => r.chunk.name), 'NewRateLimiter']);
  assert.deepEqual(new Set(ranked.slice(1, 3).map((r) => r.chunk.name)), new Set(['Wait', 'Kind']));
});

test('Rust: a method is owned by the type of its impl block (generic, trait impl, multi-line header); a trait with methods gets a header', async () => {
  const text = [
    'pub struct Ring<T> {',
    '    items: Vec<T>,',
    '}',
    '',
    'impl<T: Clone> Ring<T> {',
    '    pub fn push(&mut self, x: T) {',
    '        self.items.push(x);',
    '    }',
    '}',
    '',
    'impl<T> fmt::Display for Ring<T>',
    'where',
    '    T: fmt::Display,',
    '{',
    '    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {',
    '        Ok(())',
    '    }',
    '}',
    '',
    'pub trait Shape {',
    '    const SIDES: u32;',
    '    fn area(&self) -> f64;',
    '}',
    '',
  ].join('\n');
  const chunks = await chunksOfSource('src/ring.rs', text, 'rust');
  assert.deepEqual(outline(chunks), [
    ['Ring', undefined, 1, 3],
    ['push', 'Ring', 6, 8],
    ['fmt', 'Ring', 15, 17],
    ['Shape', undefined, 20, 21],
    ['area', 'Shape', 22, 22],
  ]);
});

test('Java: the class header holds its fields; the constructor (named as the class) and the methods are owned by it', async () => {
  const text = [
    'public class Queue {',
    '  private static final int LIMIT = 8;',
    '  private int[] items;',
    '',
    '  @Deprecated',
    '  public Queue(int n) {',
    '    items = new int[n];',
    '  }',
    '',
    '  public int size() {',
    '    return items.length;',
    '  }',
    '}',
    '',
  ].join('\n');
  const chunks = await chunksOfSource('src/Queue.java', text, 'java');
  assert.deepEqual(outline(chunks), [
    ['Queue', undefined, 1, 3],
    ['Queue', 'Queue', 6, 8],
    ['size', 'Queue', 10, 12],
  ]);
});

test('C++: a class with declared and inline methods gets a header; an out-of-line definition is owned by its qualifier', async () => {
  const text = ['class Queue {', ' public:', '  int size;', '  void push(int x);', '  int pop() { return 0; }', '};', '', 'void Queue::push(int x) {', '  size++;', '}', ''].join('\n');
  const chunks = await chunksOfSource('src/queue.cpp', text, 'cpp');
  assert.deepEqual(outline(chunks), [
    ['Queue', undefined, 1, 3],
    ['push', 'Queue', 4, 4],
    ['pop', 'Queue', 5, 5],
    ['push', 'Queue', 8, 10],
  ]);
});

test('the owner is a term of a method chunk: a plain class name finds its methods by BM25 though their text never spells it; a method of the named type comes first', async () => {
  const chunk = (name: string, owner: string | undefined, text: string): Chunk => ({ path: 'src/shapes.ts', name, ...(owner !== undefined ? { owner } : {}), startLine: 1, endLine: 1, text });
  const chunks = [
    chunk('Circle', undefined, 'export class Circle {'),
    chunk('area', 'Circle', '  area() { return Math.PI * this.r ** 2 }'),
    chunk('area', 'Square', '  area() { return this.side ** 2 }'),
    chunk('perimeter', 'Square', '  perimeter() { return 4 * this.side }'),
  ];
  // `circle` is a term of the header (name and text) and of Circle.area's name field only
  assert.deepEqual(rankChunks(chunks, 'Which methods does the circle have?').map((r) => [r.chunk.name, r.chunk.owner]), [
    ['Circle', undefined],
    ['area', 'Circle'],
  ]);
  // both `area` chunks define the named method; the one whose owner is named too comes first
  assert.deepEqual(rankChunks(chunks, 'What does `area` of `Square` return?').map((r) => [r.chunk.name, r.chunk.owner]), [
    ['area', 'Square'],
    ['area', 'Circle'],
    ['perimeter', 'Square'],
  ]);
});
