/** File references in answers: what becomes a link (and to which line), and what stays text. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { findFileReferences } from '../../src/chat/links';

const refs = (text: string) => findFileReferences(text).map(({ path, line, column }) => ({ path, ...(line ? { line } : {}), ...(column ? { column } : {}) }));

test('paths with and without a line, column, range or #L anchor', () => {
  assert.deepEqual(refs('See src/pipeline/ask.ts:42 and src/a.ts:10:5, src/b.ts:3-9, src/c.ts#L7 and src/d.ts#L7-L9.'), [
    { path: 'src/pipeline/ask.ts', line: 42 },
    { path: 'src/a.ts', line: 10, column: 5 },
    { path: 'src/b.ts', line: 3 },
    { path: 'src/c.ts', line: 7 },
    { path: 'src/d.ts', line: 7 },
  ]);
});

test('offsets cover the whole reference, and a sentence-ending period stays out', () => {
  const text = 'It is in ask.ts:12.';
  const [r] = findFileReferences(text);
  assert.equal(text.slice(r!.start, r!.end), 'ask.ts:12');
});

test('bare names count with a source extension; relative and absolute paths with any', () => {
  assert.deepEqual(refs('README.md, package.json:3, ./x.py, ../y.rs, /abs/z.go, dir/data.xyz'), [
    { path: 'README.md' },
    { path: 'package.json', line: 3 },
    { path: './x.py' },
    { path: '../y.rs' },
    { path: '/abs/z.go' },
    { path: 'dir/data.xyz' },
  ]);
});

test('not file references: prose, versions, library names, member access, URLs, e-mail', () => {
  assert.deepEqual(refs('e.g. i.e. v1.2.3 and 3.14'), []);
  assert.deepEqual(refs('Node.js 20, Vue.js and Chart.js'), []);
  assert.deepEqual(refs('call foo.bar.baz() or this.value'), []);
  assert.deepEqual(refs('https://github.com/a/b/blob/main/src/x.ts and http://e.com/y.md'), []);
  assert.deepEqual(refs('mail dev@example.com'), []);
});
