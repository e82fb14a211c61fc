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
    const hangUp = untilHangUp(stdin, undefined, () => true);
    expect(await settledWithin(hangUp, READER_LOOK_MS * 3.5)).toBe(true);
    expect(await hangUp).toBe("stdin");
    expect(heard).toEqual(["end"]);
  });

  test("no end is said while the kernel says stdin is open or holds unread bytes, while one look in two says so, or while stdin is paused (what is held back is still to read)", async () => {
    const open = flowingStdin();
    let answers = 0;
    const alternating = untilHangUp(open.stdin, undefined, () => answers++ % 2 === 0);
    const paused = flowingStdin();
    paused.stdin.pause();
    const held = untilHangUp(paused.stdin, undefined, () => true);
    const never = untilHangUp(flowingStdin().stdin, undefined, () => false);
    expect(await settledWithin(Promise.race([alternating, held, never]), READER_LOOK_MS * 4.5)).toBe(false);
    expect(open.heard).toEqual([]);
    // Their real ends still end them.
    for (const stdin of [open.stdin, paused.stdin]) stdin.end();
    paused.stdin.resume();
    expect(await alternating).toBe("stdin");
    expect(await held).toBe("stdin");
  }, 15_000);
});
