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

/**
 * The members of an enum object (other than `COUNT`) as a table indexed by
 * value: 1 for a member. Enums are small non-negative integers; a value
 * outside 0..1023 is looked up in the set of values.
 */
interface Members {
  readonly table: Uint8Array;
  readonly set: ReadonlySet<number>;
}
// Built once per enum object (enums are generated constants).
const memberTables = new WeakMap<object, Members>();
// The last enum looked up: ops check the same enum (Type) over and over, and one comparison beats a WeakMap lookup.
let lastEnum: object | undefined;
let lastMembers: Members | undefined;

function membersOf(values: Record<string, number>): Members {
  if (values === lastEnum) return lastMembers!;
  let m = memberTables.get(values);
  if (!m) {
    const set = new Set(Object.values(values).filter((v) => v !== values.COUNT));
    const table = new Uint8Array(1024);
    for (const v of set) if (Number.isInteger(v) && v >= 0 && v < table.length) table[v] = 1;
    memberTables.set(values, m = { table, set });
  }
  lastEnum = values;
  lastMembers = m;
  return m;
}

/** An enum argument: one of the members of `values` other than `COUNT`. */
export function member<E extends Record<string, number>>(name: string, value: number, values: E, label: string): E[keyof E] {
  const m = membersOf(values);
  const known = value >= 0 && value < 1024 && (value | 0) === value ? m.table[value] === 1 : typeof value === "number" && m.set.has(value);
  if (!known) throw new ArgumentError(`${name} must be a ${label}, got ${String(value)}`);
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
