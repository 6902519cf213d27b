/** Types of scripts/binary-arch.mjs (see its docstrings). */
export declare const TARGETS: string[];
export declare function expectedFileType(target: string): RegExp;
export declare function isNativeBinary(name: string): boolean;
export declare function wrongArchitecture(files: string[], target: string): { file: string; type: string }[];
