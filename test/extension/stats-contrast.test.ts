/**
 * The cache stats panel's colours pass WCAG AA (issue 14, section 5): text 4.5:1 and bars and
 * lines 3:1 against the editor background of the light, dark, high-contrast and high-contrast
 * light themes, and of other common backgrounds. The ratios are computed here with WCAG 2.x's
 * own formula (relative luminance of the linearised sRGB channels), independently of the product's
 * colord-based code; one pair is worked by hand below.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { contrastRatio, ensureContrast, opaqueHex } from '../../src/stats/contrast';
import { BASE_PALETTES, statsPalette, TEXT_ROLES, THEME_BACKGROUNDS, themeKindOf, type StatsPalette, type ThemeKind } from '../../src/stats/palette';

/** WCAG 2.x relative luminance of `#rrggbb`. */
function luminance(hex: string): number {
  const n = parseInt(hex.slice(1), 16);
  const lin = (v: number) => {
    const c = v / 255;
    return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * lin((n >> 16) & 255) + 0.7152 * lin((n >> 8) & 255) + 0.0722 * lin(n & 255);
}
/** WCAG 2.x contrast ratio of two `#rrggbb` colours. */
function ratio(a: string, b: string): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi! + 0.05) / (lo! + 0.05);
}

const KINDS: ThemeKind[] = ['light', 'dark', 'high-contrast', 'high-contrast-light'];
const roles = (p: StatsPalette) => Object.entries(p) as [keyof StatsPalette, string][];

test('the formula, checked by hand: #b42318 ("miss" text, light theme) on white is 6.57:1', () => {
  // R = 0xb4 = 180: 180/255 = 0.70588 → ((0.70588 + 0.055) / 1.055)^2.4 = 0.72122^2.4 = 0.45645
  // G = 0x23 = 35:  0.13725 → (0.18223)^2.4 = 0.016807
  // B = 0x18 = 24:  0.09412 → (0.14134)^2.4 = 0.009135
  // L = 0.2126 · 0.45645 + 0.7152 · 0.016807 + 0.0722 · 0.009135 = 0.109721; white L = 1
  // ratio = (1 + 0.05) / (0.109721 + 0.05) = 6.574
  assert.ok(Math.abs(luminance('#b42318') - 0.109721) < 1e-5, String(luminance('#b42318')));
  assert.ok(Math.abs(ratio('#b42318', '#ffffff') - 6.574) < 0.001);
  // the WebAIM reference pair: #767676 on white is the lightest grey that passes 4.5:1 (4.54:1)
  assert.equal(ratio('#767676', '#ffffff').toFixed(2), '4.54');
  // the product's ratio (colord, floored to 2 decimals) agrees
  assert.equal(contrastRatio('#b42318', '#ffffff'), 6.57);
  assert.equal(contrastRatio('#767676', '#ffffff'), 4.54);
});

test('every colour of the panel passes WCAG AA in the light, dark and high-contrast themes (text 4.5:1, bars 3:1)', () => {
  const table: string[] = [];
  for (const kind of KINDS) {
    const { palette, background } = statsPalette(kind);
    assert.equal(background, THEME_BACKGROUNDS[kind]);
    for (const [role, color] of roles(palette)) {
      assert.match(color, /^#[0-9a-f]{6}$/, `${kind} ${role} is opaque`);
      const min = TEXT_ROLES.has(role) ? 4.5 : 3;
      const r = ratio(color, background);
      table.push(`${kind} ${role} ${color} on ${background}: ${r.toFixed(2)}`);
      assert.ok(r >= min, `${kind} ${role} ${color} on ${background}: ${r.toFixed(2)} < ${min}`);
    }
  }
  console.log(table.join('\n'));
});

test('on other themes\' backgrounds the colours are adjusted until they pass', () => {
  const cases: [ThemeKind, string][] = [
    ['light', '#f3f3f3'], ['light', '#e8e8e8'], ['light', '#fdf6e3' /* Solarized Light */], ['light', '#f5f5f5'],
    ['dark', '#252526'], ['dark', '#3c3c3c'], ['dark', '#002b36' /* Solarized Dark */], ['dark', '#282a36' /* Dracula */], ['dark', '#4a4a4a'],
    ['high-contrast', '#000000'], ['high-contrast', '#0c141f'], ['high-contrast-light', '#ffffff'],
  ];
  for (const [kind, bg] of cases) {
    const { palette, background } = statsPalette(kind, bg);
    assert.equal(background, bg);
    for (const [role, color] of roles(palette)) {
      const min = TEXT_ROLES.has(role) ? 4.5 : 3;
      assert.ok(ratio(color, bg) >= min, `${kind} ${role} ${color} on ${bg}: ${ratio(color, bg).toFixed(2)} < ${min}`);
    }
  }
  // a background that is not opaque (or missing) falls back to the theme's default
  assert.equal(statsPalette('dark', 'rgba(30, 30, 30, 0.5)').background, '#1e1e1e');
  assert.equal(statsPalette('light', '').background, '#ffffff');
});

test('the colours the panel used before fail: VS Code\'s charts.orange on the light theme is 2.9:1', () => {
  // the "cold" bars and "miss" text were var(--vscode-charts-orange), #d18616 in Light+
  assert.equal(ratio('#d18616', '#ffffff').toFixed(2), '2.94'); // below 3:1 even for bars
  const fixed = ensureContrast('#d18616', '#ffffff', 4.5);
  assert.notEqual(fixed, '#d18616');
  assert.ok(ratio(fixed, '#ffffff') >= 4.5, fixed);
  // darker, not a different hue: still more red than green than blue
  const [r, g, b] = [1, 3, 5].map((i) => parseInt(fixed.slice(i, i + 2), 16));
  assert.ok(r! > g! && g! > b!, fixed);
  // a colour that passes is kept as it is
  assert.equal(ensureContrast('#b42318', '#ffffff', 4.5), '#b42318');
});

test('the base palettes already pass on their own theme (no adjustment needed there)', () => {
  for (const kind of KINDS) assert.deepEqual(statsPalette(kind).palette, BASE_PALETTES[kind], kind);
});

test('theme kind from the webview body classes; opaque colours only', () => {
  assert.equal(themeKindOf(['vscode-light']), 'light');
  assert.equal(themeKindOf(['vscode-dark']), 'dark');
  assert.equal(themeKindOf(['vscode-high-contrast']), 'high-contrast');
  assert.equal(themeKindOf(['vscode-high-contrast', 'vscode-high-contrast-light']), 'high-contrast-light');
  assert.equal(themeKindOf([]), 'dark');
  assert.equal(opaqueHex('#FFF'), '#ffffff');
  assert.equal(opaqueHex('rgb(30, 30, 30)'), '#1e1e1e');
  assert.equal(opaqueHex('#1e1e1e80'), undefined);
  assert.equal(opaqueHex('not a colour'), undefined);
});

test('the panel draws with the palette, not the theme\'s chart colours', () => {
  const root = path.resolve(__dirname, '..', '..');
  const page = fs.readFileSync(path.join(root, 'media', 'src', 'stats.ts'), 'utf8');
  const css = fs.readFileSync(path.join(root, 'media', 'stats.css'), 'utf8');
  assert.doesNotMatch(page + css, /--vscode-charts-/);
  for (const role of ['kvBefore', 'kvAfter', 'ratio', 'cold', 'warm', 'hitText', 'partialText', 'missText']) assert.match(page, new RegExp(`palette\\.${role}\\b`), role);
  for (const cls of ['cache-hit', 'cache-partial', 'cache-continue', 'cache-miss', 'cache-off']) assert.match(css, new RegExp(`td\\.${cls}\\b[^{]*\\{ color: var\\(--reposnap-`), cls);
});
