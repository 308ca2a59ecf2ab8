// Shared by the misuse tests: a table of wrong calls, each expected to throw
// one typed GgmlError with a message.
import { GgmlError } from "../mod.ts";

/** A GgmlError subclass a wrong call must throw. */
export type ErrorClass = new (...args: never[]) => GgmlError;

/** One wrong call: its name, the call, the error class it must throw. */
export type MisuseCase = [name: string, call: () => unknown, type: ErrorClass];

/** Runs every case; returns one line per case that did not throw its typed error (empty when all did). */
export function misuseFailures(cases: readonly MisuseCase[]): string[] {
  const failures: string[] = [];
  for (const [name, call, type] of cases) {
    try {
      call();
      failures.push(`${name}: did not throw`);
    } catch (e) {
      if (!(e instanceof type)) failures.push(`${name}: threw ${(e as Error)?.name}: ${(e as Error)?.message}, expected ${type.name}`);
      else if (!(e instanceof GgmlError) || !e.message) failures.push(`${name}: no message`);
    }
  }
  return failures;
}
