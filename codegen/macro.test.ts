import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { evaluateMacro } from "./macro.ts";
import type { ConstantIR } from "./ir.ts";

const known: ConstantIR[] = [{ name: "A", header: "x.h", value: { kind: "number", text: "64" } }];
const num = (text: string) => ({ kind: "number", text });

describe("evaluateMacro", () => {
  test("literals", () => {
    assert.deepEqual(evaluateMacro(["0x67676d6c"], []), num(String(0x67676d6c)));
    assert.deepEqual(evaluateMacro(["10u"], []), num("10"));
    assert.deepEqual(evaluateMacro(["010"], []), num("8"));
    assert.deepEqual(evaluateMacro(["1.5f"], []), num("1.5"));
    assert.deepEqual(evaluateMacro(['"GGUF"'], []), { kind: "string", text: "GGUF" });
    assert.deepEqual(evaluateMacro(['"a\\"b"'], []), { kind: "string", text: 'a"b' });
  });
  test("integer expressions over earlier constants", () => {
    assert.deepEqual(evaluateMacro(["(", "-", "1", ")"], []), num("-1"));
    assert.deepEqual(evaluateMacro(["1", "<<", "4", "|", "1"], []), num("17"));
    assert.deepEqual(evaluateMacro(["A", "*", "2", "+", "1"], known), num("129"));
    assert.deepEqual(evaluateMacro(["2", "+", "3", "*", "4"], []), num("14"));
  });
  test("anything else is not a constant", () => {
    assert.equal(evaluateMacro([], []), null);
    assert.equal(evaluateMacro(["B"], known), null);
    assert.equal(evaluateMacro(["__attribute__", "(", "(", "x", ")", ")"], []), null);
    assert.equal(evaluateMacro(["1", "/", "0"], []), null);
    assert.equal(evaluateMacro(["(", "1"], []), null);
  });
});
