/**
 * The cache stats panel's colours: opaque, per theme kind, each checked against the editor
 * background it is drawn on so that it passes WCAG AA (text 4.5:1, bars and lines 3:1; see
 * src/stats/contrast.ts). VS Code's `--vscode-charts-*` colours are not used: in the light theme
 * `charts.orange` (#d18616) has 2.9:1 against white, so the "cold" bars and "miss" text were faint.
 * Plain TypeScript: the webview (media/src/stats.ts) and the tests use it.
 */
import { AA_GRAPHICS, AA_TEXT, ensureContrast, opaqueHex } from './contrast';

/** VS Code's theme kinds, as the webview's `<body>` class names them (`vscode-light`, …). */
export type ThemeKind = 'light' | 'dark' | 'high-contrast' | 'high-contrast-light';

/** What each colour of the panel is for. */
export interface StatsPalette {
  /** Bars: KV cache before SnapKV (L cells). */
  kvBefore: string;
  /** Bars: KV cache after SnapKV (B cells). */
  kvAfter: string;
  /** Line and points: B / L per question. */
  ratio: string;
  /** Bars: time to first token without cached state (`miss`, `off`). */
  cold: string;
  /** Bars: time to first token with cached state (`hit`, `partial`, `continue`). */
  warm: string;
  /** Text: the table's `hit` cells. */
  hitText: string;
  /** Text: the table's `partial` and `continue` cells. */
  partialText: string;
  /** Text: the table's `miss` and `off` cells. */
  missText: string;
}

/** The roles that are text (4.5:1); the others are graphics (3:1). */
export const TEXT_ROLES: ReadonlySet<keyof StatsPalette> = new Set(['hitText', 'partialText', 'missText']);

/** Default editor background of each theme kind (Light+, Dark+, High Contrast, High Contrast Light). */
export const THEME_BACKGROUNDS: Readonly<Record<ThemeKind, string>> = {
  light: '#ffffff',
  dark: '#1e1e1e',
  'high-contrast': '#000000',
  'high-contrast-light': '#ffffff',
};

/**
 * The colours before the contrast check, per theme kind: orange for "more" (before, cold, miss),
 * blue and green for "less" (after, warm, hit), amber for partial hits; darker on light themes.
 */
export const BASE_PALETTES: Readonly<Record<ThemeKind, StatsPalette>> = {
  light: {
    kvBefore: '#c75300', kvAfter: '#0067c0', ratio: '#1a7f37', cold: '#c75300', warm: '#1a7f37',
    hitText: '#116329', partialText: '#7d5200', missText: '#b42318',
  },
  dark: {
    kvBefore: '#f0883e', kvAfter: '#4daafc', ratio: '#73c991', cold: '#f0883e', warm: '#73c991',
    hitText: '#73c991', partialText: '#e2c08d', missText: '#f48771',
  },
  'high-contrast': {
    kvBefore: '#ffa657', kvAfter: '#79c0ff', ratio: '#7ee787', cold: '#ffa657', warm: '#7ee787',
    hitText: '#7ee787', partialText: '#f2cc60', missText: '#ff9492',
  },
  'high-contrast-light': {
    kvBefore: '#953800', kvAfter: '#0550ae', ratio: '#116329', cold: '#953800', warm: '#116329',
    hitText: '#116329', partialText: '#6f4400', missText: '#a40e26',
  },
};

/** The theme kind of a webview `<body>` class list; unknown classes give `dark` (VS Code's default theme). */
export function themeKindOf(classes: Iterable<string>): ThemeKind {
  const set = new Set(classes);
  if (set.has('vscode-high-contrast-light')) return 'high-contrast-light';
  if (set.has('vscode-high-contrast')) return 'high-contrast';
  if (set.has('vscode-light')) return 'light';
  return 'dark';
}

/**
 * The panel's colours for a theme kind, drawn on `background` (the webview's
 * `--vscode-editor-background`; the kind's default when it is missing or not opaque): each base
 * colour, darkened or lightened where needed until it reaches 4.5:1 (text) or 3:1 (graphics)
 * against the background. Every value is an opaque `#rrggbb`.
 */
export function statsPalette(kind: ThemeKind, background?: string): { palette: StatsPalette; background: string } {
  const bg = (background && opaqueHex(background)) || THEME_BACKGROUNDS[kind];
  const base = BASE_PALETTES[kind];
  const palette = {} as StatsPalette;
  for (const role of Object.keys(base) as (keyof StatsPalette)[]) {
    palette[role] = ensureContrast(base[role], bg, TEXT_ROLES.has(role) ? AA_TEXT : AA_GRAPHICS);
  }
  return { palette, background: bg };
}
