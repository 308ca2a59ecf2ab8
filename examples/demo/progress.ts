/**
 * Progress output: a live bar redrawn in place on a terminal, one plain line
 * per epoch otherwise (logs, CI, pipes).
 *
 * @module
 */
import process from "node:process";
import type { Progress } from "./train.ts";

/** Reports training progress. */
export interface Reporter {
  /** After each batch. */
  update(p: Progress): void;
  /** After each epoch, with its final numbers. */
  epochDone(p: Progress): void;
  /** Prints a line (below the bar, on a terminal). */
  log(line: string): void;
}

const BAR = 24;

function numbers(p: Progress): string {
  const rate = p.ms > 0 ? (p.samples * 1000) / p.ms : 0;
  return `loss ${p.loss.toFixed(4)}  acc ${(100 * p.accuracy).toFixed(1).padStart(5)}%  ${Math.round(rate).toLocaleString("en-US").padStart(7)} samples/s`;
}

function label(p: Progress): string {
  const w = String(p.epochs).length;
  return `epoch ${String(p.epoch).padStart(w)}/${p.epochs}`;
}

/**
 * A reporter for `out` (default stdout): a bar redrawn after every batch when
 * `out` is a terminal (unless `live` is false or `NO_PROGRESS` is set), and
 * a line for the first, every `every`th (default 5th) and the last epoch;
 * nothing per epoch when `quiet`.
 */
export function reporter(
  options: { quiet?: boolean; live?: boolean; every?: number; out?: { isTTY?: boolean; write(s: string): unknown } } = {},
): Reporter {
  const out = options.out ?? process.stdout;
  const quiet = options.quiet ?? false;
  const every = options.every ?? 5;
  const live = !quiet && (options.live ?? out.isTTY === true) && !process.env.NO_PROGRESS;
  let drawn = false, last = 0;
  const clear = () => {
    if (drawn) out.write("\r\x1b[2K");
    drawn = false;
  };
  return {
    update(p) {
      if (!live) return;
      const now = performance.now();
      if (p.batch !== p.batches && now - last < 50) return; // redraw at most 20 times a second
      last = now;
      const filled = Math.round((BAR * p.batch) / p.batches);
      out.write(`\r\x1b[2K${label(p)} [${"█".repeat(filled)}${"·".repeat(BAR - filled)}] ${numbers(p)}`);
      drawn = true;
    },
    epochDone(p) {
      if (quiet) return;
      // A line for the first epoch, every `every`th and the last; on a terminal the bar shows the rest.
      if (p.epoch !== 1 && p.epoch % every !== 0 && p.epoch !== p.epochs) return;
      clear();
      out.write(`${label(p)}  ${numbers(p)}  (${(p.ms / 1000).toFixed(2)} s)\n`);
    },
    log(line) {
      clear();
      out.write(line + "\n");
    },
  };
}
