#!/usr/bin/env node
/**
 * `node scripts/icon.mjs`: renders media/icon.png (128x128, the Marketplace and Open VSX icon) from
 * media/reposnap.svg, the activity-bar glyph (24x24, stroked in `currentColor`): the glyph in white
 * on a rounded dark-blue square, so that it reads on light and dark pages alike. Rasterized by
 * resvg (@resvg/resvg-js, a devDependency).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Resvg } from '@resvg/resvg-js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SIZE = 128;
const BACKGROUND = '#1f3b5c';
const INK = '#ffffff';

const glyph = fs.readFileSync(path.join(ROOT, 'media', 'reposnap.svg'), 'utf8');
// the glyph's drawing (its children, comments dropped), restroked in INK
const body = /<svg[^>]*>([\s\S]*)<\/svg>/.exec(glyph)?.[1]?.replace(/<!--[\s\S]*?-->/g, '').trim();
if (!body) throw new Error('media/reposnap.svg: no <svg> element');
const stroke = /<svg[^>]*\bstroke-width="([\d.]+)"/.exec(glyph)?.[1] ?? '1.6';
// 24 user units inside a 96 px area centred in the square
const scale = 96 / 24;
const offset = (SIZE - 96) / 2;
const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${SIZE}" height="${SIZE}" viewBox="0 0 ${SIZE} ${SIZE}">
  <rect width="${SIZE}" height="${SIZE}" rx="24" fill="${BACKGROUND}"/>
  <g transform="translate(${offset} ${offset}) scale(${scale})" fill="none" stroke="${INK}" stroke-width="${stroke}" stroke-linecap="round" stroke-linejoin="round">
    ${body}
  </g>
</svg>`;
const png = new Resvg(svg, { fitTo: { mode: 'width', value: SIZE } }).render().asPng();
fs.writeFileSync(path.join(ROOT, 'media', 'icon.png'), png);
process.stdout.write(`media/icon.png: ${SIZE}x${SIZE}, ${png.length} bytes\n`);
