/** Test models: the shared tiny trained model, checked by sha256 before use. */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/** ../shared/models/stories260K.gguf relative to the project root (see its README). */
export const TINY_MODEL = path.resolve(__dirname, '..', '..', '..', 'shared', 'models', 'stories260K.gguf');
export const TINY_MODEL_SHA256 = '270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d';

/** Throws unless the tiny model is present with the expected sha256. */
export function checkTinyModel(): string {
  const sha = createHash('sha256').update(fs.readFileSync(TINY_MODEL)).digest('hex');
  if (sha !== TINY_MODEL_SHA256) throw new Error(`${TINY_MODEL}: sha256 ${sha}, expected ${TINY_MODEL_SHA256}`);
  return TINY_MODEL;
}

/** A children's story in the tiny model's domain (~330 tokens), used as a prompt. */
export const STORY =
  'Once upon a time, there was a little girl named Lily. She loved to play outside in the sun. ' +
  'One day, she saw a big red ball in the park. She ran to the ball and picked it up. ' +
  'Her friend Tom came to play with her. They threw the ball up high and laughed. ' +
  'Then a dog came and took the ball away. Lily was sad and started to cry. ' +
  'Tom said, "Do not cry, Lily. We will find the dog." They looked under the trees and behind the bench. ' +
  'At last they found the dog sleeping next to the ball. The dog woke up and wagged its tail. ' +
  'Lily hugged the dog and Tom laughed. The three of them played together until the sun went down. ' +
  'When it was time to go home, Lily said goodbye to the dog. She was happy because she made a new friend. ' +
  'The next day, Lily and Tom went back to the park. The dog was there again, waiting for them. ' +
  'They played with the ball all day long. Lily learned that sharing makes everyone happy.';
