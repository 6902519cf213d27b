#!/usr/bin/env node
// Writes the end-to-end test's workspace: a small TypeScript project (~1,500 tokens for the
// tiny model), enough for SnapKV to compress (L > B) and for Explain Selection to select code.
import fs from 'node:fs';
import path from 'node:path';

const root = process.argv[2];
if (!root) throw new Error('usage: fixture.mjs <folder>');
const files = {
  'README.md': '# shapes\n\nSmall geometry helpers: areas and perimeters of circles and rectangles,\nand a formatter for the results.\n',
  'package.json': '{\n  "name": "shapes",\n  "version": "1.0.0",\n  "main": "src/index.ts"\n}\n',
  'src/math.ts': [
    '/** Area of a circle of radius r. */',
    'export function circleArea(r: number): number {',
    '  return Math.PI * r * r;',
    '}',
    '',
    '/** Perimeter of a circle of radius r. */',
    'export function circlePerimeter(r: number): number {',
    '  return 2 * Math.PI * r;',
    '}',
    '',
    '/** A rectangle with its width and height. */',
    'export class Rectangle {',
    '  constructor(readonly width: number, readonly height: number) {}',
    '',
    '  /** Area of the rectangle. */',
    '  area(): number {',
    '    return this.width * this.height;',
    '  }',
    '',
    '  /** Perimeter of the rectangle. */',
    '  perimeter(): number {',
    '    return 2 * (this.width + this.height);',
    '  }',
    '}',
    '',
  ].join('\n'),
  'src/format.ts': [
    "import { circleArea, Rectangle } from './math';",
    '',
    '/** Formats a number with two decimals. */',
    'export function fixed(x: number): string {',
    '  return x.toFixed(2);',
    '}',
    '',
    '/** A line describing a circle. */',
    'export function describeCircle(r: number): string {',
    '  return `circle r=${fixed(r)} area=${fixed(circleArea(r))}`;',
    '}',
    '',
    '/** A line describing a rectangle. */',
    'export function describeRectangle(rect: Rectangle): string {',
    '  return `rectangle ${fixed(rect.width)}x${fixed(rect.height)} area=${fixed(rect.area())}`;',
    '}',
    '',
  ].join('\n'),
  'src/index.ts': [
    "import { describeCircle, describeRectangle } from './format';",
    "import { Rectangle } from './math';",
    '',
    'console.log(describeCircle(1));',
    'console.log(describeRectangle(new Rectangle(2, 3)));',
    '',
  ].join('\n'),
};
for (const [rel, text] of Object.entries(files)) {
  const file = path.join(root, rel);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
}
