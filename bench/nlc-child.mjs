// Child process of bench/engine.ts: measures node-llama-cpp 3.21.1's prebuilt llama.cpp on the
// same model and settings (a separate process, so that its llama.cpp and ours never share one).
//   node bench/nlc-child.mjs <model> <L> <threads|default> <flashAttention on|off> <decodeSteps>
// Prints one JSON line: { prefillTokS, decodeMs, decodeSteps } (decode: greedy generation, logits
// every step; an end-of-generation token is yielded and decoding goes on, so that every step is timed:
// node-llama-cpp stops at one by default, and a real model's greedy run after random tokens meets one soon).
const [model, L, threads, fa, steps] = process.argv.slice(2);
const { getLlama, LlamaLogLevel } = await import('node-llama-cpp');
const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
const m = await llama.loadModel({ modelPath: model });
const nL = Number(L);
const nSteps = Number(steps);
const ctx = await m.createContext({
  contextSize: nL + nSteps + 16,
  batchSize: 512,
  flashAttention: fa === 'on',
  ...(threads === 'default' ? {} : { threads: Number(threads) }),
});
const seq = ctx.getSequence();
let seed = 1;
const nVocab = m.tokens ? 32000 : 32000;
const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) % (nVocab - 3)) + 3;
const prompt = Array.from({ length: nL }, rand);
const t0 = performance.now();
await seq.evaluateWithoutGeneratingNewTokens(prompt.slice(0, nL - 1));
const prefillMs = performance.now() - t0;
// decode: greedy generation (logits of every step computed and sampled, like our engine's decode)
const gen = seq.evaluate([prompt[nL - 1]], { temperature: 0, yieldEogToken: true });
await gen.next(); // the last prompt token: graph warm-up
let decodeMs = 0;
let decodeSteps = 0;
for (let i = 0; i < nSteps; i++) {
  const t = performance.now();
  const r = await gen.next();
  if (r.done) break;
  decodeMs += performance.now() - t;
  decodeSteps++;
}
await gen.return();
console.log(JSON.stringify({ prefillTokS: nL / (prefillMs / 1000), decodeMs: decodeSteps ? decodeMs / decodeSteps : null, decodeSteps }));
await ctx.dispose();
await m.dispose();
await llama.dispose();
