/**
 * The demo's dataset, made in-process: interleaved spiral arms in the plane,
 * one class per arm, with seeded noise. Nothing is downloaded.
 *
 * @module
 */
import { mulberry32 } from "../shared/program.ts";

/** A seeded pseudo-random generator (mulberry32): numbers in [0, 1). */
export const rng: (seed: number) => () => number = mulberry32;

/** A normal deviate (Box–Muller) from a uniform generator. */
export function gaussian(random: () => number): number {
  const u = 1 - random(), v = random();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

/** Points and their classes. */
export interface Split {
  /** Coordinates, two per point: `[x0, y0, x1, y1, …]` (ggml shape `[2, n]`). */
  readonly x: Float32Array;
  /** The class of each point. */
  readonly labels: Int32Array;
  /** One-hot labels, `classes` per point (ggml shape `[classes, n]`). */
  readonly onehot: Float32Array;
  /** Number of points. */
  readonly n: number;
}

/** The dataset: a training and a held-out split. */
export interface Spirals {
  readonly classes: number;
  readonly train: Split;
  readonly test: Split;
}

/** Options of {@linkcode spirals}. */
export interface SpiralOptions {
  /** Number of arms (= classes); default 3. */
  readonly classes?: number;
  /** Points per arm; default 1000. */
  readonly perClass?: number;
  /** Standard deviation of the Gaussian noise added to each coordinate; default 0.02. */
  readonly noise?: number;
  /** Turns of each arm; default 2. */
  readonly turns?: number;
  /** Fraction of the points held out for evaluation; default 0.2. */
  readonly testFraction?: number;
  /** Random seed; default 1. */
  readonly seed?: number;
}

function split(points: { x: number; y: number; c: number }[], classes: number): Split {
  const n = points.length;
  const x = new Float32Array(2 * n), labels = new Int32Array(n), onehot = new Float32Array(classes * n);
  points.forEach((p, i) => {
    x[2 * i] = p.x;
    x[2 * i + 1] = p.y;
    labels[i] = p.c;
    onehot[classes * i + p.c] = 1;
  });
  return { x, labels, onehot, n };
}

/**
 * `classes` spiral arms around the origin, radius 0 → 1, each starting at
 * its own angle, with Gaussian noise on both coordinates; shuffled (seeded) and
 * split into training and held-out points.
 */
export function spirals(options: SpiralOptions = {}): Spirals {
  const classes = options.classes ?? 3, perClass = options.perClass ?? 1000;
  const noise = options.noise ?? 0.02, turns = options.turns ?? 2, testFraction = options.testFraction ?? 0.2;
  const random = rng(options.seed ?? 1);
  const points: { x: number; y: number; c: number }[] = [];
  for (let c = 0; c < classes; c++) {
    for (let i = 0; i < perClass; i++) {
      const r = (i + 1) / perClass;
      const theta = (2 * Math.PI * c) / classes + 2 * Math.PI * turns * r;
      points.push({ x: r * Math.cos(theta) + noise * gaussian(random), y: r * Math.sin(theta) + noise * gaussian(random), c });
    }
  }
  for (let i = points.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [points[i], points[j]] = [points[j], points[i]];
  }
  const nTest = Math.round(points.length * testFraction);
  return { classes, train: split(points.slice(nTest), classes), test: split(points.slice(0, nTest), classes) };
}
