/**
 * The abort-site inventory: a lexical reader of the vendored ggml sources that
 * lists every place a call could end the process — `WSP_GGML_ASSERT`,
 * `WSP_GGML_ASSERT_ALIGNED`, `WSP_GGML_ABORT`, `WSP_GGML_UNREACHABLE`, a direct
 * `abort()` — and every CPU-kernel read of an index out of tensor data (the
 * kernel then indexes memory with it, unchecked).
 *
 * Each site gets a stable key, `file:function:kind condition[#n]`: the
 * condition (or abort message) with whitespace normalised, and `#n` for the
 * n-th identical site of one function (n ≥ 2). No line numbers: a key survives
 * edits elsewhere in the file.
 *
 * The reader strips comments, masks string and character literals, follows
 * `#if` / `#else` branches (the brace depth after an `#if … #endif` is the
 * first branch's), and tracks the enclosing function by brace depth
 * (namespaces and `extern "C"` are transparent; a function in a struct or
 * class body is `Type::name`; a site in a `#define` body belongs to
 * `#define NAME`).
 *
 *   node --import tsx codegen/asserts.ts [DIR]   print the inventory (tab-separated)
 *
 * @module
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, sep } from "node:path";

/** What a site does when its condition fails. */
export type SiteKind =
  | "assert" | "assert_aligned" | "abort" | "unreachable" | "abort_call" | "index"
  // whisper.cpp only (scanWhisper): WHISPER_ASSERT, a plain assert(), a throw, a checked
  // container access `.at(…)` (std::out_of_range), a std::regex construction or match
  // (std::regex_error), and a call into ggml that can reach one of ggml's own sites.
  | "whisper_assert" | "c_assert" | "throw" | "at" | "regex" | "ggml_call";

/** One abort site (or unchecked index read) of the vendored sources. */
export interface Site {
  /** Path below `vendor/ggml`, with `/` (whisper.cpp's: `whisper/…`, below `vendor`). */
  readonly file: string;
  /** The enclosing function (`name`, `Type::name`, `#define NAME`, or `(file scope)`). */
  readonly function: string;
  readonly kind: SiteKind;
  /** The condition, message or statement, whitespace normalised. */
  readonly condition: string;
  /** 1 for the first site of this function with this kind and condition, 2 for the next, … */
  readonly n: number;
  /** `kind condition[#n]`: the key within the function. */
  readonly local: string;
  /** `file:function:local`: the stable key. */
  readonly key: string;
  /** 1-based line (for reading; not part of the key). */
  readonly line: number;
}

/** The macros and calls that abort, longest name first. */
const MACROS: ReadonlyArray<[string, SiteKind]> = [
  ["WSP_GGML_ASSERT_ALIGNED", "assert_aligned"],
  ["WSP_GGML_ASSERT", "assert"],
  ["WSP_GGML_ABORT", "abort"],
  ["WSP_GGML_UNREACHABLE", "unreachable"],
  ["abort", "abort_call"],
];
const MACRO_RE = /\b(WSP_GGML_ASSERT_ALIGNED|WSP_GGML_ASSERT|WSP_GGML_ABORT|WSP_GGML_UNREACHABLE|abort)\s*\(/g;
const MACRO_AT = /(WSP_GGML_ASSERT_ALIGNED|WSP_GGML_ASSERT|WSP_GGML_ABORT|WSP_GGML_UNREACHABLE|abort)\s*\(/y;
const KIND = new Map(MACROS);
/** whisper.cpp's reader: ggml's macros, and whisper.cpp's own. */
const WMACRO_RE = /\b(WSP_GGML_ASSERT_ALIGNED|WSP_GGML_ASSERT|WSP_GGML_ABORT|WSP_GGML_UNREACHABLE|WHISPER_ASSERT|assert|abort)\s*\(/g;
const WKIND = new Map<string, SiteKind>([...MACROS, ["WHISPER_ASSERT", "whisper_assert"], ["assert", "c_assert"]]);

/** Identifiers that look like calls in a function header but are not its name. */
const NOT_NAMES = new Set([
  "__attribute__", "__declspec", "alignas", "decltype", "sizeof", "if", "for", "while", "switch", "return",
  "WSP_GGML_ATTRIBUTE_FORMAT", "WSP_GGML_DEPRECATED", "noexcept", "static_assert", "defined",
]);

/** A read of an integer out of a tensor's data that a kernel then indexes with. */
const INDEX_RE = /\(\s*(?:const\s+)?(?:int32_t|int64_t|idx_t)\s*\*\s*\)\s*(?:\(\s*)?(?:\(\s*(?:const\s+)?char\s*\*\s*\)\s*)?\(?\s*(\w+)->data\b/g;

/** Whitespace collapsed, none inside parentheses' edges. */
export function normalize(s: string): string {
  return s.replace(/\s+/g, " ").replace(/\(\s/g, "(").replace(/\s\)/g, ")").trim();
}

interface Lexed {
  /** Comments blanked, literals kept. */
  readonly clean: string;
  /** Comments blanked and literal contents blanked (quotes kept). */
  readonly code: string;
}

/** Blanks comments (and, in `code`, the contents of string and character literals); keeps every offset and newline. */
export function lex(src: string): Lexed {
  const clean: string[] = [];
  const code: string[] = [];
  const n = src.length;
  const blank = (s: string) => s.replace(/[^\n]/g, " ");
  const special = /\/\/|\/\*|"|'/g;
  let i = 0;
  while (i < n) {
    special.lastIndex = i;
    const m = special.exec(src);
    const at = m ? m.index : n;
    if (at > i) {
      const plain = src.slice(i, at);
      clean.push(plain);
      code.push(plain);
    }
    if (!m) break;
    let end: number;
    if (m[0] === "//") {
      // To the end of the line; a backslash before the newline continues the comment.
      end = at;
      for (;;) {
        const nl = src.indexOf("\n", end);
        if (nl < 0) { end = n; break; }
        if (src[nl - 1] === "\\") { end = nl + 1; continue; }
        end = nl;
        break;
      }
      const b = blank(src.slice(at, end));
      clean.push(b);
      code.push(b);
    } else if (m[0] === "/*") {
      const e = src.indexOf("*/", at + 2);
      end = e < 0 ? n : e + 2;
      const b = blank(src.slice(at, end));
      clean.push(b);
      code.push(b);
    } else {
      const q = m[0];
      if (q === '"' && src[at - 1] === "R" && !/\w/.test(src[at - 2] ?? "")) {
        // A raw string R"delim( … )delim".
        const open = src.indexOf("(", at);
        const delim = src.slice(at + 1, open);
        const e = src.indexOf(`)${delim}"`, open);
        end = e < 0 ? n : e + delim.length + 2;
      } else {
        end = at + 1;
        while (end < n && src[end] !== q && src[end] !== "\n") end += src[end] === "\\" ? 2 : 1;
        if (end < n && src[end] === q) end++;
      }
      const lit = src.slice(at, end);
      clean.push(lit);
      code.push(lit.length >= 2 && lit.endsWith(q) ? q + blank(lit.slice(1, -1)) + q : q + blank(lit.slice(1)));
    }
    i = end;
  }
  return { clean: clean.join(""), code: code.join("") };
}

/** The index of the `)` that closes the `(` at `open` in `code` (literals already blanked), or -1. */
function closeParen(code: string, open: number): number {
  let depth = 0;
  for (let i = open; i < code.length; i++) {
    const c = code[i];
    if (c === "(") depth++;
    else if (c === ")" && --depth === 0) return i;
  }
  return -1;
}

type Frame = { kind: "ns" | "type" | "fn" | "block"; name: string };

/** The name of the function whose header (the code before its `{`) is `header`, or undefined. */
function functionName(header: string): string | undefined {
  const h = stripTemplate(header.replace(/\s+/g, " "));
  for (const m of h.matchAll(/(~?[A-Za-z_]\w*(?:\s*::\s*~?[A-Za-z_]\w*)*(?:\s*<[^<>()]*>)?|operator\s*\(\s*\)|operator\s*[^\s(\w]+)\s*\(/g)) {
    const name = m[1].replace(/\s+/g, "");
    if (NOT_NAMES.has(name)) continue;
    return name;
  }
  return undefined;
}

/** `header` without a leading `template <…>` parameter list. */
function stripTemplate(h: string): string {
  const t = /^\s*template\s*</.exec(h);
  if (!t) return h;
  let depth = 0;
  for (let i = t[0].length - 1; i < h.length; i++) {
    if (h[i] === "<") depth++;
    else if (h[i] === ">" && --depth === 0) return stripTemplate(h.slice(i + 1));
  }
  return h;
}

/** Classifies the `{` that follows `header` outside any function. */
function classify(header: string): Frame {
  const h = stripTemplate(header.replace(/\s+/g, " ").trim());
  if (/\bnamespace\b/.test(h) || /^extern\s*"\s*"$/.test(h)) return { kind: "ns", name: (/namespace\s+(\w+)/.exec(h)?.[1]) ?? "" };
  if (/=\s*$/.test(h) || h === "") return { kind: "block", name: "" };
  const paren = h.indexOf("(");
  const type = /\b(struct|class|union|enum)\b(?:\s+(?:alignas\s*\([^)]*\)\s*)?([A-Za-z_]\w*))?/.exec(h);
  if (type && (paren < 0 || type.index < paren) && !/\)\s*(const\s*)?$/.test(h)) return { kind: "type", name: type[2] ?? "" };
  if (paren >= 0) {
    const name = functionName(h);
    if (name) return { kind: "fn", name };
  }
  return { kind: "block", name: "" };
}

/** Every site of one source file. `file` is its path below vendor/ggml, with `/`. */
export function scanSource(file: string, src: string, options: ScanOptions = {}): Site[] {
  return scanFile(file, src, options).sites;
}

/** What else to read as a site (whisper.cpp). */
export interface ScanOptions {
  /** Also `WHISPER_ASSERT`, `assert`, `throw`, `.at(`, `std::regex` (the whisper.cpp reader). */
  readonly whisper?: boolean;
  /** ggml functions that can reach a ggml site: each call of one is a `ggml_call` site. */
  readonly ggmlCalls?: ReadonlySet<string>;
}

/** What one file holds: its sites, and the identifiers each function's body names (a lexical call graph). */
export interface FileScan {
  readonly sites: Site[];
  /** Function → the identifiers its body names (calls, and functions taken by address). */
  readonly refs: Map<string, Set<string>>;
  /** Identifiers named outside any function (interface tables, initializers). */
  readonly fileRefs: Set<string>;
}

const IDENT = /\b[A-Za-z_]\w*\b/g;

/** Sites and references of one source file. */
export function scanFile(file: string, src: string, options: ScanOptions = {}): FileScan {
  const { clean, code } = lex(src);
  const w = options.whisper === true;
  const macroRe = w ? WMACRO_RE : MACRO_RE;
  const kindOf = w ? WKIND : KIND;
  const raw: Array<{ fn: string; kind: SiteKind; cond: string; pos: number }> = [];
  const lineStarts: number[] = [0];
  for (let i = 0; i < src.length; i++) if (src[i] === "\n") lineStarts.push(i + 1);
  const lineOf = (pos: number) => {
    let lo = 0, hi = lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (lineStarts[mid] <= pos) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  };

  let frames: Frame[] = [];
  const conds: Array<{ start: Frame[]; first?: Frame[] }> = [];
  const fnOf = (fs: Frame[]) => {
    const i = fs.findIndex((f) => f.kind === "fn");
    if (i < 0) return undefined;
    const owner = fs.slice(0, i).filter((f) => f.kind === "type" && f.name).map((f) => f.name);
    const name = fs[i].name;
    return owner.length && !name.includes("::") ? `${owner.join("::")}::${name}` : name;
  };

  /** Sites in `code[from, to)`, attributed to `fn`. */
  const sitesIn = (from: number, to: number, fn: string) => {
    const seg = code.slice(from, to);
    macroRe.lastIndex = 0;
    for (let m = macroRe.exec(seg); m; m = macroRe.exec(seg)) {
      const at = from + m.index;
      const before = code.slice(Math.max(0, at - 2), at);
      const name = m[1];
      if (name === "abort" && (/[.>]$/.test(before) || /\w$/.test(before))) continue;
      const open = at + m[0].length - 1;
      const close = closeParen(code, open);
      if (close < 0) continue;
      raw.push({ fn, kind: kindOf.get(name)!, cond: normalize(clean.slice(open + 1, close)), pos: at });
    }
  };

  let stmtStart = 0; // where the current header / statement begins
  const fileText: string[] = []; // initializers and macro bodies at file scope
  const opens: number[] = [];
  const ranges: Array<[number, number, string]> = [];
  const n = code.length;
  const next = w
    ? /[{};#]|\b(?:WSP_GGML_ASSERT_ALIGNED|WSP_GGML_ASSERT|WSP_GGML_ABORT|WSP_GGML_UNREACHABLE|WHISPER_ASSERT|assert|abort)\s*\(/g
    : /[{};#]|\b(?:WSP_GGML_ASSERT_ALIGNED|WSP_GGML_ASSERT|WSP_GGML_ABORT|WSP_GGML_UNREACHABLE|abort)\s*\(/g;
  let i = 0;
  while (i < n) {
    next.lastIndex = i;
    const m = next.exec(code);
    if (!m) break;
    i = m.index;
    const c = code[i];
    if (c === "#") {
      // A preprocessor directive: from a `#` first on its line to the unescaped end of line.
      if (!/^[ \t]*$/.test(code.slice(code.lastIndexOf("\n", i - 1) + 1, i))) { i++; continue; }
      let end = i;
      while (end < n && code[end] !== "\n") end = code[end] === "\\" && code[end + 1] === "\n" ? end + 2 : end + 1;
      const text = code.slice(i, end);
      const dir = /^#\s*(\w+)/.exec(text)?.[1] ?? "";
      if (dir === "if" || dir === "ifdef" || dir === "ifndef") conds.push({ start: frames.slice() });
      else if (dir === "elif" || dir === "else") {
        const top = conds.at(-1);
        if (top) {
          top.first ??= frames.slice();
          frames = top.start.slice();
        }
      } else if (dir === "endif") {
        const top = conds.pop();
        if (top?.first) frames = top.first;
      } else if (dir === "define") {
        const name = /^#\s*define\s+(\w+)/.exec(text)?.[1] ?? "";
        // The body only (after the name and its parameters): whisper.cpp's WHISPER_ASSERT is itself a site's sink.
        const head = /^#\s*define\s+\w+(?:\([^)]*\))?/.exec(text)?.[0].length ?? 0;
        if (!kindOf.has(name) || (w && name === "WHISPER_ASSERT")) sitesIn(w ? i + head : i, end, `#define ${name}`);
        if (!frames.some((f) => f.kind === "fn")) fileText.push(text);
      }
      i = end;
      stmtStart = end;
      continue;
    }
    if (c === "{") {
      const inFn = frames.some((f) => f.kind === "fn");
      const f: Frame = inFn ? { kind: "block", name: "" } : classify(code.slice(stmtStart, i));
      frames.push(f);
      // A function's range starts at its header, so that its own name is not a reference.
      opens.push(f.kind === "fn" ? stmtStart : i);
      stmtStart = i + 1;
    } else if (c === "}") {
      const open = opens.pop() ?? 0;
      const top = frames.at(-1);
      if (top?.kind === "fn") ranges.push([open, i, fnOf(frames)!]);
      else if (top?.kind === "block" && !frames.slice(0, -1).some((f) => f.kind === "fn" || f.kind === "block")) fileText.push(code.slice(open, i));
      frames.pop();
      stmtStart = i + 1;
    } else if (c === ";") {
      // A file-scope statement with an initializer may name a function (a pointer to it).
      if (!frames.some((f) => f.kind === "fn")) {
        const stmt = code.slice(stmtStart, i);
        if (/[^=!<>]=[^=]/.test(stmt)) fileText.push(stmt.slice(stmt.search(/[^=!<>]=[^=]/) + 2));
      }
      stmtStart = i + 1;
    } else {
      if (m[0].startsWith("abort") && /[.>]$/.test(code[i - 1] ?? "")) { i += m[0].length; continue; }
      const fn = fnOf(frames) ?? "(file scope)";
      const close = closeParen(code, i + m[0].length - 1);
      if (close < 0) { i += m[0].length; continue; }
      sitesIn(i, close + 1, fn);
      i = close + 1;
      continue;
    }
    i++;
  }

  // Index reads: CPU kernels only (the code that computes on tensor data).
  if (file.startsWith("ggml-cpu/")) {
    const fnAt = (pos: number) => ranges.find(([a, b]) => a <= pos && pos <= b)?.[2];
    INDEX_RE.lastIndex = 0;
    for (let m = INDEX_RE.exec(code); m; m = INDEX_RE.exec(code)) {
      if (m[1] === "dst") continue; // writes to the result
      const fn = fnAt(m.index);
      if (!fn) continue;
      // The statement: back to the previous `;`, `{`, `}` or `:`, forward to the next `;`.
      let s = m.index;
      while (s > 0 && !";{}".includes(code[s - 1])) s--;
      let e = m.index;
      while (e < n && code[e] !== ";") e++;
      const stmt = normalize(clean.slice(s, e));
      // Only a value read (a dereference or a subscript) or a pointer kept to read from; not a copy's source pointer.
      const deref = /\*\s*$/.test(code.slice(Math.max(0, m.index - 3), m.index)) || /^[^;]*?->data\s*\)*\s*\[/.test(code.slice(m.index, e));
      const pointer = /^(?:const\s+)?int(?:32|64)_t\s*\*\s*\w+\s*=/.test(stmt);
      if (!deref && !pointer) continue;
      raw.push({ fn, kind: "index", cond: stmt, pos: m.index });
    }
    raw.sort((a, b) => a.pos - b.pos);
  }

  if (w) {
    const fnAt = (pos: number) => {
      // The innermost function range holding pos.
      let best: [number, number, string] | undefined;
      for (const r of ranges) if (r[0] <= pos && pos <= r[1] && (!best || r[0] >= best[0])) best = r;
      return best?.[2];
    };
    const push = (kind: SiteKind, cond: string, pos: number) => {
      const fn = fnAt(pos);
      if (fn) raw.push({ fn, kind, cond: normalize(cond), pos });
    };
    // throw <expression>;  (a bare `throw;` rethrows)
    for (const m of code.matchAll(/\bthrow\b/g)) {
      const end = code.indexOf(";", m.index);
      push("throw", clean.slice(m.index + 5, end < 0 ? n : end), m.index);
    }
    // receiver.at(index): the receiver read back over names, `.`, `->`, `::` and balanced groups.
    for (const m of code.matchAll(/\.\s*at\s*\(/g)) {
      let s = m.index;
      for (;;) {
        const c = code[s - 1];
        if (c === ")" || c === "]") {
          const open = c === ")" ? "(" : "[";
          let depth = 0, k = s - 1;
          for (; k >= 0; k--) {
            if (code[k] === c) depth++;
            else if (code[k] === open && --depth === 0) break;
          }
          s = k;
        } else if (c !== undefined && /\w/.test(c)) s--;
        else if (c === "." ) s--;
        else if (c === ">" && code[s - 2] === "-") s -= 2;
        else if (c === ":" && code[s - 2] === ":") s -= 2;
        else break;
      }
      const open = m.index + m[0].length - 1;
      const close = closeParen(code, open);
      if (close < 0 || s === m.index) continue;
      push("at", clean.slice(s, close + 1), m.index);
    }
    // std::regex construction and matching.
    for (const m of code.matchAll(/\bstd::(regex_search|regex_match|regex\s+\w+)\s*\(/g)) {
      const close = closeParen(code, m.index + m[0].length - 1);
      if (close >= 0) push("regex", clean.slice(m.index, close + 1), m.index);
    }
    // Calls into ggml that can reach one of its sites.
    if (options.ggmlCalls) {
      for (const m of code.matchAll(/\b(wsp_ggml_\w+)\s*\(/g)) {
        if (options.ggmlCalls.has(m[1]) && code[m.index - 1] !== ".") push("ggml_call", m[1], m.index);
      }
    }
    raw.sort((a, b) => a.pos - b.pos);
  }

  // References: identifiers inside each function's range, and outside every function.
  const refs = new Map<string, Set<string>>();
  const fileRefs = new Set<string>();
  const addAll = (set: Set<string>, text: string) => {
    for (const m of text.matchAll(IDENT)) set.add(m[0]);
  };
  for (const [a, b, name] of ranges) {
    let set = refs.get(name);
    if (!set) refs.set(name, set = new Set());
    // The body only: the header names the function itself and its parameter types.
    addAll(set, code.slice(code.indexOf("{", code.indexOf(")", a)), b + 1));
  }
  for (const t of fileText) addAll(fileRefs, t);

  const seen = new Map<string, number>();
  const sites = raw.map((r) => {
    const base = r.cond ? `${r.kind} ${r.cond}` : r.kind;
    const k = `${r.fn}\u0000${base}`;
    const count = (seen.get(k) ?? 0) + 1;
    seen.set(k, count);
    const local = count === 1 ? base : `${base}#${count}`;
    return { file, function: r.fn, kind: r.kind, condition: r.cond, n: count, local, key: `${file}:${r.fn}:${local}`, line: lineOf(r.pos) };
  });
  return { sites, refs, fileRefs };

}


/** The source files the inventory reads: every C, C++ and Objective-C file and header below `dir`. */
export function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { recursive: true })) {
    const f = String(e).split(sep).join("/");
    if (/\.(c|cpp|h|m)$/.test(f)) out.push(f);
  }
  return out.sort();
}

/** Every site below `dir` (normally `vendor/ggml`). */
export function scanTree(dir: string): Site[] {
  return scanTreeFull(dir).sites;
}

/** The sites below `dir` and the lexical call graph of its functions. */
export interface TreeScan {
  readonly sites: Site[];
  /** Function name → the identifiers its bodies name (one name may be defined in several files). */
  readonly refs: Map<string, Set<string>>;
  /** Identifiers named at file scope, by file. */
  readonly fileRefs: Map<string, Set<string>>;
}

/** Debug switches no build defines: code under them is compiled out, neither a site nor a call. */
export const NEVER_DEFINED = new Set(["WSP_GGML_VULKAN_CHECK_RESULTS", "WSP_GGML_VULKAN_RUN_TESTS", "WSP_GGML_VULKAN_DEBUG", "WSP_GGML_VULKAN_MEMORY_DEBUG", "WSP_GGML_VULKAN_PERF"]);

/**
 * `src` with the lines of `#ifdef X` / `#if defined(X) || defined(Y)` branches blanked where
 * every macro tested is in {@linkcode NEVER_DEFINED} (an `#else` branch is kept); line numbers stay.
 */
export function withoutDebugBlocks(src: string, never: ReadonlySet<string> = NEVER_DEFINED, ifZero = false): string {
  const lines = src.split("\n");
  const stack: { dead: boolean; skip: boolean }[] = []; // skip: this #if is one of ours
  const deadNow = () => stack.some((f) => f.dead);
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i].trim();
    const m = /^#\s*(ifdef|ifndef|if|elif|else|endif)\b(.*)$/.exec(l);
    if (m) {
      const [, dir, rest] = m;
      if (dir === "ifdef" || dir === "if") {
        const names = dir === "ifdef" ? [rest.trim()] : [...rest.matchAll(/defined\s*\(?\s*(\w+)\s*\)?/g)].map((x) => x[1]);
        const ours = (ifZero && dir === "if" && rest.trim() === "0") || (names.length > 0 && names.every((n) => never.has(n)) &&
          (dir === "ifdef" || rest.replace(/defined\s*\(?\s*\w+\s*\)?|\|\||\s/g, "") === ""));
        const wasDead = deadNow();
        stack.push({ dead: ours, skip: ours });
        if (wasDead || ours) lines[i] = "";
        continue;
      }
      if (dir === "ifndef") stack.push({ dead: false, skip: false });
      else if (stack.length > 0 && (dir === "else" || dir === "elif")) {
        const top = stack[stack.length - 1];
        if (top.skip) {
          top.dead = dir === "else" ? false : top.dead; // an #elif after ours: keep it dead (conservative: not a site)
          lines[i] = "";
          continue;
        }
      } else if (dir === "endif" && stack.length > 0) {
        const top = stack.pop()!;
        if (top.skip || deadNow()) lines[i] = "";
        continue;
      }
    }
    if (deadNow()) lines[i] = "";
  }
  return lines.join("\n");
}

export function scanTreeFull(dir: string): TreeScan {
  const sites: Site[] = [];
  const refs = new Map<string, Set<string>>();
  const fileRefs = new Map<string, Set<string>>();
  for (const f of sourceFiles(dir)) {
    const r = scanFile(f, withoutDebugBlocks(readFileSync(join(dir, f), "utf8")));
    sites.push(...r.sites);
    for (const [k, v] of r.refs) {
      // A template specialisation `name<…>` is also reached by its plain name.
      for (const name of new Set([k, k.replace(/<.*>$/, "")])) {
        const s = refs.get(name);
        if (s) for (const x of v) s.add(x);
        else refs.set(name, new Set(v));
      }
    }
    fileRefs.set(f, r.fileRefs);
  }
  return { sites, refs, fileRefs };
}

/**
 * The functions reachable from `roots` (the identifiers the binding's TypeScript and C
 * shims name) through the lexical call graph. Conservative: a function named at file scope
 * (in an interface table or initializer) counts as reachable, and so does every C++ member
 * function (reached through virtual calls the reader does not follow); a name defined in
 * several files is one node.
 */
export function reachable(tree: TreeScan, roots: Iterable<string>): Set<string> {
  const seen = new Set<string>();
  const todo: string[] = [];
  const visit = (name: string) => {
    if (seen.has(name)) return;
    seen.add(name);
    todo.push(name);
  };
  for (const r of roots) visit(r);
  for (const refs of tree.fileRefs.values()) for (const r of refs) if (tree.refs.has(r)) visit(r);
  for (const fn of tree.refs.keys()) if (fn.includes("::") || fn.startsWith("#define")) visit(fn);
  while (todo.length) {
    const fn = todo.pop()!;
    const refs = tree.refs.get(fn);
    if (refs) for (const r of refs) if (tree.refs.has(r)) visit(r);
  }
  return seen;
}

/**
 * The C names the binding calls: identifiers in the code (not the comments) of its TypeScript
 * (not the raw FFI tables, `src/ffi/bindings.gen.ts` and `src/ffi/whisper.gen.ts`, which users do not get) and of its own C files
 * (`native/*.c` and `native/whisper/job.c`; not the generated shims, which wrap every symbol, nor the
 * smoke test or the C whisper driver); `whisper_*` names are whisper.cpp's entry points.
 */
export function bindingRoots(root: string): Set<string> {
  const out = new Set<string>();
  const add = (text: string) => {
    for (const m of lex(text).code.matchAll(/\bwsp_(?:ggml|gguf)\w*|\bwhisper_\w+/g)) out.add(m[0]);
  };
  for (const e of readdirSync(join(root, "src"), { recursive: true })) {
    const f = String(e).split(sep).join("/");
    if (f.endsWith(".ts") && !f.endsWith("bindings.gen.ts") && !f.endsWith("whisper.gen.ts")) add(readFileSync(join(root, "src", f), "utf8"));
  }
  for (const f of readdirSync(join(root, "native"))) if (f.endsWith(".c")) add(readFileSync(join(root, "native", f), "utf8"));
  // whisper.cpp's entry points: the job shim the API runs transcriptions through (not the C driver, a reference program).
  const job = join(root, "native", "whisper", "job.c");
  if (existsSync(job)) add(readFileSync(job, "utf8"));
  return out;
}

/**
 * Macros no build of libwsp-whisper defines (build.zig's addWhisper): whisper.cpp's debug trace,
 * the Core ML and OpenVINO encoders, and the compile-time backends (ggml's are loaded at run time).
 */
export const WHISPER_NEVER_DEFINED = new Set(["WHISPER_DEBUG", "WHISPER_USE_COREML", "WHISPER_USE_OPENVINO", "WSP_GGML_USE_METAL", "WSP_GGML_USE_CUDA", "WHISPER_BIG_ENDIAN"]);

/** `src` with the arguments of `NAME(…)` calls blanked (a macro that expands to nothing); offsets and lines kept. */
export function withoutMacroCalls(src: string, name: string): string {
  const { code } = lex(src);
  const out = src.split("");
  for (const m of code.matchAll(new RegExp(`\\b${name}\\s*\\(`, "g"))) {
    const lineStart = code.lastIndexOf("\n", m.index) + 1;
    if (/^\s*#/.test(code.slice(lineStart, m.index))) continue; // its #define
    const close = closeParen(code, m.index + m[0].length - 1);
    for (let i = m.index + m[0].length; i < close; i++) if (out[i] !== "\n") out[i] = " ";
  }
  return out.join("");
}

/**
 * The functions of `tree` from which one of its sites can be reached through the lexical call
 * graph (a site's own function, and every function that names one of those).
 */
export function abortingFunctions(tree: TreeScan): Set<string> {
  const out = new Set<string>();
  for (const s of tree.sites) out.add(s.function);
  for (let grew = true; grew;) {
    grew = false;
    for (const [fn, refs] of tree.refs) {
      if (out.has(fn)) continue;
      for (const r of refs) if (out.has(r)) { out.add(fn); grew = true; break; }
    }
  }
  return out;
}

/**
 * whisper.cpp's sites (`dir` is \`vendor/whisper\`; files are named \`whisper/…\`): its macros, plain
 * asserts, throws, \`.at(\`, std::regex and every call of a ggml function in \`ggmlCalls\`; code under
 * {@linkcode WHISPER_NEVER_DEFINED}, \`#if 0\` and the arguments of \`WHISPER_LOG_DEBUG\` (empty
 * without WHISPER_DEBUG) are neither sites nor calls.
 */
export function scanWhisper(dir: string, ggmlCalls?: ReadonlySet<string>): TreeScan {
  const sites: Site[] = [];
  const refs = new Map<string, Set<string>>();
  const fileRefs = new Map<string, Set<string>>();
  for (const f of sourceFiles(dir)) {
    if (!f.endsWith(".cpp")) continue; // whisper.h, whisper-arch.h: declarations and tables
    const src = withoutMacroCalls(withoutDebugBlocks(readFileSync(join(dir, f), "utf8"), WHISPER_NEVER_DEFINED, true), "WHISPER_LOG_DEBUG");
    const r = scanFile(`whisper/${f}`, src, { whisper: true, ggmlCalls });
    sites.push(...r.sites);
    for (const [k, v] of r.refs) refs.set(k, new Set([...(refs.get(k) ?? []), ...v]));
    fileRefs.set(`whisper/${f}`, r.fileRefs);
  }
  return { sites, refs, fileRefs };
}

if (process.argv[1] && process.argv[1].replace(/\\/g, "/").endsWith("codegen/asserts.ts")) {
  const dir = process.argv[2] ?? join(process.argv[1], "..", "..", "vendor", "ggml");
  const t0 = performance.now();
  const sites = scanTree(dir);
  for (const s of sites) console.log(`${s.file}:${s.line}\t${s.function}\t${s.local}`);
  console.error(`${sites.length} sites in ${(performance.now() - t0).toFixed(0)} ms`);
}
