// Child of tests/package/loader_errors.test.ts: loads the library (from
// WSP_GGML_LIBRARY_PATH or the usual places) and prints one JSON line: how
// the load went, or the error's name, code, message and flag.
import { loadLibrary, systemInfo } from "../../mod.ts";

try {
  loadLibrary();
  console.log(JSON.stringify({ ok: true, variant: systemInfo().cpuVariant.name }));
} catch (e) {
  const err = e as Error & { code?: string; flag?: string };
  console.log(JSON.stringify({ ok: false, name: err.name, code: err.code, flag: err.flag, message: err.message }));
}
