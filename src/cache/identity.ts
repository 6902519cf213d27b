/**
 * Cache entry keys: everything that changes the KV cache's bytes or the token stream — model
 * identity, engine version, KV cache types, flash attention, chat template, packer version.
 * Entries under another key are never matched (a different model's cache is not a hit).
 */
import { createHash } from 'node:crypto';
import type { StateIdentity } from '../engine/state-file';

/** Version of the prompt layout and packer output; bump when either changes the tokens. */
export const PROMPT_VERSION = 2;

/** The parts of a cache key. */
export interface CacheKeyParts extends StateIdentity {
  /** The model's chat template (or '' for the plain layout). */
  chatTemplate: string;
  promptVersion: number;
}

/** A short stable key (hex) for the parts. */
export function cacheKey(parts: CacheKeyParts): string {
  const canonical = JSON.stringify([parts.model, parts.engine, parts.typeK, parts.typeV, parts.flashAttention, parts.chatTemplate, parts.promptVersion]);
  return createHash('sha256').update(canonical).digest('hex').slice(0, 32);
}
