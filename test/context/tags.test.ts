/**
 * Tree-sitter definitions extraction (issue 15): one fixture per language in
 * test/context/tags-fixtures, with the exact definitions read off the fixture by hand
 * ([kind, name, line of the name, last line of the definition, the name's line trimmed]).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { GRAMMAR_IDS, grammarForPath } from '../../src/context/map/languages';
import { createTagsParser, type FileTags } from '../../src/context/map/tags';

const parser = createTagsParser();

async function tagsOf(fixture: string): Promise<FileTags> {
  const file = fixture.replace(/\.txt$/, '');
  const grammar = grammarForPath(file);
  assert.ok(grammar, `no grammar for ${file}`);
  return parser.parse(readFileSync(path.join(__dirname, 'tags-fixtures', fixture), 'utf8'), grammar);
}

function rows(tags: FileTags): Array<[string, string, number, number, string]> {
  return tags.definitions.map((d) => [d.kind, d.name, d.line, d.endLine, d.signature]);
}

test('TypeScript: functions, const arrow functions, classes, methods, interfaces, types, enums, constants; let is not a constant', async () => {
  assert.deepEqual(rows(await tagsOf('shapes.ts.txt')), [
    ['const', 'MAX_DEPTH', 3, 3, 'export const MAX_DEPTH = 8;'],
    ['function', 'helper', 4, 4, 'const helper = (x: number): number => x + 1;'],
    ['interface', 'Shape', 7, 9, 'export interface Shape {'],
    ['type', 'Point', 11, 11, 'export type Point = { x: number; y: number };'],
    ['type', 'Color', 13, 13, 'enum Color { Red, Green }'],
    ['class', 'Base', 15, 17, 'export abstract class Base {'],
    ['method', 'describe', 16, 16, 'abstract describe(): string;'],
    ['class', 'Circle', 19, 25, 'export class Circle extends Base implements Shape {'],
    ['method', 'constructor', 20, 20, 'constructor(private readonly r: number) { super(); }'],
    ['method', 'area', 21, 23, 'area(): number {'],
    ['method', 'describe', 24, 24, 'describe(): string { return `circle ${this.r}`; }'],
    ['function', 'loadShape', 27, 30, 'export async function loadShape(path: string): Promise<Shape> {'],
    ['function', 'ids', 32, 32, 'function* ids(): Generator<number> { yield counter++; }'],
  ]);
});

test('TSX parses with its own grammar', async () => {
  const tags = await parser.parse('export function App(props: { title: string }) {\n  return <h1 className="t">{props.title}</h1>;\n}\n', 'tsx');
  assert.deepEqual(rows(tags), [['function', 'App', 1, 3, 'export function App(props: { title: string }) {']]);
});

test('JavaScript: const function expressions, classes with static methods, functions', async () => {
  assert.deepEqual(rows(await tagsOf('shapes.js.txt')), [
    ['const', 'fs', 1, 1, "const fs = require('node:fs');"],
    ['const', 'LIMIT', 3, 3, 'const LIMIT = 3;'],
    ['function', 'square', 5, 5, 'const square = function (x) { return x * x; };'],
    ['class', 'Square', 7, 11, 'class Square {'],
    ['method', 'constructor', 8, 8, 'constructor(side) { this.side = side; }'],
    ['method', 'area', 9, 9, 'area() { return square(this.side); }'],
    ['method', 'unit', 10, 10, 'static unit() { return new Square(1); }'],
    ['function', 'readSides', 13, 15, 'function readSides(file) {'],
  ]);
});

test('Python: classes, methods (decorated too), functions, async functions, upper-case module constants only', async () => {
  assert.deepEqual(rows(await tagsOf('store.py.txt')), [
    ['const', 'MAX_SIZE', 3, 3, 'MAX_SIZE = 1024'],
    ['class', 'Store', 7, 15, 'class Store:'],
    ['method', '__init__', 10, 11, 'def __init__(self, root):'],
    ['method', 'size', 14, 15, 'def size(self):'],
    ['function', 'open_store', 18, 19, 'def open_store(path: str) -> Store:'],
    ['function', 'fetch', 22, 23, 'async def fetch(url):'],
  ]);
});

test('Go: constants, interfaces, struct and named types, methods, functions; references counted', async () => {
  const tags = await tagsOf('shapes.go.txt');
  assert.deepEqual(rows(tags), [
    ['const', 'Pi2', 5, 5, 'const Pi2 = math.Pi * 2'],
    ['interface', 'Shape', 7, 9, 'type Shape interface {'],
    ['type', 'Circle', 11, 13, 'type Circle struct {'],
    ['type', 'Celsius', 15, 15, 'type Celsius float64'],
    ['method', 'Area', 17, 19, 'func (c Circle) Area() float64 {'],
    ['function', 'NewCircle', 21, 23, 'func NewCircle(r float64) *Circle {'],
  ]);
  // every identifier-like node but the six definition names, counted by hand in the fixture
  assert.deepEqual(tags.references, [
    ['Area', 1], ['Circle', 3], ['Pi', 1], ['Pi2', 1], ['R', 4], ['c', 3], ['float64', 5], ['math', 1], ['r', 2],
  ]);
});

test('Rust: const and static items, structs, enums, traits, type aliases, impl and trait methods, functions', async () => {
  assert.deepEqual(rows(await tagsOf('shapes.rs.txt')), [
    ['const', 'LIMIT', 3, 3, 'pub const LIMIT: usize = 10;'],
    ['const', 'GREETING', 4, 4, 'static GREETING: &str = "hi";'],
    ['type', 'Circle', 6, 8, 'pub struct Circle {'],
    ['type', 'Shape', 10, 12, 'pub enum Shape {'],
    ['interface', 'Area', 14, 16, 'pub trait Area {'],
    ['method', 'area', 15, 15, 'fn area(&self) -> f64;'],
    ['type', 'Meters', 18, 18, 'type Meters = f64;'],
    ['method', 'area', 21, 23, 'fn area(&self) -> f64 {'],
    ['method', 'fmt', 27, 29, 'fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {'],
    ['function', 'new_circle', 32, 34, 'pub fn new_circle(r: f64) -> Circle {'],
  ]);
});

test('Java: classes, records, interfaces, enums, constructors, methods (annotated: the name line), static final constants only', async () => {
  assert.deepEqual(rows(await tagsOf('Circle.java.txt')), [
    ['class', 'Circle', 5, 17, 'public class Circle implements Shape {'],
    ['const', 'PI2', 6, 6, 'public static final double PI2 = 6.28;'],
    ['method', 'Circle', 9, 11, 'public Circle(double r) {'],
    ['method', 'area', 14, 16, 'public double area() {'],
    ['interface', 'Shape', 19, 21, 'interface Shape {'],
    ['method', 'area', 20, 20, 'double area();'],
    ['type', 'Color', 23, 23, 'enum Color { RED, GREEN }'],
    ['class', 'Point', 25, 25, 'record Point(int x, int y) {}'],
  ]);
});

test('C (parsed with the C++ grammar): macros, typedefs, structs, enums, prototypes, functions returning pointers', async () => {
  assert.deepEqual(rows(await tagsOf('list.c.txt')), [
    ['const', 'BUF_SIZE', 3, 3, '#define BUF_SIZE 256'],
    ['type', 'node', 5, 8, 'typedef struct node {'],
    ['type', 'node_t', 8, 8, '} node_t;'],
    ['type', 'list', 10, 12, 'struct list {'],
    ['type', 'mode', 14, 14, 'enum mode { MODE_A, MODE_B };'],
    ['function', 'count_nodes', 16, 16, 'static int count_nodes(const node_t *n);'],
    ['function', 'list_length', 18, 20, 'int list_length(const struct list *l) {'],
    ['function', 'make_node', 23, 26, 'make_node(int value)'],
  ]);
});

test('C++: constexpr constants, classes, structs, in-class and out-of-class methods, aliases, templates', async () => {
  assert.deepEqual(rows(await tagsOf('geo.cpp.txt')), [
    ['const', 'kMax', 5, 5, 'constexpr int kMax = 4;'],
    ['class', 'Shape', 7, 11, 'class Shape {'],
    ['method', 'area', 10, 10, 'virtual double area() const = 0;'],
    ['type', 'Point', 13, 15, 'struct Point {'],
    ['class', 'Circle', 17, 23, 'class Circle : public Shape {'],
    ['method', 'Circle', 19, 19, 'explicit Circle(double r) : r_(r) {}'],
    ['method', 'area', 20, 20, 'double area() const override;'],
    ['method', 'area', 25, 25, 'double Circle::area() const { return 3.14 * r_ * r_; }'],
    ['type', 'Points', 27, 27, 'using Points = std::vector<Point>;'],
    ['function', 'twice', 30, 30, 'T twice(T v) { return v + v; }'],
  ]);
});

test('every grammar loads with the pinned web-tree-sitter (ABI) and a syntax error still yields the definitions around it', async () => {
  for (const grammar of GRAMMAR_IDS) await parser.parse('', grammar);
  const tags = await parser.parse('def ok():\n    return 1\n\ndef broken(:\n    pass\n\nclass After:\n    pass\n', 'python');
  assert.deepEqual(tags.definitions.map((d) => d.name).filter((n) => n !== 'broken'), ['ok', 'After']);
});

test('a long signature line is cut to 200 characters with an ellipsis', async () => {
  const tags = await parser.parse(`function f(${'a'.repeat(300)}) {}\n`, 'javascript');
  assert.equal(tags.definitions[0]!.signature.length, 200);
  assert.ok(tags.definitions[0]!.signature.endsWith('…'));
});

test('files are mapped to grammars by extension, case-insensitively; unknown extensions have none', () => {
  assert.equal(grammarForPath('a/b.TS'), 'typescript');
  assert.equal(grammarForPath('x.d.ts'), 'typescript');
  assert.equal(grammarForPath('w.h'), 'cpp');
  assert.equal(grammarForPath('README.md'), undefined);
  assert.equal(grammarForPath('Makefile'), undefined);
});
