// libwsp-whisper through the generated whisper table: it loads lazily beside the base library,
// its struct layouts equal the compiler's (probes in native/shim/whisper.gen.c), the by-value
// shims return whisper.cpp's defaults, and bad model files give NULL, not a crash.
// No model is needed (the transcription tests live with the TypeScript API).
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { WhisperSamplingStrategy, whisperLayouts } from "../src/ffi/whisper.gen.ts";
import { cString, StructView } from "../src/ffi/mod.ts";
import { LibraryNotFoundError } from "../src/core/errors.ts";
import { ffi, library } from "../src/runtime/loader.ts";
import { loadWhisper, whisperAsync, whisperLibraryName, whisperSymbols } from "../src/runtime/whisper.ts";

const SIZEOF = 0, ALIGNOF = 1, OFFSETOF = 2, FIELD_SIZEOF = 3;

describe(`whisper library on ${ffi.runtime}`, () => {
  test("a missing whisper library is a LibraryNotFoundError naming the file", () => {
    const dir = mkdtempSync(join(tmpdir(), "wsp-whisper-missing-"));
    try {
      const file = join(dir, whisperLibraryName());
      assert.throws(() => loadWhisper({ path: file }), (e: unknown) => e instanceof LibraryNotFoundError && e.message.includes(file));
      // And nothing is cached by the failure: the default place still loads below.
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("loads beside the base library, with every generated symbol", () => {
    const w = loadWhisper();
    assert.equal(w.path, join(library().location.dir, whisperLibraryName()));
    assert.equal(loadWhisper(), w, "opened once");
    for (const name of ["whisper_init_from_file_with_params", "whisper_full", "whisper_full_default_params", "wsp_whisper_job_new", "wsp_whisper_job_run"] as const) {
      assert.ok(w.has(name), name);
    }
  });

  test("layouts equal the compiler's", () => {
    const probe = ffi.open(loadWhisper().path, { wsp_whisper_shim_layout: { args: ["pointer", "pointer", "i32"], result: "i64" } } as const);
    const ask = (record: string, field: string | null, what: number) => {
      const r = cString(record), f = field === null ? null : cString(field);
      const v = Number(probe.symbols.wsp_whisper_shim_layout(ffi.addressOf(r), f ? ffi.addressOf(f) : 0, what));
      assert.ok(r.length > 0 && (f === null || f.length > 0)); // keeps both buffers alive across the call
      return v;
    };
    assert.equal(ask("no_such_record", null, SIZEOF), -1);
    assert.ok(Object.keys(whisperLayouts).length >= 8);
    for (const [key, layout] of Object.entries(whisperLayouts)) {
      assert.equal(layout.size, ask(key, null, SIZEOF), `sizeof ${layout.name}`);
      assert.equal(layout.align, ask(key, null, ALIGNOF), `_Alignof ${layout.name}`);
      for (const [name, f] of Object.entries(layout.fields)) {
        assert.equal(f.offset, ask(key, name, OFFSETOF), `offsetof(${layout.name}, ${name})`);
        assert.equal(f.size, ask(key, name, FIELD_SIZEOF), `sizeof ${layout.name}.${name}`);
      }
    }
  });

  test("whisper_full_default_params through the shim and the layout", () => {
    const w = whisperSymbols();
    const p = StructView.alloc(whisperLayouts.whisper_full_params);
    w.whisper_full_default_params(WhisperSamplingStrategy.GREEDY, ffi.addressOf(p.bytes));
    assert.equal(p.get("strategy"), WhisperSamplingStrategy.GREEDY);
    assert.ok((p.get("n_threads") as number) > 0);
    assert.equal(ffi.readCString(p.getPointer("language")), "en");
    assert.equal(p.get("no_context"), true);
    assert.equal(p.get("print_progress"), true, "whisper.cpp's C default (the API turns it off)");
    assert.equal(p.sub("greedy", whisperLayouts.whisper_full_params_greedy).get("best_of"), 5);
    assert.equal(p.getPointer("new_segment_callback"), 0);

    const beam = StructView.alloc(whisperLayouts.whisper_full_params);
    w.whisper_full_default_params(WhisperSamplingStrategy.BEAM_SEARCH, ffi.addressOf(beam.bytes));
    assert.equal(beam.get("strategy"), WhisperSamplingStrategy.BEAM_SEARCH);
    assert.equal(beam.sub("beam_search", whisperLayouts.whisper_full_params_beam_search).get("beam_size"), 5);
  });

  test("whisper_context_default_params", () => {
    const c = StructView.alloc(whisperLayouts.whisper_context_params);
    whisperSymbols().whisper_context_default_params(ffi.addressOf(c.bytes));
    assert.equal(c.get("use_gpu"), true);
    assert.equal(c.get("flash_attn"), true, "whisper.cpp 85871a9's C default");
    assert.equal(c.get("dtw_token_timestamps"), false);
  });

  test("a missing or garbage model file gives NULL", async () => {
    const w = whisperSymbols();
    const c = StructView.alloc(whisperLayouts.whisper_context_params);
    w.whisper_context_default_params(ffi.addressOf(c.bytes));
    c.set("use_gpu", false);
    const dir = mkdtempSync(join(tmpdir(), "wsp-whisper-model-"));
    try {
      const missing = cString(join(dir, "no-such-model.bin"));
      assert.equal(w.whisper_init_from_file_with_params(ffi.addressOf(missing), ffi.addressOf(c.bytes)), 0);
      const garbage = join(dir, "garbage.bin");
      writeFileSync(garbage, new TextEncoder().encode("this is not a whisper model, only some text\n".repeat(50)));
      const g = cString(garbage);
      assert.equal(w.whisper_init_from_file_with_params(ffi.addressOf(g), ffi.addressOf(c.bytes)), 0);
      // The non-blocking variant (Deno nonblocking, koffi async, Bun's call worker).
      const load = whisperAsync().whisper_init_from_file_with_params;
      assert.ok(load, "marked nonblocking");
      assert.equal(await load(ffi.addressOf(g), ffi.addressOf(c.bytes)), 0);
      assert.ok(missing.length > 0 && g.length > 0 && c.bytes.length > 0); // alive across the calls
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("languages", () => {
    const w = whisperSymbols();
    const en = cString("en");
    assert.equal(w.whisper_lang_id(ffi.addressOf(en)), 0);
    assert.equal(ffi.readCString(w.whisper_lang_str(0)), "en");
    assert.ok(w.whisper_lang_max_id() > 90);
    assert.equal(en.length, 3);
  });

  test("the job API refuses a NULL context and a NULL job", () => {
    const w = whisperSymbols();
    const p = StructView.alloc(whisperLayouts.whisper_full_params);
    w.whisper_full_default_params(WhisperSamplingStrategy.GREEDY, ffi.addressOf(p.bytes));
    assert.equal(w.wsp_whisper_job_new(0, ffi.addressOf(p.bytes), 0, 0), 0);
    assert.equal(w.wsp_whisper_job_n_segments(0), 0);
    assert.equal(w.wsp_whisper_job_segment(0, 0, 0, 0, 0, 0), -1);
    assert.equal(w.wsp_whisper_job_progress(0), 0);
    w.wsp_whisper_job_free(0);
  });
});
