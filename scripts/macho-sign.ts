// Ad hoc code signing of the macOS binaries, in TypeScript, on any system (docs/distribution.md,
// "The macOS binaries' signature").
//
// Why: Bun 1.4.5, cross-compiling for bun-darwin-x64(-baseline), leaves the runtime's own
// signature in the file (identifier "bun", hardened runtime, Bun's certificate): docket's bundle
// now sits where the runtime's bytes were, so page hashes fail (or its code limit stops short of
// the bundle) and `codesign -v` calls the file invalid; a Mac that enforces signatures kills it.
// The release signs both darwin binaries again here, as the linker would, and checks the result.
//
// The format, briefly (Apple's xnu osfmk/kern/cs_blobs.h names; every field of the signature is
// big-endian, the Mach-O around it little-endian):
// - The Mach-O's LC_CODE_SIGNATURE (cmd 0x1d) gives the file offset and size of the signature,
//   the last thing in the __LINKEDIT segment and in the file.
// - The signature is a SuperBlob (magic 0xfade0cc0, length, count, then {type, offset} per blob).
//   An ad hoc signature needs one blob, the CodeDirectory (type 0, magic 0xfade0c02).
// - The CodeDirectory names the code's extent (codeLimit: every file byte before the signature),
//   the hash (SHA-256, 32 bytes), the page size (2^12), the identifier (a C string), the
//   executable segment (__TEXT's file range; flag 0x1 for a main executable), and then one hash
//   per 4096-byte page of [0, codeLimit), the last page hashed as far as it goes, not padded.
//   "Special slots" (hashes of other blobs: requirements, entitlements) come before slot 0.
// - Ad hoc means no certificate: the CodeDirectory's own hash (its cdhash) is the identity.
//
// We write what ld64 (Apple's linker), lld, Go's linker and Bun itself for darwin-arm64 write:
// flags 0x20002 (adhoc | linker-signed), CodeDirectory version 0x20400, no special slots, no
// requirements or entitlements blobs. That layout is the one every Mac runs out of the box for
// every freshly linked arm64 program, and `codesign --sign` replaces a linker signature without
// asking for --force. No hardened runtime flag: JavaScriptCore's JIT needs no entitlement then.

import { createHash } from "node:crypto";
import { chmodSync, closeSync, fsyncSync, openSync, readFileSync, renameSync, rmSync, statSync, writeSync } from "node:fs";
import { basename, dirname, join } from "node:path";

const MH_MAGIC_64 = 0xfeedfacf;
const MH_EXECUTE = 2;
const CPU_TYPE_X86_64 = 0x01000007;
const CPU_TYPE_ARM64 = 0x0100000c;
const LC_SEGMENT_64 = 0x19;
const LC_SYMTAB = 0x2;
const LC_DYSYMTAB = 0xb;
const LC_CODE_SIGNATURE = 0x1d;
const LC_DYLD_INFO = 0x22;
const LC_DYLD_INFO_ONLY = 0x80000022;
/** Load commands that are a linkedit_data_command {cmd, cmdsize, dataoff, datasize}. */
const LINKEDIT_DATA_COMMANDS = new Set([0x1d, 0x1e, 0x26, 0x29, 0x2b, 0x2e, 0x36, 0x80000033, 0x80000034]);

const CSMAGIC_EMBEDDED_SIGNATURE = 0xfade0cc0;
const CSMAGIC_CODEDIRECTORY = 0xfade0c02;
const CSSLOT_CODEDIRECTORY = 0;
const CS_ADHOC = 0x2;
const CS_LINKER_SIGNED = 0x20000;
const CS_HASHTYPE_SHA256 = 2;
const CS_EXECSEG_MAIN_BINARY = 0x1;
/** The CodeDirectory version with the executable-segment fields (execSegBase/Limit/Flags). */
const CD_VERSION = 0x20400;
/** Bytes of a version-0x20400 CodeDirectory before its identifier. */
const CD_HEADER = 88;
const SUPERBLOB_HEADER = 12;
const BLOB_INDEX = 8;
const HASH_SIZE = 32;
const PAGE_SHIFT = 12;
const PAGE = 1 << PAGE_SHIFT;

/** A file that is not a Mach-O this module can sign, or one laid out in a way it will not touch. */
export class MachOError extends Error {
  override name = "MachOError";
}

interface Segment {
  name: string;
  /** Offset of its LC_SEGMENT_64 command in the file. */
  command: number;
  vmaddr: number;
  vmsize: number;
  fileoff: number;
  filesize: number;
}

interface MachO {
  cputype: number;
  filetype: number;
  segments: Segment[];
  text: Segment;
  linkedit: Segment;
  /** Offset of the LC_CODE_SIGNATURE command in the file. */
  sigCommand: number;
  dataoff: number;
  datasize: number;
  /** Ends of the other data in __LINKEDIT (symbols, strings, fixups, …), by what they are. */
  linkeditData: Array<{ what: string; end: number }>;
}

/**
 * Signs the thin 64-bit Mach-O at `path` (x86_64 or arm64) ad hoc, in place, with `identifier`:
 * every byte before the signature hashed, page by page. The file is written beside and renamed
 * over (a new inode, as ld64 and codesign do: macOS caches a signature by vnode), so a crash
 * leaves the old file or the new one. Throws a MachOError, the file untouched, for anything else.
 */
export function adhocSign(path: string, identifier: string): void {
  if (identifier === "" || !/^[\x21-\x7e]+$/.test(identifier)) throw new Error(`adhocSign: the identifier must be printable ASCII with no spaces, not ${JSON.stringify(identifier)}`);
  const input = readFileSync(path);
  const macho = parseMachO(input, path);
  const layout = layoutProblem(macho, input.length);
  if (layout !== null) throw new MachOError(`${path}: ${layout}; not signed`);

  const codeLimit = macho.dataoff;
  const pages = Math.ceil(codeLimit / PAGE);
  const id = Buffer.from(`${identifier}\0`, "latin1");
  const cdLength = CD_HEADER + id.length + pages * HASH_SIZE;
  const sigLength = SUPERBLOB_HEADER + BLOB_INDEX + cdLength;
  // ld64 aligns the signature to 16 bytes. A larger old signature keeps its room (zeros after
  // the new one, as codesign leaves them), so __LINKEDIT changes only when the signature grows.
  const datasize = Math.max(macho.datasize, align(sigLength, 16));
  const output = Buffer.allocUnsafe(codeLimit + datasize);
  input.copy(output, 0, 0, codeLimit);
  output.fill(0, codeLimit);

  if (datasize !== macho.datasize) {
    const { linkedit } = macho;
    const filesize = codeLimit + datasize - linkedit.fileoff;
    const segmentAlign = macho.cputype === CPU_TYPE_ARM64 ? 0x4000 : 0x1000;
    const vmsize = Math.max(linkedit.vmsize, align(filesize, segmentAlign));
    const after = macho.segments.find((s) => s !== linkedit && s.vmsize > 0 && s.vmaddr >= linkedit.vmaddr && s.vmaddr < linkedit.vmaddr + vmsize);
    if (after !== undefined) throw new MachOError(`${path}: __LINKEDIT cannot grow by ${datasize - macho.datasize} bytes for the signature: segment ${after.name} follows it in memory; not signed`);
    output.writeUInt32LE(datasize, macho.sigCommand + 12);
    output.writeBigUInt64LE(BigInt(vmsize), linkedit.command + 32);
    output.writeBigUInt64LE(BigInt(filesize), linkedit.command + 48);
  }

  // The load commands are patched: now the pages (page 0 holds them) can be hashed.
  const sig = output.subarray(codeLimit);
  sig.writeUInt32BE(CSMAGIC_EMBEDDED_SIGNATURE, 0);
  sig.writeUInt32BE(sigLength, 4);
  sig.writeUInt32BE(1, 8);
  sig.writeUInt32BE(CSSLOT_CODEDIRECTORY, 12);
  sig.writeUInt32BE(SUPERBLOB_HEADER + BLOB_INDEX, 16);
  const cd = sig.subarray(SUPERBLOB_HEADER + BLOB_INDEX, sigLength);
  const hashOffset = CD_HEADER + id.length;
  cd.writeUInt32BE(CSMAGIC_CODEDIRECTORY, 0);
  cd.writeUInt32BE(cdLength, 4);
  cd.writeUInt32BE(CD_VERSION, 8);
  cd.writeUInt32BE(CS_ADHOC | CS_LINKER_SIGNED, 12);
  cd.writeUInt32BE(hashOffset, 16);
  cd.writeUInt32BE(CD_HEADER, 20); // identOffset
  cd.writeUInt32BE(0, 24); // nSpecialSlots
  cd.writeUInt32BE(pages, 28); // nCodeSlots
  cd.writeUInt32BE(codeLimit, 32);
  cd.writeUInt8(HASH_SIZE, 36);
  cd.writeUInt8(CS_HASHTYPE_SHA256, 37);
  cd.writeUInt8(0, 38); // platform
  cd.writeUInt8(PAGE_SHIFT, 39);
  // 40 spare2, 44 scatterOffset, 48 teamOffset, 52 spare3, 56 codeLimit64: all zero.
  cd.writeBigUInt64BE(BigInt(macho.text.fileoff), 64); // execSegBase
  cd.writeBigUInt64BE(BigInt(macho.text.filesize), 72); // execSegLimit
  cd.writeBigUInt64BE(BigInt(macho.filetype === MH_EXECUTE ? CS_EXECSEG_MAIN_BINARY : 0), 80);
  id.copy(cd, CD_HEADER);
  for (let page = 0; page < pages; page++) {
    pageHash(output, page, codeLimit).copy(cd, hashOffset + page * HASH_SIZE);
  }

  const temp = join(dirname(path), `.${basename(path)}.signing-${process.pid}`);
  try {
    const fd = openSync(temp, "w", 0o600);
    try {
      writeSync(fd, output);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    chmodSync(temp, statSync(path).mode & 0o7777);
    renameSync(temp, path);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
}

/** What verifyAdhocSignature found. `ok` only when every check passed; `problem` says why not. */
export interface SignatureCheck {
  ok: boolean;
  identifier: string;
  /** The CodeDirectory's flags (0x20002: adhoc | linker-signed). */
  flags: number;
  /** Code pages the CodeDirectory hashes (nCodeSlots). */
  pages: number;
  /** Of those, pages whose bytes no longer match their hash. */
  badPages: number;
  codeLimit: number;
  /** File offset of the signature (LC_CODE_SIGNATURE's dataoff). */
  sigOffset: number;
  problem?: string;
}

/**
 * Reads the Mach-O at `path` back and checks its ad hoc signature as macOS would see it: the
 * signature is the end of __LINKEDIT and of the file (zeros after the SuperBlob only), its
 * CodeDirectory covers every byte before it (codeLimit == signature offset), each page hash and
 * each special slot hash matches, the executable segment is __TEXT's. Throws only when the file
 * cannot be read; a file that is not a Mach-O is `ok: false` with the reason.
 */
export function verifyAdhocSignature(path: string): SignatureCheck {
  const bytes = readFileSync(path);
  const check: SignatureCheck = { ok: false, identifier: "", flags: 0, pages: 0, badPages: 0, codeLimit: 0, sigOffset: 0 };
  const problems: string[] = [];
  const done = (): SignatureCheck => {
    if (problems.length > 0) check.problem = problems.join("; ");
    check.ok = problems.length === 0;
    return check;
  };
  let macho: MachO;
  try {
    macho = parseMachO(bytes, path);
  } catch (error) {
    if (!(error instanceof MachOError)) throw error;
    problems.push(error.message);
    return done();
  }
  check.sigOffset = macho.dataoff;
  const layout = layoutProblem(macho, bytes.length);
  if (layout !== null) problems.push(layout);
  const end = Math.min(macho.dataoff + macho.datasize, bytes.length);
  if (macho.dataoff + SUPERBLOB_HEADER > end) {
    problems.push(`the signature at ${macho.dataoff} is past the end of the file (${bytes.length} bytes)`);
    return done();
  }
  const sig = bytes.subarray(macho.dataoff, end);
  if (sig.readUInt32BE(0) !== CSMAGIC_EMBEDDED_SIGNATURE) {
    problems.push(`no embedded signature (SuperBlob magic 0x${hex(sig.readUInt32BE(0))}, not 0xfade0cc0)`);
    return done();
  }
  const sbLength = sig.readUInt32BE(4);
  const count = sig.readUInt32BE(8);
  if (sbLength > sig.length || SUPERBLOB_HEADER + count * BLOB_INDEX > sbLength) {
    problems.push(`the SuperBlob's length ${sbLength} or count ${count} exceeds LC_CODE_SIGNATURE's ${sig.length} bytes`);
    return done();
  }
  if (sig.subarray(sbLength).some((b) => b !== 0)) problems.push("bytes other than zero padding follow the signature");
  const blobs = new Map<number, Buffer>();
  for (let i = 0; i < count; i++) {
    const type = sig.readUInt32BE(SUPERBLOB_HEADER + i * BLOB_INDEX);
    const offset = sig.readUInt32BE(SUPERBLOB_HEADER + i * BLOB_INDEX + 4);
    const length = offset + 8 <= sbLength ? sig.readUInt32BE(offset + 4) : 0;
    if (offset + 8 > sbLength || length < 8 || offset + length > sbLength) {
      problems.push(`blob ${i} (type 0x${hex(type)}) lies outside the SuperBlob`);
      return done();
    }
    blobs.set(type, sig.subarray(offset, offset + length));
  }
  const cd = blobs.get(CSSLOT_CODEDIRECTORY);
  if (cd === undefined || cd.readUInt32BE(0) !== CSMAGIC_CODEDIRECTORY) {
    problems.push("the SuperBlob holds no CodeDirectory");
    return done();
  }
  if (cd.length < CD_HEADER) {
    problems.push(`the CodeDirectory is ${cd.length} bytes, shorter than a version 0x20400 header`);
    return done();
  }
  const version = cd.readUInt32BE(8);
  check.flags = cd.readUInt32BE(12);
  const hashOffset = cd.readUInt32BE(16);
  const identOffset = cd.readUInt32BE(20);
  const nSpecial = cd.readUInt32BE(24);
  check.pages = cd.readUInt32BE(28);
  check.codeLimit = cd.readUInt32BE(32);
  const hashSize = cd.readUInt8(36);
  const hashType = cd.readUInt8(37);
  const pageShift = cd.readUInt8(39);
  const identEnd = cd.indexOf(0, identOffset);
  check.identifier = identOffset < cd.length && identEnd >= 0 ? cd.toString("latin1", identOffset, identEnd) : "";
  if (hashType !== CS_HASHTYPE_SHA256 || hashSize !== HASH_SIZE || pageShift !== PAGE_SHIFT) {
    problems.push(`hash type ${hashType}, size ${hashSize}, page 2^${pageShift}: only SHA-256 over 4096-byte pages is checked here`);
    return done();
  }
  if (hashOffset < nSpecial * HASH_SIZE || hashOffset + check.pages * HASH_SIZE > cd.length) {
    problems.push("the CodeDirectory's hash slots lie outside it");
    return done();
  }
  if ((check.flags & CS_ADHOC) === 0) problems.push(`flags 0x${hex(check.flags)}: not an ad hoc signature (a certificate's signature is codesign's to check)`);
  if (check.codeLimit !== macho.dataoff) problems.push(`codeLimit ${check.codeLimit} is not the signature's offset ${macho.dataoff}: bytes [${Math.min(check.codeLimit, macho.dataoff)}, ${Math.max(check.codeLimit, macho.dataoff)}) are not covered`);
  if (check.pages !== Math.ceil(check.codeLimit / PAGE)) problems.push(`${check.pages} page hashes for a code limit of ${check.codeLimit} bytes (${Math.ceil(check.codeLimit / PAGE)} pages)`);
  if (version >= CD_VERSION) {
    const base = Number(cd.readBigUInt64BE(64));
    const limit = Number(cd.readBigUInt64BE(72));
    const flags = Number(cd.readBigUInt64BE(80));
    if (base !== macho.text.fileoff || limit !== macho.text.filesize) problems.push(`execSeg [${base}, +${limit}) is not __TEXT's [${macho.text.fileoff}, +${macho.text.filesize})`);
    if (macho.filetype === MH_EXECUTE && (flags & CS_EXECSEG_MAIN_BINARY) === 0) problems.push("execSegFlags lack CS_EXECSEG_MAIN_BINARY for an executable");
  }
  for (let page = 0; page < check.pages; page++) {
    const at = hashOffset + page * HASH_SIZE;
    if (page * PAGE >= Math.min(check.codeLimit, bytes.length) || !pageHash(bytes, page, Math.min(check.codeLimit, bytes.length)).equals(cd.subarray(at, at + HASH_SIZE))) check.badPages++;
  }
  if (check.badPages > 0) problems.push(`${check.badPages} of ${check.pages} page hashes do not match the file`);
  // Special slot -n holds the hash of the blob of type n (2 requirements, 5 entitlements, …);
  // a slot with no blob in the file must be zero (-1 and -3 name an app bundle's files).
  for (let slot = 1; slot <= nSpecial; slot++) {
    const at = hashOffset - slot * HASH_SIZE;
    const blob = blobs.get(slot);
    const expected = blob === undefined ? Buffer.alloc(HASH_SIZE) : createHash("sha256").update(blob).digest();
    if (!expected.equals(cd.subarray(at, at + HASH_SIZE))) problems.push(`special slot -${slot} does not match ${blob === undefined ? "(no such blob in the signature)" : `its blob (magic 0x${hex(blob.readUInt32BE(0))})`}`);
  }
  for (const type of blobs.keys()) {
    if (type !== CSSLOT_CODEDIRECTORY && type < 0x1000 && type > nSpecial) problems.push(`blob type ${type} is not bound by a special slot`);
  }
  return done();
}

/** SHA-256 of page `page` of `bytes[0, limit)`: 4096 bytes, the last one as many as are left. */
function pageHash(bytes: Buffer, page: number, limit: number): Buffer {
  return createHash("sha256")
    .update(bytes.subarray(page * PAGE, Math.min((page + 1) * PAGE, limit)))
    .digest();
}

/** The header, segments and linkedit data of a thin 64-bit little-endian Mach-O; a MachOError for anything else. */
function parseMachO(bytes: Buffer, path: string): MachO {
  if (bytes.length < 32) throw new MachOError(`${path}: not a Mach-O file (${bytes.length} bytes)`);
  const magic = bytes.readUInt32LE(0);
  if (magic !== MH_MAGIC_64) {
    const what =
      magic === 0x464c457f ? "an ELF file" : magic === 0xbebafeca ? "a universal (fat) Mach-O; sign each architecture's file" : magic === 0xfeedface ? "a 32-bit Mach-O" : magic === 0xcffaedfe ? "a big-endian Mach-O" : (magic & 0xffff) === 0x5a4d ? "a PE (Windows) file" : `magic 0x${hex(magic)}`;
    throw new MachOError(`${path}: not a thin 64-bit little-endian Mach-O (${what})`);
  }
  const cputype = bytes.readUInt32LE(4);
  if (cputype !== CPU_TYPE_X86_64 && cputype !== CPU_TYPE_ARM64) throw new MachOError(`${path}: CPU type 0x${hex(cputype)} is neither x86_64 nor arm64`);
  const filetype = bytes.readUInt32LE(12);
  const ncmds = bytes.readUInt32LE(16);
  const sizeofcmds = bytes.readUInt32LE(20);
  if (32 + sizeofcmds > bytes.length) throw new MachOError(`${path}: truncated: its load commands (${sizeofcmds} bytes) run past the end of the file (${bytes.length} bytes)`);
  const segments: Segment[] = [];
  const linkeditData: MachO["linkeditData"] = [];
  let sigCommand = -1;
  let offset = 32;
  const u32 = (at: number) => bytes.readUInt32LE(at);
  const u64 = (at: number) => {
    const value = Number(bytes.readBigUInt64LE(at));
    if (!Number.isSafeInteger(value)) throw new MachOError(`${path}: a 64-bit field at ${at} is out of range`);
    return value;
  };
  const data = (what: string, off: number, size: number) => {
    if (size > 0) linkeditData.push({ what, end: off + size });
  };
  for (let i = 0; i < ncmds; i++) {
    if (offset + 8 > 32 + sizeofcmds) throw new MachOError(`${path}: load command ${i} runs past sizeofcmds`);
    const cmd = u32(offset);
    const cmdsize = u32(offset + 4);
    if (cmdsize < 8 || cmdsize % 8 !== 0 || offset + cmdsize > 32 + sizeofcmds) throw new MachOError(`${path}: load command ${i} (0x${hex(cmd)}) has a bad size ${cmdsize}`);
    if (cmd === LC_SEGMENT_64 && cmdsize >= 72) {
      segments.push({ name: bytes.toString("latin1", offset + 8, offset + 24).replace(/\0.*$/s, ""), command: offset, vmaddr: u64(offset + 24), vmsize: u64(offset + 32), fileoff: u64(offset + 40), filesize: u64(offset + 48) });
    } else if (LINKEDIT_DATA_COMMANDS.has(cmd) && cmdsize >= 16) {
      if (cmd === LC_CODE_SIGNATURE) {
        if (sigCommand >= 0) throw new MachOError(`${path}: two LC_CODE_SIGNATURE commands`);
        sigCommand = offset;
      } else data(`load command 0x${hex(cmd)}'s data`, u32(offset + 8), u32(offset + 12));
    } else if (cmd === LC_SYMTAB && cmdsize >= 24) {
      data("the symbol table", u32(offset + 8), u32(offset + 12) * 16);
      data("the string table", u32(offset + 16), u32(offset + 20));
    } else if (cmd === LC_DYSYMTAB && cmdsize >= 80) {
      const tables: Array<[string, number, number]> = [["the table of contents", 32, 8], ["the module table", 40, 56], ["the external references", 48, 4], ["the indirect symbols", 56, 4], ["the external relocations", 64, 8], ["the local relocations", 72, 8]];
      for (const [what, at, entry] of tables) data(what, u32(offset + at), u32(offset + at + 4) * entry);
    } else if ((cmd === LC_DYLD_INFO || cmd === LC_DYLD_INFO_ONLY) && cmdsize >= 48) {
      for (let at = 8; at < 48; at += 8) data("dyld info", u32(offset + at), u32(offset + at + 4));
    }
    offset += cmdsize;
  }
  const text = segments.find((s) => s.name === "__TEXT");
  const linkedit = segments.find((s) => s.name === "__LINKEDIT");
  if (sigCommand < 0) throw new MachOError(`${path}: no LC_CODE_SIGNATURE load command (adding one is not supported)`);
  if (text === undefined || linkedit === undefined) throw new MachOError(`${path}: no ${text === undefined ? "__TEXT" : "__LINKEDIT"} segment`);
  return { cputype, filetype, segments, text, linkedit, sigCommand, dataoff: u32(sigCommand + 8), datasize: u32(sigCommand + 12), linkeditData };
}

/** Why the signature is not the last thing in __LINKEDIT and in the file, or null when it is. */
function layoutProblem(macho: MachO, fileLength: number): string | null {
  const { dataoff, datasize, linkedit } = macho;
  const end = dataoff + datasize;
  if (end > fileLength) return `truncated: the code signature [${dataoff}, ${end}) runs past the end of the file (${fileLength} bytes)`;
  if (end < fileLength) return `${fileLength - end} bytes follow the code signature (which ends at ${end})`;
  if (dataoff < linkedit.fileoff || end !== linkedit.fileoff + linkedit.filesize) return `the code signature [${dataoff}, ${end}) is not the end of __LINKEDIT [${linkedit.fileoff}, ${linkedit.fileoff + linkedit.filesize})`;
  if (linkedit.vmsize < linkedit.filesize) return `__LINKEDIT's vmsize ${linkedit.vmsize} is smaller than its filesize ${linkedit.filesize}`;
  const past = macho.linkeditData.find((d) => d.end > dataoff);
  if (past !== undefined) return `${past.what} ends at ${past.end}, inside the code signature at ${dataoff}`;
  const segment = macho.segments.find((s) => s !== linkedit && s.filesize > 0 && s.fileoff + s.filesize > linkedit.fileoff);
  if (segment !== undefined) return `segment ${segment.name} lies in the file after __LINKEDIT's start`;
  return null;
}

function align(value: number, to: number): number {
  return Math.ceil(value / to) * to;
}

function hex(value: number): string {
  return (value >>> 0).toString(16);
}
