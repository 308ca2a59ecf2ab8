/**
 * The globals the package's declarations name that TypeScript's `es2022` lib
 * lacks, declared as the smallest shapes that merge with the real ones: a
 * consumer without `esnext` / `dom` / Node's types (`lib: ["es2022"]`) then
 * type-checks the package, and one with them sees their full types.
 *
 * @module
 */
declare global {
  interface SymbolConstructor {
    /** `Symbol.dispose` (esnext.disposable): the method `using` calls at the end of a block. */
    readonly dispose: unique symbol;
  }
  /** The web's `AbortSignal` (dom, Node, Deno and Bun all have it). */
  // deno-lint-ignore no-empty-interface
  interface AbortSignal {}
}
export {};
