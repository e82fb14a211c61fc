// scripts/macho-sign.ts: the ad hoc signature the release gives the macOS binaries (Bun 1.4.5
// leaves a stale one in darwin-x64 when cross-compiling; docs/distribution.md). Checked on small
// Mach-O files built here, byte by byte, and on a one-line program compiled for both darwin
// targets when Bun's runtimes for them can be had (its cache, or the npm registry).
import { afterAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { adhocSign, verifyAdhocSignature } from "../../scripts/macho-sign.ts";

const WORK = mkdtempSync(join(tmpdir(), "docket-macho-sign-"));
afterAll(() => rmSync(WORK, { recursive: true, force: true }));
const SLOW = 120_000;
let files = 0;

/** A fresh path in the test's folder holding `bytes`. */
function fileOf(bytes: Uint8Array, name = "bin"): string {
  const path = join(WORK, `${name}-${++files}`);
  writeFileSync(path, bytes, { mode: 0o755 });
  return path;
}

/** A copy of `path` with the byte at `at` changed. */
function flipped(path: string, at: number): string {
  const bytes = readFileSync(path);
  bytes[at]! ^= 0xff;
  return fileOf(bytes, "flipped");
}

/** The segments and the LC_CODE_SIGNATURE of a Mach-O, read here without scripts/macho-sign.ts. */
function loadCommands(bytes: Buffer) {
  let offset = 32;
  const segments: Record<string, { command: number; vmsize: number; fileoff: number; filesize: number }> = {};
  let sigCommand = 0;
  for (let i = 0; i < bytes.readUInt32LE(16); i++) {
    const cmd = bytes.readUInt32LE(offset);
    if (cmd === 0x19) {
      const name = bytes.toString("latin1", offset + 8, offset + 24).replace(/\0.*$/s, "");
      segments[name] = { command: offset, vmsize: Number(bytes.readBigUInt64LE(offset + 32)), fileoff: Number(bytes.readBigUInt64LE(offset + 40)), filesize: Number(bytes.readBigUInt64LE(offset + 48)) };
    }
    if (cmd === 0x1d) sigCommand = offset;
    offset += bytes.readUInt32LE(offset + 4);
  }
  return { segments, sigCommand, dataoff: bytes.readUInt32LE(sigCommand + 8), datasize: bytes.readUInt32LE(sigCommand + 12) };
}

/** The fields of a Mach-O and of its signature's CodeDirectory. */
function readSigned(bytes: Buffer) {
  const { segments, sigCommand, dataoff, datasize } = loadCommands(bytes);
  const sb = bytes.subarray(dataoff, dataoff + datasize);
  const cd = sb.subarray(sb.readUInt32BE(16));
  const hashOffset = cd.readUInt32BE(16);
  return {
    segments,
    sigCommand,
    dataoff,
    datasize,
    superBlob: { magic: sb.readUInt32BE(0), length: sb.readUInt32BE(4), count: sb.readUInt32BE(8), firstType: sb.readUInt32BE(12) },
    cd: {
      magic: cd.readUInt32BE(0),
      version: cd.readUInt32BE(8),
      flags: cd.readUInt32BE(12),
      nSpecialSlots: cd.readUInt32BE(24),
      nCodeSlots: cd.readUInt32BE(28),
      codeLimit: cd.readUInt32BE(32),
      hashSize: cd[36],
      hashType: cd[37],
      pageShift: cd[39],
      identifier: cd.toString("latin1", cd.readUInt32BE(20), cd.indexOf(0, cd.readUInt32BE(20))),
      execSegBase: Number(cd.readBigUInt64BE(64)),
      execSegLimit: Number(cd.readBigUInt64BE(72)),
      execSegFlags: Number(cd.readBigUInt64BE(80)),
    },
    hash: (page: number) => cd.subarray(hashOffset + page * 32, hashOffset + page * 32 + 32),
  };
}

/** Offsets where `a` and `b` differ in [0, end). */
function differences(a: Buffer, b: Buffer, end: number): number[] {
  const found: number[] = [];
  for (let i = 0; i < end; i++) if (a[i] !== b[i]) found.push(i);
  return found;
}

/** The bytes signing may change before the code limit: LC_CODE_SIGNATURE's datasize, __LINKEDIT's vmsize and filesize. */
function patchable(raw: Buffer): (offset: number) => boolean {
  const { sigCommand, segments } = loadCommands(raw);
  const linkedit = segments.__LINKEDIT!.command;
  return (at) => (at >= sigCommand + 12 && at < sigCommand + 16) || (at >= linkedit + 32 && at < linkedit + 40) || (at >= linkedit + 48 && at < linkedit + 56);
}

const X86_64 = 0x01000007;
const ARM64 = 0x0100000c;

/**
 * A small Mach-O executable as Bun leaves one: __TEXT (16 KiB of "code"), __LINKEDIT holding a
 * string table that nearly fills its memory size, and a stale 64-byte signature at the end, too
 * small for the real one, so signing has to grow __LINKEDIT past a page.
 */
function syntheticMachO(cputype: number): Buffer {
  const segmentAlign = cputype === ARM64 ? 0x4000 : 0x1000;
  const text = 0x4000;
  const strsize = segmentAlign - 0x100;
  const dataoff = text + strsize;
  const datasize = 0x40;
  const bytes = Buffer.alloc(dataoff + datasize);
  for (let i = 0; i < dataoff; i++) bytes[i] = (i * 2654435761) >>> 24;
  const sizeofcmds = 72 * 2 + 24 + 16;
  bytes.fill(0, 0, 32 + sizeofcmds);
  bytes.writeUInt32LE(0xfeedfacf, 0);
  bytes.writeUInt32LE(cputype, 4);
  bytes.writeUInt32LE(cputype === ARM64 ? 0 : 3, 8);
  bytes.writeUInt32LE(2, 12); // MH_EXECUTE
  bytes.writeUInt32LE(4, 16);
  bytes.writeUInt32LE(sizeofcmds, 20);
  bytes.writeUInt32LE(0x200085, 24);
  const segment = (at: number, name: string, vmaddr: number, vmsize: number, fileoff: number, filesize: number, prot: number) => {
    bytes.writeUInt32LE(0x19, at);
    bytes.writeUInt32LE(72, at + 4);
    bytes.write(name, at + 8, "latin1");
    bytes.writeBigUInt64LE(BigInt(vmaddr), at + 24);
    bytes.writeBigUInt64LE(BigInt(vmsize), at + 32);
    bytes.writeBigUInt64LE(BigInt(fileoff), at + 40);
    bytes.writeBigUInt64LE(BigInt(filesize), at + 48);
    bytes.writeUInt32LE(prot, at + 56);
    bytes.writeUInt32LE(prot, at + 60);
  };
  segment(32, "__TEXT", 0x100000000, text, 0, text, 5);
  segment(104, "__LINKEDIT", 0x100000000 + text, segmentAlign, text, strsize + datasize, 1);
  bytes.writeUInt32LE(0x2, 176); // LC_SYMTAB: no symbols, the string table
  bytes.writeUInt32LE(24, 180);
  bytes.writeUInt32LE(text, 184);
  bytes.writeUInt32LE(text, 192);
  bytes.writeUInt32LE(strsize, 196);
  bytes.writeUInt32LE(0x1d, 200); // LC_CODE_SIGNATURE
  bytes.writeUInt32LE(16, 204);
  bytes.writeUInt32LE(dataoff, 208);
  bytes.writeUInt32LE(datasize, 212);
  bytes.fill(0, dataoff);
  bytes.writeUInt32BE(0xfade0cc0, dataoff); // an empty SuperBlob: signed by nothing that is here now
  bytes.writeUInt32BE(12, dataoff + 4);
  return bytes;
}

describe("adhocSign on a Mach-O built here", () => {
  for (const [arch, cputype, segmentAlign] of [["x86_64", X86_64, 0x1000], ["arm64", ARM64, 0x4000]] as const) {
    test(`${arch}: the stale signature fails, the new one hashes every page before it (the last one cut short) and grows __LINKEDIT by whole ${segmentAlign / 1024} KiB pages`, () => {
      const raw = syntheticMachO(cputype);
      const path = fileOf(raw);
      expect(verifyAdhocSignature(path)).toMatchObject({ ok: false, problem: expect.stringContaining("no CodeDirectory") });

      adhocSign(path, "docket");
      const signed = readFileSync(path);
      const read = readSigned(signed);
      const codeLimit = 0x4000 + segmentAlign - 0x100;
      const pages = Math.ceil(codeLimit / 4096);
      expect(read.dataoff).toBe(codeLimit);
      expect(read.superBlob).toEqual({ magic: 0xfade0cc0, length: 20 + 88 + 7 + pages * 32, count: 1, firstType: 0 });
      expect(read.cd).toEqual({ magic: 0xfade0c02, version: 0x20400, flags: 0x20002, nSpecialSlots: 0, nCodeSlots: pages, codeLimit, hashSize: 32, hashType: 2, pageShift: 12, identifier: "docket", execSegBase: 0, execSegLimit: 0x4000, execSegFlags: 1 });
      expect(read.datasize).toBe(Math.ceil(read.superBlob.length / 16) * 16);
      expect(signed.length).toBe(read.dataoff + read.datasize);
      expect(read.segments.__LINKEDIT).toMatchObject({ fileoff: 0x4000, filesize: signed.length - 0x4000, vmsize: 2 * segmentAlign });
      for (let page = 0; page < pages; page++) {
        const bytes = signed.subarray(page * 4096, Math.min((page + 1) * 4096, codeLimit));
        expect(`page ${page}: ${read.hash(page).toString("hex")}`).toBe(`page ${page}: ${createHash("sha256").update(bytes).digest("hex")}`);
      }
      expect(codeLimit % 4096).not.toBe(0);
      expect(signed.subarray(read.dataoff + read.superBlob.length).every((b) => b === 0)).toBe(true);
      // Nothing of the program moved: only the three size fields of the load commands changed.
      const allowed = patchable(raw);
      expect(differences(raw, signed, codeLimit).filter((at) => !allowed(at))).toEqual([]);
      expect(verifyAdhocSignature(path)).toEqual({ ok: true, identifier: "docket", flags: 0x20002, pages, badPages: 0, codeLimit, sigOffset: codeLimit });

      adhocSign(path, "docket");
      expect(readFileSync(path).equals(signed)).toBe(true);
      expect(verifyAdhocSignature(flipped(path, 0x2345))).toMatchObject({ ok: false, badPages: 1 });
      expect(verifyAdhocSignature(flipped(path, codeLimit - 1))).toMatchObject({ ok: false, badPages: 1 });
      expect(verifyAdhocSignature(flipped(path, read.dataoff + 200))).toMatchObject({ ok: false, badPages: 1 });
      expect(verifyAdhocSignature(flipped(path, signed.length - 1))).toMatchObject({ ok: false, problem: expect.stringContaining("zero padding") });
      expect(readdirSync(WORK).filter((name) => name.includes(".signing-"))).toEqual([]);
    });
  }

  const refused: Array<[string, () => Buffer, RegExp]> = [
    ["an ELF file", () => Buffer.concat([Buffer.from("7f454c4602010100", "hex"), Buffer.alloc(4088, 7)]), /not a thin 64-bit little-endian Mach-O \(an ELF file\)/],
    ["a text file", () => Buffer.from("#!/bin/sh\necho this is not a Mach-O file at all, only a script\n"), /not a thin 64-bit little-endian Mach-O \(magic 0x/],
    ["a universal (fat) Mach-O", () => Buffer.concat([Buffer.from("cafebabe00000002", "hex"), Buffer.alloc(4088)]), /universal \(fat\) Mach-O/],
    ["a Mach-O cut short in its signature", () => syntheticMachO(X86_64).subarray(0, -16), /truncated: the code signature \[\d+, \d+\) runs past the end of the file/],
    ["a Mach-O cut short in its load commands", () => syntheticMachO(ARM64).subarray(0, 100), /truncated: its load commands/],
    ["a Mach-O with bytes after its signature", () => Buffer.concat([syntheticMachO(X86_64), Buffer.from("appended")]), /8 bytes follow the code signature/],
  ];
  for (const [what, make, message] of refused) {
    test(`${what} is refused with a clear error, the file left as it was`, () => {
      const bytes = make();
      const path = fileOf(bytes, "refused");
      expect(() => adhocSign(path, "docket")).toThrow(message);
      expect(readFileSync(path).equals(bytes)).toBe(true);
      expect(verifyAdhocSignature(path)).toMatchObject({ ok: false, problem: expect.stringMatching(message) });
      expect(readdirSync(WORK).filter((name) => name.includes(".signing-"))).toEqual([]);
    });
  }

  test("an identifier that a signature cannot carry is refused", () => {
    const path = fileOf(syntheticMachO(ARM64));
    expect(() => adhocSign(path, "")).toThrow(/identifier/);
    expect(() => adhocSign(path, "doc ket")).toThrow(/identifier/);
  });
});

/** A one-line program compiled for `target`, or why it could not be (no runtime for it offline). */
async function crossCompiled(target: "bun-darwin-x64-baseline" | "bun-darwin-arm64"): Promise<string | { reason: string }> {
  const entry = join(WORK, "hello.ts");
  writeFileSync(entry, 'console.log("hello from a cross-compiled program");\n');
  const outfile = join(WORK, `hello-${target}`);
  try {
    const result = await Bun.build({ entrypoints: [entry], compile: { target, outfile } });
    if (!result.success) return { reason: result.logs.map(String).join("; ") };
    return outfile;
  } catch (error) {
    const logs = (error as Partial<AggregateError>).errors ?? [];
    return { reason: [(error as Error).message, ...logs.map(String)].join(": ") };
  }
}

const REAL: Array<["darwin-x64" | "darwin-arm64", string | { reason: string }]> = [
  ["darwin-x64", await crossCompiled("bun-darwin-x64-baseline")],
  ["darwin-arm64", await crossCompiled("bun-darwin-arm64")],
];
// `npm run test:release` builds both darwin targets anyway: there the runtimes must be at hand.
const MUST = process.env.DOCKET_TEST_RELEASE === "all";
for (const [name, built] of REAL) {
  if (typeof built !== "string" && !MUST) console.warn(`macho-sign.test.ts: the ${name} cases are skipped: Bun could not compile for it here (its runtime is neither in Bun's cache nor downloadable): ${built.reason}`);
}

describe("adhocSign on a program Bun cross-compiled for macOS", () => {
  const [, x64] = REAL[0]!;
  test.skipIf(typeof x64 !== "string" && !MUST)("darwin-x64: Bun's output fails the check (its runtime's signature is stale); signed, every page checks, the program's bytes unchanged, twice the same", () => {
    if (typeof x64 !== "string") throw new Error(`no darwin-x64 runtime: ${x64.reason}`);
    const raw = readFileSync(x64);
    const before = verifyAdhocSignature(x64);
    expect(before.ok).toBe(false);
    expect(before.badPages > 0 || before.codeLimit !== before.sigOffset).toBe(true);

    const path = fileOf(raw, "x64");
    adhocSign(path, "docket");
    const after = verifyAdhocSignature(path);
    expect(after).toEqual({ ok: true, identifier: "docket", flags: 0x20002, pages: Math.ceil(after.codeLimit / 4096), badPages: 0, codeLimit: after.sigOffset, sigOffset: readSigned(raw).dataoff });
    const signed = readFileSync(path);
    const allowed = patchable(raw);
    expect(differences(raw, signed, after.codeLimit).filter((at) => !allowed(at))).toEqual([]);
    expect(readSigned(signed).cd).toMatchObject({ execSegBase: 0, execSegLimit: readSigned(raw).segments.__TEXT!.filesize, execSegFlags: 1 });

    adhocSign(path, "docket");
    expect(readFileSync(path).equals(signed)).toBe(true);
    expect(verifyAdhocSignature(flipped(path, 0x10000))).toMatchObject({ ok: false, badPages: 1 });
  }, SLOW);

  const [, arm64] = REAL[1]!;
  test.skipIf(typeof arm64 !== "string" && !MUST)("darwin-arm64: Bun's own ad hoc signature checks, and ours hashes every page as Bun's does (page 0 aside when the load commands grew)", () => {
    if (typeof arm64 !== "string") throw new Error(`no darwin-arm64 runtime: ${arm64.reason}`);
    const raw = readFileSync(arm64);
    const before = verifyAdhocSignature(arm64);
    expect(before).toMatchObject({ ok: true, badPages: 0, flags: 0x20002 });

    const path = fileOf(raw, "arm64");
    adhocSign(path, "docket");
    const after = verifyAdhocSignature(path);
    expect(after).toEqual({ ...before, identifier: "docket" });
    const signed = readFileSync(path);
    const allowed = patchable(raw);
    const changed = differences(raw, signed, after.codeLimit);
    expect(changed.filter((at) => !allowed(at))).toEqual([]);
    const theirs = readSigned(raw);
    const ours = readSigned(signed);
    expect(ours.cd).toEqual({ ...theirs.cd, identifier: "docket" });
    for (let page = changed.length > 0 ? 1 : 0; page < ours.cd.nCodeSlots; page++) {
      if (!ours.hash(page).equals(theirs.hash(page))) throw new Error(`page ${page}: our hash differs from Bun's`);
    }
  }, SLOW);
});
