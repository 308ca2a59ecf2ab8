/**
 * Lists the functions a 64-bit little-endian ELF shared library exports (its
 * defined global/weak `.dynsym` functions), to check the table against the
 * built library without loading it.
 *
 * @module
 */
import { readFileSync } from "node:fs";

/** The names of the functions exported by the ELF shared library at `path`. */
export function elfExports(path: string): Set<string> {
  const buf = readFileSync(path);
  const d = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  if (d.getUint32(0) !== 0x7f454c46) throw new Error(`${path} is not an ELF file`);
  if (d.getUint8(4) !== 2 || d.getUint8(5) !== 1) throw new Error(`${path}: only 64-bit little-endian ELF is supported`);
  const shoff = Number(d.getBigUint64(0x28, true));
  const shentsize = d.getUint16(0x3a, true);
  const shnum = d.getUint16(0x3c, true);
  const section = (i: number) => {
    const at = shoff + i * shentsize;
    return {
      type: d.getUint32(at + 4, true),
      offset: Number(d.getBigUint64(at + 0x18, true)),
      size: Number(d.getBigUint64(at + 0x20, true)),
      link: d.getUint32(at + 0x28, true),
      entsize: Number(d.getBigUint64(at + 0x38, true)),
    };
  };
  const out = new Set<string>();
  for (let i = 0; i < shnum; i++) {
    const s = section(i);
    if (s.type !== 11) continue; // SHT_DYNSYM
    const strtab = section(s.link);
    for (let at = s.offset + s.entsize; at < s.offset + s.size; at += s.entsize) {
      const name = d.getUint32(at, true);
      const info = d.getUint8(at + 4);
      const shndx = d.getUint16(at + 6, true);
      const bind = info >> 4, type = info & 0xf;
      if (shndx === 0 || type !== 2 || (bind !== 1 && bind !== 2)) continue; // defined STT_FUNC, GLOBAL/WEAK
      let end = strtab.offset + name;
      while (buf[end] !== 0) end++;
      out.add(buf.toString("latin1", strtab.offset + name, end));
    }
  }
  return out;
}
