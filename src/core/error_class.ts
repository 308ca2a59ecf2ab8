/**
 * `instanceof` for the package's error classes that holds across two loaded
 * copies of its modules. Node with tsx compiles a `require()`d TypeScript file
 * as CommonJS: the runtime adapter the loader requires then imports its own
 * copy of the error modules, and an error it throws is not an instance of the
 * ES module's class of the same name. A bundle holding the package twice
 * splits them the same way.
 *
 * @module
 */

/** The mark every error class of the package carries (global, so that every copy shares it). */
export const ERROR_CLASS: unique symbol = Symbol.for("wsp-ggml.errorClass") as never;

/**
 * Whether `x` is an instance of `cls`: by its prototype chain, or by a class
 * of another copy of the package on that chain with the same mark and name.
 */
export function isErrorInstance(cls: abstract new (...args: never[]) => unknown, x: unknown): boolean {
  if (Function.prototype[Symbol.hasInstance].call(cls, x)) return true;
  if (x === null || typeof x !== "object") return false;
  for (let p = Object.getPrototypeOf(x); p !== null; p = Object.getPrototypeOf(p)) {
    const c = Object.hasOwn(p, "constructor") ? (p as { constructor: unknown }).constructor : undefined;
    if (typeof c === "function" && ERROR_CLASS in c && c.name === cls.name) return true;
  }
  return false;
}
