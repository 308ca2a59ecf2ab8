/**
 * @ignore @internal The token the library's own code passes to the constructors of
 * its handle classes (`Device`, `BackendReg`, `BufferType`, `Backend`,
 * `Buffer`, `Tensor`, `Graph`). They are exported as types and for
 * `instanceof`, but a handle made from a user's number (`new Device(0)`)
 * would hand that number to C as a pointer: without the token the
 * constructor throws {@linkcode ArgumentError}. Not re-exported by mod.ts.
 *
 * @module
 */
import { ArgumentError } from "./errors.ts";

/** The brand: only modules of the library import it. */
export const INTERNAL: unique symbol = Symbol("wsp-ggml internal constructor");

/** Throws unless `token` is {@linkcode INTERNAL}. */
export function internal(what: string, token: unknown, use: string): void {
  if (token !== INTERNAL) throw new ArgumentError(`new ${what}(): not a public constructor (it would wrap an arbitrary pointer); use ${use}`);
}
