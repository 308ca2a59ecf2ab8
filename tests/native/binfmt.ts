/**
 * Just enough of ELF, Mach-O and PE to tell what a built library is: its format, machine,
 * kind (shared library or executable) and, for PE, its export and import tables. Read from the bytes,
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
  /** PE only: the DLLs it imports from (as the import directory spells them), each with the names it imports. */
  readonly imports?: ReadonlyMap<string, readonly string[]>;
  /** Mach-O only: the symbol table's defined symbols, by name, with section number and value. */
  readonly symbols?: ReadonlyMap<string, { readonly section: number; readonly value: bigint }>;
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
  const nCmds = dv.getUint32(16, true);
  const symbols = new Map<string, { section: number; value: bigint }>();
  // Load commands follow the 32-byte header; LC_SYMTAB (2) points at nlist_64 entries and strings.
  for (let i = 0, at = 32; i < nCmds; i++, at += dv.getUint32(at + 4, true)) {
    if (dv.getUint32(at, true) !== 2) continue;
    const [symOff, nSyms, strOff] = [dv.getUint32(at + 8, true), dv.getUint32(at + 12, true), dv.getUint32(at + 16, true)];
    for (let k = 0; k < nSyms; k++) {
      const e = symOff + 16 * k;
      const type = dv.getUint8(e + 4);
      if ((type & 0x0e) !== 0x0e) continue; // N_SECT: defined in a section
      let end = strOff + dv.getUint32(e, true);
      const start = end;
      while (dv.getUint8(end) !== 0) end++;
      const name = new TextDecoder().decode(new Uint8Array(dv.buffer, dv.byteOffset + start, end - start));
      symbols.set(name, { section: dv.getUint8(e + 5), value: dv.getBigUint64(e + 8, true) });
    }
  }
  return {
    format: "macho",
    machine: cpu === 0x01000007 ? "x86_64" : cpu === 0x0100000c ? "aarch64" : "other",
    sharedLibrary: fileType === 6 || fileType === 8,
    symbols,
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
  const cString = (at: number): string => {
    let name = "";
    while (buf[at] !== 0) name += String.fromCharCode(buf[at++]);
    return name;
  };
  // The import directory (data directory 1): 20-byte descriptors up to an all-zero one; each names
  // a DLL and points at its lookup table of 8-byte entries (bit 63: by ordinal; else the RVA of a
  // hint/name entry, whose name starts after the 2-byte hint).
  const imports = new Map<string, string[]>();
  const importRva = dv.getUint32(opt + 120, true);
  if (importRva !== 0) {
    for (let d = offsetOf(importRva); dv.getUint32(d + 12, true) !== 0; d += 20) {
      const names: string[] = [];
      const lookupRva = dv.getUint32(d, true) || dv.getUint32(d + 16, true);
      for (let e = offsetOf(lookupRva); ; e += 8) {
        const entry = dv.getBigUint64(e, true);
        if (entry === 0n) break;
        names.push(entry >> 63n ? `#${entry & 0xffffn}` : cString(offsetOf(Number(entry & 0x7fffffffn)) + 2));
      }
      imports.set(cString(offsetOf(dv.getUint32(d + 12, true))), names);
    }
  }
  return {
    format: "pe",
    machine: machine === 0x8664 ? "x86_64" : machine === 0xaa64 ? "aarch64" : "other",
    sharedLibrary: (characteristics & 0x2000) !== 0,
    exports,
    imports,
  };
}
