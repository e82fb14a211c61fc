// What the Bun adapters that call libc through bun:ffi share: where libc is, and how to call fcntl.
import type { FFIFunction } from "bun:ffi";

type Ffi = typeof import("bun:ffi");

/**
 * The symbols `declare` names, from the first of the platform's libc files that opens through
 * bun:ffi; null where there is none to open (Node, Windows, a libc not found).
 */
export function libcSymbols(declare: (ffi: Ffi) => Record<string, FFIFunction>): Record<string, unknown> | null {
  const names = LIBC[process.platform];
  if (!names || typeof (globalThis as { Bun?: unknown }).Bun === "undefined") return null;
  let ffi: Ffi;
  try {
    ffi = require("bun:ffi") as Ffi;
  } catch {
    return null;
  }
  for (const name of names) {
    try {
      return ffi.dlopen(name, declare(ffi)).symbols as Record<string, unknown>;
    } catch {
      // The next name.
    }
  }
  return null;
}

/** libc's file names per platform; the first that opens is used. */
export const LIBC: Record<string, string[]> = {
  linux: ["libc.so.6", "libc.so", "libc.musl-x86_64.so.1", "libc.musl-aarch64.so.1"],
  darwin: ["libSystem.B.dylib", "/usr/lib/libSystem.B.dylib"],
};

/**
 * fcntl is variadic. On Apple arm64 a variadic argument is passed on the stack, not in a register,
 * and bun:ffi has no variadic calls: declaring eight register arguments first puts the third in
 * the stack slot fcntl reads it from. Elsewhere the fixed three-argument call works.
 */
const PADDED = process.platform === "darwin" && process.arch === "arm64";

/** fcntl's declaration for dlopen, `i32` being bun:ffi's FFIType.i32. */
export function fcntlDeclaration(i32: FFIFunction["returns"] & number): FFIFunction {
  return { args: PADDED ? [i32, i32, i32, i32, i32, i32, i32, i32, i32] : [i32, i32, i32], returns: i32 };
}

/** A three-argument call of the symbol `fcntlDeclaration` declared. */
export function fcntlCaller(symbol: unknown): (fd: number, command: number, argument: number) => number {
  const call = symbol as (...args: number[]) => number;
  return PADDED ? (fd, command, argument) => call(fd, command, 0, 0, 0, 0, 0, 0, argument) : (fd, command, argument) => call(fd, command, argument);
}
