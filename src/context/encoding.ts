import { analyse } from 'chardet';

/**
 * A legacy (non-Unicode) encoding a text file can be decoded from, by its WHATWG Encoding
 * Standard name (the name `TextDecoder` reports): Windows-1252 (ISO-8859-1 is decoded as this
 * superset, as the standard's labels say), and the encodings of other scripts: Cyrillic,
 * Greek, Hebrew, Arabic, Thai, Japanese, Korean, Chinese. The other Latin-script encodings
 * (Central European, Turkish, Baltic, Vietnamese) are not told from Windows-1252: see
 * `detectAndDecode`.
 */
export type LegacyEncodingName =
  | 'windows-1251'
  | 'windows-1252'
  | 'windows-1253'
  | 'windows-1255'
  | 'windows-1256'
  | 'windows-874'
  | 'iso-8859-5'
  | 'iso-8859-6'
  | 'iso-8859-7'
  | 'iso-8859-8'
  | 'koi8-r'
  | 'shift_jis'
  | 'euc-jp'
  | 'euc-kr'
  | 'gb18030'
  | 'big5';

/**
 * The detector's confidence (0..100, chardet's scale) from which its guess is trusted. On the
 * labelled set of `bench/encoding-detect.ts` (bench/results/encoding-detect.json) every threshold
 * from 10 to 40 gets 55 of 62 right, 0 lets noise through as KOI8-R (confidence 1-2), and 50 loses
 * Russian (40-46). 20 rather than 10: ICU gives exactly 10 to any bytes that form at most ten
 * well-formed double-byte characters, too weak a sign (the three bytes "a\xC3b", a cut UTF-8
 * "Ã", came out as Big5 "a壟" at 10).
 */
export const DEFAULT_MIN_CONFIDENCE = 20;

/** At most this many leading bytes are given to the detector (64 KiB). */
export const DETECT_SAMPLE_BYTES = 65_536;

/** One decoding of bytes in a legacy encoding. */
export interface LegacyDecoding {
  text: string;
  encoding: LegacyEncodingName;
  /** How the encoding is named in notes, e.g. `'Shift_JIS'`, `'Windows-1251'`. */
  display: string;
  /** The detector's confidence, 0..100. */
  confidence: number;
}

/** What `detectAndDecode` found. */
export type LegacyResult =
  | { ok: true; decoding: LegacyDecoding }
  /** `best`: the detector's best guess, when it had one (trusted or not, decodable or not). */
  | { ok: false; best?: { display: string; confidence: number } };

/**
 * Detects the legacy encoding of `data` (bytes that are not valid UTF-8) with chardet (a port of
 * ICU's CharsetDetector; the first `DETECT_SAMPLE_BYTES` bytes) and decodes it with the first of
 * the detector's guesses, best first, whose confidence is at least `minConfidence` (default
 * `DEFAULT_MIN_CONFIDENCE`) and that decodes every byte to a character: single-byte encodings
 * through a byte → character table (Windows-1252's written out here, as Node 20.18.3+ decodes it
 * as Latin-1: nodejs/node#60888; the others read from `TextDecoder` one byte at a time, a byte it
 * leaves undefined, or maps to a C1 control, rejects the guess); multi-byte ones through
 * `TextDecoder`, checked against the encoding's own byte structure (ICU's converters drop some
 * invalid sequences without an error even with `fatal`: nodejs/node#40091). With `truncated`, a
 * character cut at the end of `data` is dropped. Guesses Node cannot decode (ISO-2022-*,
 * UTF-16/32 without a byte-order mark) are passed over, and so are Latin-script encodings other
 * than Windows-1252 (windows-1250/1254/1257/1258, ISO-8859-2/9): on a short Latin text ICU's
 * n-gram scores cannot tell them apart ("El niño" scored windows-1257 66, ISO-8859-1 33;
 * "café crème naïve" ISO-8859-2 16 and nothing for ISO-8859-1), so Windows-1252 stays the
 * Latin default, as before detection. A UTF-8 guess (bytes that are mostly
 * UTF-8) ends the search. Pure function; never throws.
 */
export function detectAndDecode(data: Uint8Array, options: { truncated?: boolean; minConfidence?: number } = {}): LegacyResult {
  const minConfidence = options.minConfidence ?? DEFAULT_MIN_CONFIDENCE;
  let matches: Array<{ name: string; confidence: number }>;
  try {
    matches = analyse(detectionSample(data));
  } catch {
    matches = [];
  }
  const first = matches[0];
  const best = first !== undefined ? { display: displayName(first.name), confidence: first.confidence } : undefined;
  for (const match of matches) {
    if (match.confidence < minConfidence) break;
    const encoding = whatwgName(match.name);
    // Mostly UTF-8 (a file cut or corrupted in one place): no legacy guess below it is trusted.
    if (match.name === 'UTF-8') break;
    if (encoding === undefined) continue;
    const text = decodeLegacy(data, encoding, options.truncated ?? false);
    if (text !== undefined) return { ok: true, decoding: { text, encoding, display: displayName(encoding), confidence: match.confidence } };
  }
  return { ok: false, ...(best !== undefined ? { best } : {}) };
}

/**
 * The bytes the detector sees: the lines of the first `DETECT_SAMPLE_BYTES` bytes that hold a
 * byte 0x80 or above. Lines of plain ASCII (the code around a comment in Cyrillic) say nothing
 * about the encoding, but weigh in the detector's Latin n-gram counts: on a source file with
 * Russian comments it said windows-1252 (confidence 24) until they were left out.
 */
function detectionSample(data: Uint8Array): Uint8Array {
  const head = data.length > DETECT_SAMPLE_BYTES ? data.subarray(0, DETECT_SAMPLE_BYTES) : data;
  const parts: Uint8Array[] = [];
  let total = 0;
  let start = 0;
  while (start < head.length) {
    let end = head.indexOf(0x0a, start);
    end = end < 0 ? head.length : end + 1;
    const line = head.subarray(start, end);
    if (line.some((b) => b >= 0x80)) {
      parts.push(line);
      total += line.length;
    }
    start = end;
  }
  if (total === head.length) return head;
  const out = new Uint8Array(total);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/**
 * Decodes `data` from `encoding` without losing a byte, or returns undefined when a byte (or
 * sequence) has no character there. See `detectAndDecode`. Never throws.
 */
export function decodeLegacy(data: Uint8Array, encoding: LegacyEncodingName, truncated = false): string | undefined {
  const table = singleByteTable(encoding);
  if (table !== undefined) return decodeSingleByte(data, table);
  return decodeMultiByte(data, encoding, truncated);
}

const CHARDET_NAMES: Record<string, LegacyEncodingName> = {
  'ISO-8859-1': 'windows-1252',
  'windows-1251': 'windows-1251',
  'windows-1252': 'windows-1252',
  'windows-1253': 'windows-1253',
  'windows-1255': 'windows-1255',
  'windows-1256': 'windows-1256',
  'windows-874': 'windows-874',
  'ISO-8859-5': 'iso-8859-5',
  'ISO-8859-6': 'iso-8859-6',
  'ISO-8859-7': 'iso-8859-7',
  'ISO-8859-8': 'iso-8859-8',
  'KOI8-R': 'koi8-r',
  Shift_JIS: 'shift_jis',
  'EUC-JP': 'euc-jp',
  'EUC-KR': 'euc-kr',
  GB18030: 'gb18030',
  Big5: 'big5',
};

function whatwgName(chardetName: string): LegacyEncodingName | undefined {
  return CHARDET_NAMES[chardetName];
}

const DISPLAY: Partial<Record<string, string>> = {
  shift_jis: 'Shift_JIS',
  'euc-jp': 'EUC-JP',
  'euc-kr': 'EUC-KR',
  gb18030: 'GB18030',
  big5: 'Big5',
  'koi8-r': 'KOI8-R',
};

/** A chardet or WHATWG name as notes show it: `'Windows-1251'`, `'ISO-8859-5'`, `'Shift_JIS'`. */
function displayName(name: string): string {
  const whatwg = whatwgName(name) ?? name;
  const known = DISPLAY[whatwg];
  if (known !== undefined) return known;
  if (/^windows-/i.test(whatwg)) return 'Windows-' + whatwg.slice(8);
  return whatwg.toUpperCase();
}

// Windows-1252 code points for bytes 0x80..0x9F (WHATWG index-windows-1252; the rest of the
// bytes are Latin-1). The five bytes Microsoft leaves undefined (0x81 0x8D 0x8F 0x90 0x9D) are
// left undefined here too: text does not hold C1 controls.
const CP1252_HIGH = [
  0x20ac, -1, 0x201a, 0x0192, 0x201e, 0x2026, 0x2020, 0x2021, 0x02c6, 0x2030, 0x0160, 0x2039, 0x0152, -1, 0x017d, -1,
  -1, 0x2018, 0x2019, 0x201c, 0x201d, 0x2022, 0x2013, 0x2014, 0x02dc, 0x2122, 0x0161, 0x203a, 0x0153, -1, 0x017e, 0x0178,
];

const tables = new Map<LegacyEncodingName, Int32Array>();

/** byte → code point (-1: undefined) for a single-byte encoding; undefined for multi-byte ones. */
function singleByteTable(encoding: LegacyEncodingName): Int32Array | undefined {
  if (MULTI_BYTE.has(encoding)) return undefined;
  let table = tables.get(encoding);
  if (table !== undefined) return table;
  table = new Int32Array(256);
  for (let b = 0; b < 0x80; b++) table[b] = b;
  if (encoding === 'windows-1252') {
    for (let b = 0x80; b < 0x100; b++) table[b] = b < 0xa0 ? CP1252_HIGH[b - 0x80]! : b;
  } else {
    const decoder = new TextDecoder(encoding);
    for (let b = 0x80; b < 0x100; b++) {
      const s = decoder.decode(new Uint8Array([b]));
      const cp = s.length === 1 ? s.charCodeAt(0) : -1;
      table[b] = cp === 0xfffd || (cp >= 0x80 && cp <= 0x9f) ? -1 : cp;
    }
  }
  tables.set(encoding, table);
  return table;
}

function decodeSingleByte(data: Uint8Array, table: Int32Array): string | undefined {
  const parts: string[] = [];
  const CHUNK = 8192;
  const codes = new Uint16Array(Math.min(CHUNK, data.length));
  for (let start = 0; start < data.length; start += CHUNK) {
    const end = Math.min(data.length, start + CHUNK);
    for (let i = start; i < end; i++) {
      const cp = table[data[i]!]!;
      if (cp < 0) return undefined;
      codes[i - start] = cp;
    }
    parts.push(String.fromCharCode(...codes.subarray(0, end - start)));
  }
  return parts.join('');
}

const MULTI_BYTE: ReadonlySet<LegacyEncodingName> = new Set(['shift_jis', 'euc-jp', 'euc-kr', 'gb18030', 'big5']);

/**
 * The length of the character starting at `data[i]` by the encoding's byte structure (lead and
 * trail byte ranges), or 0 when the bytes there cannot start a character.
 */
function charLength(data: Uint8Array, i: number, encoding: LegacyEncodingName): number {
  const b = data[i]!;
  if (b < 0x80) return 1;
  const t = data[i + 1];
  const trail = (lo: number, hi: number): number => (t !== undefined && t >= lo && t <= hi ? 2 : t === undefined ? -1 : 0);
  switch (encoding) {
    case 'shift_jis':
      if (b >= 0xa1 && b <= 0xdf) return 1; // half-width katakana
      if ((b >= 0x81 && b <= 0x9f) || (b >= 0xe0 && b <= 0xfc)) return t === 0x7f ? 0 : trail(0x40, 0xfc);
      return 0;
    case 'euc-jp':
      if (b === 0x8e) return trail(0xa1, 0xdf);
      if (b === 0x8f) {
        if (t === undefined || data[i + 2] === undefined) return -1;
        return t >= 0xa1 && t <= 0xfe && data[i + 2]! >= 0xa1 && data[i + 2]! <= 0xfe ? 3 : 0;
      }
      return b >= 0xa1 && b <= 0xfe ? trail(0xa1, 0xfe) : 0;
    case 'euc-kr':
      return b >= 0x81 && b <= 0xfe ? trail(0x41, 0xfe) : 0;
    case 'big5':
      return b >= 0x81 && b <= 0xfe ? (t !== undefined && ((t >= 0x40 && t <= 0x7e) || (t >= 0xa1 && t <= 0xfe)) ? 2 : t === undefined ? -1 : 0) : 0;
    case 'gb18030':
      if (b === 0x80) return 1; // the euro sign
      if (b === 0xff) return 0;
      if (t !== undefined && t >= 0x30 && t <= 0x39) {
        if (data[i + 3] === undefined) return -1;
        const t2 = data[i + 2]!;
        const t3 = data[i + 3]!;
        return t2 >= 0x81 && t2 <= 0xfe && t3 >= 0x30 && t3 <= 0x39 ? 4 : 0;
      }
      return trail(0x40, 0xfe) === 2 && t !== 0x7f ? 2 : t === undefined ? -1 : 0;
    default:
      return 0;
  }
}

/**
 * Decodes a multi-byte encoding with `TextDecoder` and checks the result: the byte structure
 * must be well formed, and the decoder must give exactly one code point (no U+FFFD) per
 * character, so that nothing was dropped or replaced.
 */
function decodeMultiByte(data: Uint8Array, encoding: LegacyEncodingName, truncated: boolean): string | undefined {
  let chars = 0;
  let i = 0;
  while (i < data.length) {
    const n = charLength(data, i, encoding);
    if (n === -1 && truncated) break;
    if (n <= 0) return undefined;
    chars++;
    i += n;
  }
  let text: string;
  try {
    text = new TextDecoder(encoding, { fatal: true }).decode(data.subarray(0, i));
  } catch {
    return undefined;
  }
  if (text.includes('\ufffd')) return undefined;
  let codePoints = 0;
  for (let k = 0; k < text.length; k++) {
    const c = text.charCodeAt(k);
    if (c < 0xdc00 || c > 0xdfff) codePoints++;
  }
  return codePoints === chars ? text : undefined;
}
