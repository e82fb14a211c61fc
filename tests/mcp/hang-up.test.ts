// When `docket mcp` hears its agent hang up (mcp/hang-up.ts): stdin's end, and an end the runtime
// did not report (a socket stdin paused when its writer ended it: read-to-end.ts), told by the
// kernel and said for it once two looks in a row agree.
import { describe, expect, test } from "bun:test";
import { PassThrough } from "node:stream";
import { untilHangUp } from "../../runtime/mcp/hang-up.ts";
import { READER_LOOK_MS } from "../../runtime/adapter/reader-gone.ts";

/** A stdin that flows (a listener reads it, as the transport does) and never ends by itself; the `end`s its listeners heard. */
function flowingStdin() {
  const stdin = new PassThrough();
  const heard: string[] = [];
  stdin.on("data", () => undefined);
  stdin.on("end", () => heard.push("end"));
  return { stdin, heard };
}

const settledWithin = async (promise: Promise<unknown>, ms: number) => Promise.race([promise.then(() => true), Bun.sleep(ms).then(() => false)]);

describe("untilHangUp", () => {
  test("an end the runtime did not report is said once two looks in a row find stdin read whole: its listeners (the transport's) hear it, and the hang-up is stdin's (tester)", async () => {
    const { stdin, heard } = flowingStdin();
    const watch = untilHangUp(stdin, undefined, () => true);
    expect(await settledWithin(watch.hangUp, READER_LOOK_MS * 3.5)).toBe(true);
    expect(await watch.hangUp).toBe("stdin");
    expect(heard).toEqual(["end"]);
    watch.close();
  });

  test("no end is said while the kernel says stdin is open or holds unread bytes, while one look in two says so, or while stdin is paused (what is held back is still to read)", async () => {
    const open = flowingStdin();
    let answers = 0;
    const alternatingWatch = untilHangUp(open.stdin, undefined, () => answers++ % 2 === 0);
    const paused = flowingStdin();
    paused.stdin.pause();
    const heldWatch = untilHangUp(paused.stdin, undefined, () => true);
    const neverWatch = untilHangUp(flowingStdin().stdin, undefined, () => false);
    const [alternating, held, never] = [alternatingWatch.hangUp, heldWatch.hangUp, neverWatch.hangUp];
    expect(await settledWithin(Promise.race([alternating, held, never]), READER_LOOK_MS * 4.5)).toBe(false);
    expect(open.heard).toEqual([]);
    // Their real ends still end them.
    for (const stdin of [open.stdin, paused.stdin]) stdin.end();
    paused.stdin.resume();
    expect(await alternating).toBe("stdin");
    expect(await held).toBe("stdin");
    for (const watch of [alternatingWatch, heldWatch, neverWatch]) watch.close();
  }, 15_000);

  test("untilHangUp still hears stdout close once stdin has ended: stopNow says so, where the session used to answer its whole backlog for nobody (MCP checking tester, session 50)", async () => {
    const { stdin } = flowingStdin();
    const stdoutClosed = new AbortController();
    const watch = untilHangUp(stdin, stdoutClosed.signal);
    let stop: string | null = null;
    void watch.stopNow.then((why) => (stop = why));
    stdin.end();
    expect(await watch.hangUp).toBe("stdin");
    // The end of stdin is no reason to stop at once.
    await new Promise((resolve) => setImmediate(resolve));
    expect(stop).toBeNull();
    stdoutClosed.abort();
    expect(await watch.stopNow).toBe("stdout");
    // The first hang-up stays stdin's.
    expect(await watch.hangUp).toBe("stdin");
    watch.close();
  });

  test("untilHangUp says stdout closed before stdin's end both as the hang-up and as a stop (tester R2)", async () => {
    const stdoutClosed = new AbortController();
    const watch = untilHangUp(flowingStdin().stdin, stdoutClosed.signal);
    stdoutClosed.abort();
    expect(await watch.hangUp).toBe("stdout");
    expect(await watch.stopNow).toBe("stdout");
    watch.close();
  });
});
