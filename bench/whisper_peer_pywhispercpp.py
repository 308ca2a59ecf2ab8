#!/usr/bin/env python3
"""The Python peer: PyPI `pywhispercpp` (whisper.cpp with its own prebuilt wheels) transcribing the
same clips with the same model file, timed like bench/whisper.ts: the model loaded first, then each
clip `reps` times, the wall time of `Model.transcribe(samples)` alone (time.perf_counter_ns).

    .cache/bench-whisper-venv/bin/python bench/whisper_peer_pywhispercpp.py --model FILE
        [--threads 1] [--reps 2] [--flash-attn 0|1] WAV...

Samples: the WAV's 16-bit PCM / 32768 as float32 (what the C driver does). Parameters: greedy
(params_sampling_strategy=0, whisper_full_default_params(GREEDY) otherwise, as the C driver),
language "en", the thread count given, printing off; flash attention through `context_params`
(pywhispercpp >= 1.4 passes `flash_attn` to whisper_context_params). Prints one JSON line; the
transcript is the segments' raw text joined (pywhispercpp's Segment.text is stripped, so it is read
again from the context with whisper_full_get_segment_text).
"""
import argparse
import importlib.metadata
import json
import os
import struct
import sys
import time

import numpy as np
import _pywhispercpp as pw
from pywhispercpp.model import Model


def pcm16(path):
    with open(path, "rb") as f:
        b = f.read()
    at = 12
    while at + 8 <= len(b):
        tag = b[at:at + 4]
        (n,) = struct.unpack_from("<I", b, at + 4)
        if tag == b"data":
            n = min(n, len(b) - at - 8)
            return np.frombuffer(b, dtype="<i2", count=n // 2, offset=at + 8).astype(np.float32) / np.float32(32768.0)
        at += 8 + n + (n & 1)
    raise ValueError(f"{path}: no data chunk")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--flash-attn", type=int, default=0)
    ap.add_argument("wavs", nargs="+")
    a = ap.parse_args()

    t0 = time.perf_counter_ns()
    model = Model(
        a.model,
        params_sampling_strategy=0,
        redirect_whispercpp_logs_to=None,
        context_params={"use_gpu": False, "flash_attn": bool(a.flash_attn)},
        n_threads=a.threads,
        language="en",
        print_progress=False,
        print_realtime=False,
        print_timestamps=False,
        print_special=False,
    )
    load_ms = (time.perf_counter_ns() - t0) / 1e6

    clips = []
    for wav in a.wavs:
        samples = pcm16(wav)
        runs = []
        text = ""
        for _ in range(a.reps):
            t0 = time.perf_counter_ns()
            model.transcribe(samples)
            runs.append((time.perf_counter_ns() - t0) / 1e6)
            n = pw.whisper_full_n_segments(model._ctx)
            text = "".join(pw.whisper_full_get_segment_text(model._ctx, i).decode("utf-8", errors="replace") for i in range(n))
        clips.append({"file": wav, "seconds": len(samples) / 16000, "wallMs": runs, "text": text})

    version = importlib.metadata.version("pywhispercpp")
    p = model._params
    print(json.dumps({
        "peer": f"pywhispercpp {version} (PyPI wheel, Python {sys.version.split()[0]})",
        "version": version,
        "threads": p.n_threads,
        "flashAttn": bool(a.flash_attn),
        "strategy": "greedy",
        "bestOf": p.greedy["best_of"] if isinstance(p.greedy, dict) else None,
        "temperatureInc": p.temperature_inc,
        "loadMs": load_ms,
        "systemInfo": Model.system_info(),
        "clips": clips,
    }))


if __name__ == "__main__":
    main()
