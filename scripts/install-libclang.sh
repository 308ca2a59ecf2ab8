#!/usr/bin/env bash
# Installs the libclang that codegen/ reads the headers with (Debian's
# libclang1-14). Elsewhere, point WSP_GGML_LIBCLANG at any libclang shared
# library, e.g. from PyPI's `libclang` wheel (clang/native/libclang.so).
set -euo pipefail
if ls /usr/lib/*-linux-gnu/libclang-14.so.1 >/dev/null 2>&1; then exit 0; fi
if command -v apt-get >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq libclang1-14
else
  echo "install-libclang: no apt-get here; run 'python3 -m pip install libclang' and set WSP_GGML_LIBCLANG" >&2
  exit 1
fi
