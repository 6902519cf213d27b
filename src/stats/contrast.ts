/**
 * WCAG 2.x colour contrast for the cache stats panel (src/stats/palette.ts): the contrast ratio
 * of two opaque colours, and the nearest colour that reaches a ratio against a background, so
 * that text passes WCAG AA at 4.5:1 (success criterion 1.4.3) and bars and lines at 3:1 (1.4.11).
 * Parsing, relative luminance, the ratio and mixing are colord's (its a11y plugin follows the
 * WCAG definitions of relative luminance and contrast ratio, and floors the ratio to two
 * decimals, so that a colour reported as passing does pass).
 */
import { colord, extend } from 'colord';
import a11yPlugin from 'colord/plugins/a11y';
import mixPlugin from 'colord/plugins/mix';

extend([a11yPlugin, mixPlugin]);

/** WCAG AA minimum contrast for text. */
export const AA_TEXT = 4.5;
/** WCAG AA minimum contrast for graphical objects (bars, lines, points). */
export const AA_GRAPHICS = 3;

/**
 * `#rrggbb` of an opaque CSS colour (`#rgb`, `#rrggbb`, `rgb(…)`, `hsl(…)`, a name), or undefined
 * for anything else, including a colour that is not fully opaque (its contrast depends on what
 * lies under it).
 */
export function opaqueHex(css: string): string | undefined {
  const c = colord(css.trim());
  return c.isValid() && c.alpha() === 1 ? c.toHex() : undefined;
}

/**
 * Contrast ratio of two opaque colours, (L1 + 0.05) / (L2 + 0.05) with L1 the lighter relative
 * luminance: from 1 (the same) to 21 (black on white), floored to two decimals.
 */
export function contrastRatio(a: string, b: string): number {
  return colord(a).contrast(b);
}

/**
 * `color` (as `#rrggbb`) if it reaches `min` against `background`; otherwise `color` mixed toward
 * black or white (first the side with more contrast against the background: black on a light
 * one) by the smallest ratio, in steps of 1/64, that reaches it, so that its hue stays
 * recognisable. Black or white reach at least 4.58:1 against any background, so `min` ≤ 4.5
 * always has a result. Both colours must be opaque.
 */
export function ensureContrast(color: string, background: string, min: number): string {
  const base = colord(color);
  if (base.contrast(background) >= min) return base.toHex();
  const sides = colord('#000000').contrast(background) >= colord('#ffffff').contrast(background) ? ['#000000', '#ffffff'] : ['#ffffff', '#000000'];
  for (const side of sides) {
    for (let step = 1; step <= 64; step++) {
      const mixed = base.mix(side, step / 64);
      if (mixed.contrast(background) >= min) return mixed.toHex();
    }
  }
  return sides[0]!;
}
