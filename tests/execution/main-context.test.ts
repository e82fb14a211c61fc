import { describe, expect, test } from "bun:test";
import { mainThreadContext } from "../../runtime/execution/_main-context.ts";
import { resolveLimits } from "../../runtime/execution/limits.ts";
import type { PlaneHandle } from "../../runtime/execution/plane.ts";

const HOST = () => ({ capabilities: [] }) as never;
const plane = { root: process.cwd(), limits: resolveLimits() } as unknown as PlaneHandle;

describe("mainThreadContext", () => {
  test("mainThreadContext hands the caller's own signal to the handler: it aborts when the caller leaves", () => {
    const caller = new AbortController();
    const ctx = mainThreadContext(plane, HOST, caller.signal);
    expect(ctx.signal).toBe(caller.signal);
    expect(ctx.progress.cancelled()).toBe(false);
    caller.abort();
    expect(ctx.signal.aborted).toBe(true);
    expect(ctx.progress.cancelled()).toBe(true);
  });

  test("mainThreadContext's exec, made on first use, runs a command in the root, and again", async () => {
    const ctx = mainThreadContext(plane, HOST, new AbortController().signal);
    const first = await ctx.exec([process.execPath, "-e", "console.log(process.cwd())"]);
    expect(first.exitCode).toBe(0);
    expect(first.stdout.trim()).toBe(process.cwd());
    const second = await ctx.exec([process.execPath, "-e", "console.log('again')"]);
    expect(second.stdout.trim()).toBe("again");
  });

  test("mainThreadContext's exec refuses to start once the caller has left", async () => {
    const caller = new AbortController();
    const ctx = mainThreadContext(plane, HOST, caller.signal);
    caller.abort();
    const outcome = await ctx.exec([process.execPath, "-e", "console.log('ran')"]).then(
      (result) => ({ ran: true, result }),
      (error: Error) => ({ ran: false, name: error.name }),
    );
    expect(outcome).toMatchObject({ ran: false });
  });
});
