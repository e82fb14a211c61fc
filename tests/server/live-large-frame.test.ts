// A frame larger than subscriber_queue_bytes reaches a client that has nothing waiting: two idle,
// caught-up clients got `stream.lagged {"dropped":1}` in place of a ~90 KB execution.completed,
// and at the minimum bound a client following a slow trickle got only notices (live-channel tester).
import { afterEach, expect, test } from "bun:test";
import { openLive, completedOf } from "./_support/live-client.ts";
import { serveCapabilityFiles, type ServedCheckout } from "./_support/servers.ts";

const LARGE = `import { capability } from "docket";
import * as v from "valibot";
export default capability({
  id: "team.large", title: "Large", description: "Logs a few lines, a pause after each, then returns an output of about 90 KB.", effect: "read",
  input: v.object({ lines: v.number(), pause_ms: v.number(), width: v.number() }), output: v.object({ text: v.string() }),
  async handler(input, ctx) {
    for (let i = 1; i <= input.lines; i++) {
      ctx.progress.log("line " + i + " " + "y".repeat(input.width));
      await new Promise((resolve) => setTimeout(resolve, input.pause_ms));
    }
    return { text: "x".repeat(90_000) };
  },
});
`;

let served: ServedCheckout | null = null;
/** The execution's end, or the notice that it was lost: either way the test looks at what came. */
const endOrLag = (id: string) => (frame: any) => completedOf(id)(frame) || frame.type === "stream.lagged";
afterEach(async () => {
  await served?.stop();
  served = null;
});

async function start(input: { lines: number; pause_ms: number; width: number }): Promise<string> {
  const response = await fetch(`${served!.server.url}/api/v1/executions/start`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ capability: "team.large", input }) });
  return ((await response.json()) as { execution: { id: string } }).execution.id;
}

test("live channel: an execution.completed larger than subscriber_queue_bytes reaches every caught-up client whole", async () => {
  served = await serveCapabilityFiles({ "team.large.ts": LARGE }, { limits: { overrides: { subscriber_queue_bytes: 65_536 } } });
  const clients = [await openLive(served.server.url), await openLive(served.server.url)];
  for (const live of clients) await live.waitFor((frame) => frame.type === "stream.ready");
  const id = await start({ lines: 3, pause_ms: 20, width: 0 });
  for (const live of clients) {
    const done = await live.waitFor(endOrLag(id));
    expect(live.frames.map((frame) => frame.type)).not.toContain("stream.lagged");
    expect(done.data.output.text).toHaveLength(90_000);
    const sequences = live.frames.filter((frame) => frame.execution_id === id).map((frame) => frame.sequence);
    expect(sequences).toEqual(Array.from({ length: done.sequence }, (_, i) => i + 1));
    await live.close();
  }
});

test("live channel: at the minimum subscriber_queue_bytes (256) a client following a slow trickle gets every event", async () => {
  served = await serveCapabilityFiles({ "team.large.ts": LARGE }, { limits: { overrides: { subscriber_queue_bytes: 256 } } });
  // Every frame of it is larger than the bound: each must reach a client that read the one before.
  const id = await start({ lines: 8, pause_ms: 30, width: 400 });
  const live = await openLive(served.server.url, `execution=${id}`);
  const done = await live.waitFor(endOrLag(id));
  await live.close();
  expect(live.frames.map((frame) => frame.type)).not.toContain("stream.lagged");
  const sequences = live.frames.filter((frame) => frame.execution_id === id).map((frame) => frame.sequence);
  expect(sequences).toEqual(Array.from({ length: done.sequence }, (_, i) => i + 1));
});
