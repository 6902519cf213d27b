/** The part of wink-bm25-text-search 3.1.2's API that RepoSnap uses (the package ships no types). */
declare module 'wink-bm25-text-search' {
  interface WinkBM25 {
    defineConfig(config: { fldWeights: Record<string, number>; bm25Params?: { k1?: number; b?: number; k?: number }; ovFldNames?: string[] }): boolean;
    definePrepTasks(tasks: Array<(input: any) => any>, field?: string): number;
    addDoc(doc: Record<string, string>, id: string | number): number;
    consolidate(fp?: number): boolean;
    search(text: string, limit?: number): Array<[string, number]>;
  }
  function bm25(): WinkBM25;
  export = bm25;
}
