// With a small --frame-bytes, a log line, diagnostic or stream chunk too large for one frame is cut
// to fit and marked truncated, so that every frame still validates against the schema
// executions.protocol serves; a marker object in place of a string did not (API tester, session 43).
import { afterEach, expect, test } from "bun:test";
import { frameValidator } from "./_support/http.ts";
import { serveCapabilityFiles, type ServedCheckout } from "./_support/servers.ts";

const WIDE = `import { capability } from "docket";
import * as v from "valibot";
export default capability({
  id: "team.wide", title: "Wide", description: "Writes texts wider than a small frame.", effect: "read",
  input: v.object({}), output: v.object({}),
  handler(input, ctx) {
    const s = "😀".repeat(1000);
    console.log(s);
    ctx.progress.diagnostic({ severity: "warning", message: s });
    ctx.progress.stream("out", s);
    ctx.progress.step("wide", s);
    return {};
  },
});
`;

let served: ServedCheckout | null = null;

afterEach(async () => {
  await served?.stop();
  served = null;
});

test("frames of texts wider than frame_bytes are cut, marked truncated, and validate against the served schema; the events API keeps them whole", async () => {
  served = await serveCapabilityFiles({ "team.wide.ts": WIDE }, { storeKind: "sqlite", limits: { overrides: { frame_bytes: 4096 } } });
  const { server } = served;
  const started = await fetch(`${server.url}/api/v1/executions/start`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ capability: "team.wide", input: {} }) });
  const id = ((await started.json()) as { execution: { id: string } }).execution.id;
  const frames: any[] = [];
  const socket = new WebSocket(`${server.url.replace("http", "ws")}/events?execution=${id}&after=0`);
  await new Promise<void>((resolve, reject) => {
    socket.onmessage = (message) => {
      const frame = JSON.parse(String(message.data));
      frames.push(frame);
      if (frame.type === "execution.completed") resolve();
    };
    socket.onerror = () => reject(new Error("the socket failed"));
    setTimeout(() => reject(new Error("no execution.completed within 15 s")), 15_000);
  });
  socket.close();
  const protocol = await (await fetch(`${server.url}/api/v1/executions/protocol`)).json();
  const check = frameValidator(protocol as { event_schema: object; control_schema: object });
  expect(frames.map(check).filter((problem) => problem !== null)).toEqual([]);
  const wide = "😀".repeat(1000);
  const cut = frames.filter((frame) => frame.data?.truncated === true);
  expect(cut.map((frame) => frame.type).sort()).toEqual(["execution.diagnostic", "execution.log", "execution.step", "execution.stream"]);
  for (const frame of cut) {
    expect(Buffer.byteLength(JSON.stringify(frame))).toBeLessThanOrEqual(4096);
    const text = frame.data.message ?? frame.data.chunk ?? frame.data.title;
    // A step title is cut by its own byte limit (step_title_bytes) before any frame is made.
    expect(text.length).toBeGreaterThan(frame.type === "execution.step" ? 400 : 1000);
    expect(wide.startsWith(text.replace(/…$/, ""))).toBe(true);
  }
  // The stored events are whole.
  const stored = (await (await fetch(`${server.url}/api/v1/executions/events?id=${id}`)).json()) as { events: any[] };
  expect(stored.events.find((event) => event.type === "execution.log").data.message).toBe(`${wide}`);
});
