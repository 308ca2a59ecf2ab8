/**
 * Evaluates the body of an object-like macro when it is a number or string
 * literal, or an integer expression over literals and earlier constants.
 *
 * @module
 */
import type { ConstantIR } from "./ir.ts";

function parseNumber(tok: string): bigint | null {
  const m = tok.match(/^(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)([uUlL]*)$/);
  if (!m) return null;
  const t = m[1];
  if (/^0[0-7]+$/.test(t)) return BigInt("0o" + t.slice(1));
  return BigInt(t);
}

/** The value of a macro body, or null when it is not a plain constant. */
export function evaluateMacro(body: readonly string[], known: readonly ConstantIR[]): ConstantIR["value"] | null {
  if (body.length === 0) return null;
  if (body.length === 1 && /^"([^"\\]|\\.)*"$/.test(body[0])) {
    const s = body[0].slice(1, -1).replace(/\\(.)/g, (_, c) => ({ n: "\n", t: "\t", "0": "\0" } as Record<string, string>)[c] ?? c);
    return { kind: "string", text: s };
  }
  if (body.length === 1 && /^[0-9]*\.[0-9]+([eE][-+]?[0-9]+)?[fF]?$/.test(body[0])) {
    return { kind: "number", text: String(Number(body[0].replace(/[fF]$/, ""))) };
  }
  let i = 0;
  const peek = () => body[i];
  const fail = (): never => {
    throw new SyntaxError();
  };
  const primary = (): bigint => {
    const t = body[i++];
    if (t === undefined) return fail();
    if (t === "(") {
      const v = expr(0);
      if (body[i++] !== ")") fail();
      return v;
    }
    if (t === "-") return -primary();
    if (t === "+") return primary();
    if (t === "~") return ~primary();
    const n = parseNumber(t);
    if (n !== null) return n;
    const k = known.find((c) => c.name === t);
    if (k && k.value.kind === "number" && /^-?\d+$/.test(k.value.text)) return BigInt(k.value.text);
    return fail();
  };
  const PREC: Record<string, number> = { "|": 1, "^": 2, "&": 3, "<<": 4, ">>": 4, "+": 5, "-": 5, "*": 6, "/": 6, "%": 6 };
  const expr = (min: number): bigint => {
    let left = primary();
    for (;;) {
      const op = peek();
      const p = op === undefined ? undefined : PREC[op];
      if (p === undefined || p <= min) return left;
      i++;
      const right = expr(p);
      switch (op) {
        case "|": left |= right; break;
        case "^": left ^= right; break;
        case "&": left &= right; break;
        case "<<": left <<= right; break;
        case ">>": left >>= right; break;
        case "+": left += right; break;
        case "-": left -= right; break;
        case "*": left *= right; break;
        case "/": if (right === 0n) fail(); left /= right; break;
        case "%": if (right === 0n) fail(); left %= right; break;
      }
    }
  };
  try {
    const v = expr(0);
    if (i !== body.length) return null;
    return { kind: "number", text: v.toString() };
  } catch {
    return null;
  }
}
