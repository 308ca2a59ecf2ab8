// The sections of bench/RESULTS.md that the single-purpose runners own (bench/llm_run.mjs,
// whisper_run.mjs, rpc.mjs, index_scan.mjs), each between its markers; bench/run.mjs rewrites the file and keeps them.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** Replaces the section between `begin` and `end` in `<root>/bench/RESULTS.md` with `section` (which carries both markers), or appends it. */
export function writeResultsSection(root, begin, end, section) {
  const file = join(root, "bench", "RESULTS.md");
  const text = existsSync(file) ? readFileSync(file, "utf8") : "# bench/RESULTS.md\n";
  const at = text.indexOf(begin), stop = text.indexOf(end);
  writeFileSync(file, at >= 0 && stop > at ? text.slice(0, at) + section + text.slice(stop + end.length) : `${text.trimEnd()}\n\n${section}\n`);
}
