/**
 * The demo `npm run demo` runs: train a small MLP on interleaved spirals with
 * ggml-opt (AdamW) through the scheduler on the best device (a GPU when ggml
 * has one, else the CPU; `--device` or `WSP_GGML_DEVICE` chooses), save it to
 * GGUF, read it back into a fresh context and evaluate it on held-out points.
 *
 *   deno run -A examples/demo/main.ts [options]
 *   bun examples/demo/main.ts [options]
 *   node --import tsx examples/demo/main.ts [options]
 *
 * @module
 */
import { statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { parseArgs } from "node:util";
import { bestDevice, GgufType, systemInfo } from "../../mod.ts";
import { spirals } from "./data.ts";
import { accuracy, type Hyper, loadGguf, predict, saveGguf } from "./model.ts";
import { reporter } from "./progress.ts";
import { train } from "./train.ts";
import { isProgram } from "../shared/program.ts";

/** The demo's options (the CLI's flags). */
export interface DemoOptions {
  readonly epochs: number;
  readonly hidden: number;
  readonly layers: number;
  readonly threads: number;
  readonly batch: number;
  readonly lr: number;
  readonly seed: number;
  /** `auto` (a GPU if there is one, else the CPU), `cpu`, `gpu` or a device's name. */
  readonly device: string;
  readonly out: string;
  readonly quiet: boolean;
}

/** What the demo measured. */
export interface DemoResult {
  readonly options: DemoOptions;
  /** The device it trained on. */
  readonly device: string;
  readonly trainPoints: number;
  readonly testPoints: number;
  /** Training loss and accuracy of the last epoch. */
  readonly trainLoss: number;
  readonly trainAccuracy: number;
  /** Held-out accuracy of the trained weights, in memory. */
  readonly testAccuracy: number;
  /** Held-out accuracy of the weights read back from the GGUF file. */
  readonly reloadedAccuracy: number;
  /** Whether both predicted the same class for every held-out point. */
  readonly samePredictions: boolean;
  readonly fileBytes: number;
  readonly trainSeconds: number;
  readonly totalSeconds: number;
}

export const DEFAULTS: DemoOptions = {
  epochs: 25,
  hidden: 64,
  layers: 2,
  threads: 2,
  batch: 32,
  lr: 0.005,
  seed: 1,
  device: "auto",
  out: join(tmpdir(), "wsp-ggml-spiral-mlp.gguf"),
  quiet: false,
};

const HELP = `usage: main.ts [options]

Trains a ${DEFAULTS.layers}-hidden-layer MLP on three interleaved spirals (ggml-opt, AdamW, through the scheduler
on the best device), saves it to GGUF, reloads it in a fresh context and evaluates it on held-out points.

  --epochs N    passes over the training points (default ${DEFAULTS.epochs})
  --hidden N    units per hidden layer (default ${DEFAULTS.hidden})
  --layers N    hidden layers (default ${DEFAULTS.layers})
  --threads N   CPU threads (default ${DEFAULTS.threads})
  --batch N     points per optimizer step (default ${DEFAULTS.batch})
  --lr X        AdamW learning rate (default ${DEFAULTS.lr})
  --seed N      seed of the data and the initial weights (default ${DEFAULTS.seed})
  --device D    auto (a GPU if there is one, else the CPU; WSP_GGML_DEVICE overrides), cpu, gpu,
                or a device's name as examples/devices.ts lists it (default ${DEFAULTS.device})
  --out PATH    the GGUF file to write (default ${DEFAULTS.out})
  --quiet       no per-epoch output
  --json        print the results as one JSON line at the end
  -h, --help    this text`;

/** Parses the CLI's arguments. */
export function parseOptions(argv: string[]): DemoOptions & { json: boolean; help: boolean } {
  const { values } = parseArgs({
    args: argv,
    options: {
      epochs: { type: "string" }, hidden: { type: "string" }, layers: { type: "string" }, threads: { type: "string" },
      batch: { type: "string" }, lr: { type: "string" }, seed: { type: "string" }, out: { type: "string" }, device: { type: "string" },
      quiet: { type: "boolean" }, json: { type: "boolean" }, help: { type: "boolean", short: "h" },
    },
  });
  const int = (k: "epochs" | "hidden" | "layers" | "threads" | "batch" | "seed", min: number) => {
    const v = values[k] === undefined ? DEFAULTS[k] : Number(values[k]);
    if (!Number.isInteger(v) || v < min) throw new Error(`--${k} must be an integer ≥ ${min}, got ${values[k]}`);
    return v;
  };
  const lr = values.lr === undefined ? DEFAULTS.lr : Number(values.lr);
  if (!(lr > 0)) throw new Error(`--lr must be a positive number, got ${values.lr}`);
  return {
    epochs: int("epochs", 1), hidden: int("hidden", 1), layers: int("layers", 1), threads: int("threads", 1), batch: int("batch", 1),
    seed: int("seed", 0), lr, device: values.device ?? DEFAULTS.device, out: values.out ?? DEFAULTS.out, quiet: values.quiet ?? false, json: values.json ?? false, help: values.help ?? false,
  };
}

/** Runs the demo: train, save, reload, evaluate. */
export function runDemo(options: Partial<DemoOptions> = {}): DemoResult {
  const o: DemoOptions = { ...DEFAULTS, ...options };
  const t0 = performance.now();
  const report = reporter({ quiet: o.quiet });
  const data = spirals({ seed: o.seed });
  const hp: Hyper = { inputs: 2, hidden: o.hidden, layers: o.layers, classes: data.classes };
  const info = systemInfo();
  const device = bestDevice({ device: o.device });
  report.log(
    `wsp-ggml ${info.version} (ggml ${info.ggmlCommit.slice(0, 7)}) on ${info.runtime.name} ${info.runtime.version}, CPU variant ${info.cpuVariant.name}, ${o.threads} thread(s)`,
  );
  report.log(`device: ${device.name} [${device.typeName}] ${device.description}${device.isGpu ? " (the CPU takes the ops it does not support)" : ""}`);
  report.log(`data: ${data.classes} spirals, ${data.train.n} training and ${data.test.n} held-out points (seed ${o.seed})`);
  report.log(`model: 2 → ${Array(o.layers).fill(o.hidden).join(" → ")} → ${data.classes} (relu), AdamW lr ${o.lr}, batch ${o.batch}, ${o.epochs} epochs`);

  const trained = train({
    hp, data: data.train, epochs: o.epochs, batch: o.batch, lr: o.lr, threads: o.threads, seed: o.seed, device: o.device,
    onProgress: (p) => {
      report.update(p);
      if (p.batch === p.batches) report.epochDone(p);
    },
  });
  const trainSeconds = (performance.now() - t0) / 1000;
  let testPred: Int32Array;
  const last = trained.history[trained.history.length - 1];
  const trainedOn = trained.device;
  if (trained.fallback) report.log(`device: ${trained.fallback}`);
  try {
    testPred = predict(trained.weights, hp, data.test.x, o.threads);
    saveGguf(o.out, trained.weights, hp, [
      ["spiral-mlp.training.epochs", GgufType.UINT32, o.epochs],
      ["spiral-mlp.training.seed", GgufType.UINT32, o.seed],
      ["spiral-mlp.training.optimizer", GgufType.STRING, "adamw"],
      ["spiral-mlp.training.learning_rate", GgufType.FLOAT32, o.lr],
      ["spiral-mlp.training.accuracy", GgufType.FLOAT32, last.accuracy],
    ]);
  } finally {
    trained.free();
  }
  const testAccuracy = accuracy(testPred, data.test.labels);

  const loaded = loadGguf(o.out);
  let reloadedPred: Int32Array;
  try {
    reloadedPred = predict(loaded.weights, loaded.hp, data.test.x, o.threads);
  } finally {
    loaded.context.free();
  }
  const reloadedAccuracy = accuracy(reloadedPred, data.test.labels);
  const samePredictions = reloadedPred.every((v, i) => v === testPred[i]);
  const size = statSync(o.out).size;
  const totalSeconds = (performance.now() - t0) / 1000;
  report.log(`saved ${o.out} (${size} bytes: ${loaded.weights.size} tensors, hyper-parameters as KVs)`);
  report.log(`held-out accuracy: trained ${pct(testAccuracy)}, reloaded from GGUF ${pct(reloadedAccuracy)} (${data.test.n} points${samePredictions ? ", identical predictions" : ", PREDICTIONS DIFFER"})`);
  report.log(`time: training ${trainSeconds.toFixed(1)} s, total ${totalSeconds.toFixed(1)} s`);
  return {
    options: o, device: trainedOn, trainPoints: data.train.n, testPoints: data.test.n, trainLoss: last.loss, trainAccuracy: last.accuracy,
    testAccuracy, reloadedAccuracy, samePredictions, fileBytes: size, trainSeconds, totalSeconds,
  };
}

const pct = (x: number) => `${(100 * x).toFixed(1)}%`;

/** The CLI: parses `argv`, runs the demo, exits non-zero on a bad flag. */
export function main(argv: string[]): number {
  let o;
  try {
    o = parseOptions(argv);
  } catch (e) {
    console.error(`${(e as Error).message}\n\n${HELP}`);
    return 2;
  }
  if (o.help) {
    console.log(HELP);
    return 0;
  }
  const { json, help: _, ...options } = o;
  const r = runDemo(options);
  if (json) console.log(JSON.stringify(r));
  return 0;
}

if (isProgram(import.meta)) {
  process.exitCode = main(process.argv.slice(2));
}
