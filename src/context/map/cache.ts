import { createHash } from 'node:crypto';
import type { GrammarId } from './languages';
import { createTagsParser, type FileTags, type TagsParser } from './tags';

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
   * text before, else parsed now (a failed parse is not cached, and rejects with its error).
   */
  tags(text: string, grammar: GrammarId): Promise<FileTags> {
    const key = createHash('sha256').update(grammar).update('\0').update(text).digest('hex');
    const hit = this.entries.get(key);
    if (hit !== undefined) {
      this.entries.delete(key);
      this.entries.set(key, hit);
      return hit;
    }
    this.parsed++;
    const parsing = this.parser.parse(text, grammar);
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
