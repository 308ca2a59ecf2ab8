/**
 * Just enough of ELF, Mach-O and PE to tell what a built library is: its format, machine,
 * kind (shared library or executable) and, for PE, its export table. Read from the bytes,
 * so the check does not depend on which binutils the machine has.
 *
 * @module
 */
import { readFileSync } from "node:fs";

/** What a binary file is. */
export interface BinaryInfo {
  /** Container format. */
  readonly format: "elf" | "macho" | "pe";
  /** CPU architecture, in zig's spelling. */
  readonly machine: "x86_64" | "aarch64" | "other";
  /** Whether the file is a shared library (ET_DYN / MH_DYLIB or MH_BUNDLE / a DLL). */
  readonly sharedLibrary: boolean;
  /** PE only: the names the DLL exports. */
  readonly exports?: readonly string[];
}

/** Reads the headers of the binary at `path`; throws on an unknown format. */
export function readBinary(path: string): BinaryInfo {
  const buf = readFileSync(path);
  const dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  if (dv.getUint32(0) === 0x7f454c46) return readElf(dv);
  if (dv.getUint32(0, true) === 0xfeedfacf) return readMachO(dv);
  if (dv.getUint16(0, true) === 0x5a4d) return readPe(dv, buf);
  throw new Error(`${path}: not an ELF, 64-bit Mach-O or PE file`);
}

function readElf(dv: DataView): BinaryInfo {
  if (dv.getUint8(4) !== 2 || dv.getUint8(5) !== 1) throw new Error("ELF: not 64-bit little-endian");
  const type = dv.getUint16(16, true);
  const machine = dv.getUint16(18, true);
  return {
    format: "elf",
    machine: machine === 62 ? "x86_64" : machine === 183 ? "aarch64" : "other",
    // An executable built as PIE is ET_DYN too; libraries have no PT_INTERP, which the tests check separately.
    sharedLibrary: type === 3,
  };
}

function readMachO(dv: DataView): BinaryInfo {
  const cpu = dv.getUint32(4, true);
  const fileType = dv.getUint32(12, true);
  return {
    format: "macho",
    machine: cpu === 0x01000007 ? "x86_64" : cpu === 0x0100000c ? "aarch64" : "other",
    sharedLibrary: fileType === 6 || fileType === 8,
  };
}

function readPe(dv: DataView, buf: Uint8Array): BinaryInfo {
  const pe = dv.getUint32(0x3c, true);
  if (dv.getUint32(pe) !== 0x50450000) throw new Error("PE: bad signature");
  const coff = pe + 4;
  const machine = dv.getUint16(coff, true);
  const nSections = dv.getUint16(coff + 2, true);
  const optSize = dv.getUint16(coff + 16, true);
  const characteristics = dv.getUint16(coff + 18, true);
  const opt = coff + 20;
  if (dv.getUint16(opt, true) !== 0x20b) throw new Error("PE: not PE32+");
  const sections: { va: number; size: number; raw: number }[] = [];
  for (let i = 0, s = opt + optSize; i < nSections; i++, s += 40) {
    sections.push({ va: dv.getUint32(s + 12, true), size: Math.max(dv.getUint32(s + 8, true), dv.getUint32(s + 16, true)), raw: dv.getUint32(s + 20, true) });
  }
  const offsetOf = (rva: number): number => {
    const s = sections.find((x) => rva >= x.va && rva < x.va + x.size);
    if (!s) throw new Error(`PE: RVA 0x${rva.toString(16)} is in no section`);
    return rva - s.va + s.raw;
  };
  const exports: string[] = [];
  const exportRva = dv.getUint32(opt + 112, true);
  if (exportRva !== 0) {
    const dir = offsetOf(exportRva);
    const nNames = dv.getUint32(dir + 24, true);
    const names = offsetOf(dv.getUint32(dir + 32, true));
    for (let i = 0; i < nNames; i++) {
      let p = offsetOf(dv.getUint32(names + 4 * i, true));
      let name = "";
      while (buf[p] !== 0) name += String.fromCharCode(buf[p++]);
      exports.push(name);
    }
  }
  return {
    format: "pe",
    machine: machine === 0x8664 ? "x86_64" : machine === 0xaa64 ? "aarch64" : "other",
    sharedLibrary: (characteristics & 0x2000) !== 0,
    exports,
  };
}
