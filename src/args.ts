/**
 * Validation of scalar arguments before they cross into C, identical on
 * every runtime (Deno rejects a non-integer for an `int` parameter, koffi
 * truncates it, Bun wraps it: the API throws {@linkcode ArgumentError}
 * instead, before any of them sees it).
 *
 * @module
 */
import { ArgumentError } from "./errors.ts";

const I32_MIN = -(2 ** 31);
const I32_MAX = 2 ** 31 - 1;

/** An `int` / `int32_t` argument: an integer in the 32-bit range. */
export function int(name: string, value: number): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < I32_MIN || value > I32_MAX) {
    throw new ArgumentError(`${name} must be a 32-bit integer, got ${String(value)}`);
  }
  return value;
}

/** A `uint32_t` argument. */
export function uint(name: string, value: number): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0 || value > 2 ** 32 - 1) {
    throw new ArgumentError(`${name} must be an unsigned 32-bit integer, got ${String(value)}`);
  }
  return value;
}

/** An `int64_t` argument: a safe integer. */
export function i64(name: string, value: number): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value)) {
    throw new ArgumentError(`${name} must be a safe integer, got ${String(value)}`);
  }
  return value;
}

/** A `size_t` argument: a non-negative safe integer. */
export function size(name: string, value: number): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    throw new ArgumentError(`${name} must be a non-negative safe integer, got ${String(value)}`);
  }
  return value;
}

/** A `float` argument: any number (NaN and infinities included, as in C). */
export function float(name: string, value: number): number {
  if (typeof value !== "number") throw new ArgumentError(`${name} must be a number, got ${typeof value}`);
  return value;
}

/** A `bool` argument. */
export function bool(name: string, value: boolean): boolean {
  if (typeof value !== "boolean") throw new ArgumentError(`${name} must be a boolean, got ${typeof value}`);
  return value;
}

// The values of each enum object, built once (enums are generated constants).
const memberSets = new WeakMap<object, Set<number>>();

/** An enum argument: one of the members of `values` other than `COUNT`. */
export function member<E extends Record<string, number>>(name: string, value: number, values: E, label: string): E[keyof E] {
  let set = memberSets.get(values);
  if (!set) memberSets.set(values, set = new Set(Object.values(values)));
  if (typeof value !== "number" || value === values.COUNT || !set.has(value)) {
    throw new ArgumentError(`${name} must be a ${label}, got ${String(value)}`);
  }
  return value as E[keyof E];
}

/** A fixed-length integer array argument, as the typed array that carries it to C. */
export function ints<A extends Int32Array | BigInt64Array>(
  name: string,
  values: readonly number[],
  length: number,
  array: { from(values: readonly number[], map: (v: number) => never): A },
): A {
  if (!Array.isArray(values) || values.length !== length) {
    throw new ArgumentError(`${name} must be an array of ${length} integers`);
  }
  values.forEach((v, i) => (array === (Int32Array as unknown) ? int : i64)(`${name}[${i}]`, v));
  return array.from(values, (v) => (array === (Int32Array as unknown) ? v : BigInt(v)) as never);
}
