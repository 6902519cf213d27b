import { createHash } from 'node:crypto';
import type { GrammarId } from './languages';
import { createTagsParser, type FileTags, type TagsParser } from './tags';

/**
 * Longest text handed to the tree-sitter parser [UTF-16 code units, 8 Mi]. The parser runs in
 * WebAssembly with a memory it cannot grow past its limit: a 50 MB file (kept with
 * `--keep-generated`) made it abort the whole process (`Aborted()` after 42 s and 2.2 GB; issue 29,
 * item 8). A longer file is never parsed: the ranked packing leaves it out as `'too-large'` with
 * the reason (`parserLimitDetail`), and `TagsCache.tags` gives it no definitions. No file this long
 * fits a context in full either (about 2M tokens).
 */
export const MAX_PARSE_CHARS = 8 * 1024 * 1024;

/** The `detail` of a file left out because it is longer than `MAX_PARSE_CHARS`. */
export function parserLimitDetail(chars: number): string {
  return `${chars} characters, more than the parser takes (${MAX_PARSE_CHARS}): left out of the repository map and not packed`;
}

/** Entries a `TagsCache` keeps by default before it evicts the least recently used. */
export const DEFAULT_TAGS_CACHE_ENTRIES = 50_000;

/**
 * Tags of source files, cached by content: the key is the SHA-256 of the grammar id and the
 * text, so an edit re-parses only the edited file, a renamed file is not parsed again, and two
 * identical files are parsed once. Keep one cache for the life of a window (the extension) or a
 * process (a benchmark) and pass it to every `packRepository` call (`PackOptions.tagsCache`).
 * Holds at most `maxEntries` entries (least recently used evicted first). Not persisted.
 */
export class TagsCache {
  private readonly entries = new Map<string, Promise<FileTags>>();
  private readonly parser: TagsParser;
  private readonly maxEntries: number;
  /** Files actually parsed (cache misses) since the cache was made. */
  parsed = 0;

  /**
   * @param options.parser the parser behind the cache (default: tree-sitter, `createTagsParser`);
   *   tests pass a counting one.
   * @param options.maxEntries the most entries kept, an integer ≥ 1 (default
   *   `DEFAULT_TAGS_CACHE_ENTRIES`). Throws `RangeError` otherwise.
   */
  constructor(options: { parser?: TagsParser; maxEntries?: number } = {}) {
    this.parser = options.parser ?? createTagsParser();
    this.maxEntries = options.maxEntries ?? DEFAULT_TAGS_CACHE_ENTRIES;
    if (!Number.isInteger(this.maxEntries) || this.maxEntries < 1) throw new RangeError(`maxEntries must be an integer >= 1, got ${String(options.maxEntries)}`);
  }

  /**
   * The tags of `text` parsed with `grammar`: from the cache when this grammar saw this exact
   * text before, else parsed now (a failed parse is not cached, and rejects with its error). A
   * text longer than `MAX_PARSE_CHARS` is never parsed: it has no definitions or references.
   * `signal` goes to the parse this call starts (`TagsParser.parse`: once aborted, the parse no
   * longer keeps the process alive; its result is still cached when it comes).
   */
  tags(text: string, grammar: GrammarId, signal?: AbortSignal): Promise<FileTags> {
    if (text.length > MAX_PARSE_CHARS) return Promise.resolve({ grammar, definitions: [], references: [] });
    const key = createHash('sha256').update(grammar).update('\0').update(text).digest('hex');
    const hit = this.entries.get(key);
    if (hit !== undefined) {
      this.entries.delete(key);
      this.entries.set(key, hit);
      return hit;
    }
    this.parsed++;
    const parsing = this.parser.parse(text, grammar, signal !== undefined ? { signal } : {});
    parsing.catch(() => this.entries.delete(key));
    this.entries.set(key, parsing);
    while (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    return parsing;
  }
}

let processCache: TagsCache | undefined;

/**
 * The process's one tags cache (tree-sitter parser, `DEFAULT_TAGS_CACHE_ENTRIES` entries), made
 * on first use: the ranked packing's default (`PackOptions.tagsCache`), the extension's engine
 * process (one per window: repeated questions and the watcher's refreshes re-parse only files
 * whose content changed) and the code prior's definition lines share it, so a file is parsed once.
 */
export function processTagsCache(): TagsCache {
  processCache ??= new TagsCache();
  return processCache;
}
