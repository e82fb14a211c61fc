import { describe, expect, test } from "bun:test";
import { boundFrame, estimatedFrameBytes } from "../../runtime/server/live-frame.ts";
import * as v from "valibot";
import { ExecutionEventSchema, type ExecutionEvent } from "../../runtime/execution/protocol.ts";
import { allEvents, draft, idOf, limitsWith, newExecution } from "../store/_fixtures.ts";
import { createMemoryStore } from "../../runtime/store/index.ts";
import { countStringify } from "../_support/count-stringify.ts";

describe("estimatedFrameBytes", () => {
  test("estimatedFrameBytes is within a fifth of the frame's UTF-8 bytes for every kind of event a handler emits, short or long, ASCII or not", () => {
    const store = createMemoryStore({ limits: limitsWith() });
    store.create(newExecution(1));
    const long = "é".repeat(3000);
    store.append(idOf(1), [draft.started(), draft.step("build"), draft.progress(1), draft.progress(123_456, 200_000), draft.log("compiling src/index.ts"), draft.log(long)]);
    store.append(idOf(1), [draft.stream("out 1\n"), draft.stream(long), draft.diagnostic("unused variable x"), draft.stepDone("build", true, "done"), draft.completed("succeeded")]);
    for (const event of allEvents(store, idOf(1))) {
      const frame = Buffer.byteLength(JSON.stringify(event));
      const ratio = estimatedFrameBytes(event) / frame;
      expect({ type: event.type, frame, close: ratio >= 0.8 && ratio <= 1.25 }).toEqual({ type: event.type, frame, close: true });
    }
  });

  test("estimatedFrameBytes counts what a text takes in JSON: escapes, lone surrogates, control and non-ASCII characters a handler chose", () => {
    const store = createMemoryStore({ limits: limitsWith() });
    store.create(newExecution(1));
    // Each kind of text takes 1 to 6 bytes of JSON per unit; all of them survive the store's sanitizing.
    const texts = ["\ud800".repeat(255), "中".repeat(255), "\u001b[m".repeat(85), '"\\'.repeat(127), "😀".repeat(120), "é".repeat(200), "\u001b[m".repeat(1365)];
    store.append(idOf(1), [draft.started(), ...texts.map((text) => draft.log(text)), ...texts.map((text) => draft.step(text.slice(0, 100)))]);
    const events = allEvents(store, idOf(1)).filter((event) => event.type === "execution.log" || event.type === "execution.step");
    expect(events).toHaveLength(texts.length * 2);
    for (const event of events) {
      const frame = Buffer.byteLength(JSON.stringify(event));
      const ratio = estimatedFrameBytes(event) / frame;
      expect({ frame, close: ratio >= 0.9 && ratio <= 1.1 }).toEqual({ frame, close: true });
    }
  });

  test("an event that carries values is serialized once for the store's retention and the live channel's estimate, and a copy with other data is measured from its own", async () => {
    const store = createMemoryStore({ limits: limitsWith() });
    const watched: ExecutionEvent[] = [];
    store.subscribe({ executions: "all", live: true }, (event) => void watched.push(event));
    // Storing measured the created event (its retention); the channel's estimate comes right after.
    store.create(newExecution(1, { input: { files: ["a.ts", "b.ts"], depth: 3 } }));
    expect(watched.map((event) => event.type)).toEqual(["execution.created"]);
    expect(await countStringify(() => estimatedFrameBytes(watched[0]!))).toBe(0);
    // The size belongs to that object: a copy with other data is measured from its own data.
    const copy = { ...watched[0]!, data: { ...(watched[0]!.data as object), input: { files: ["x".repeat(5000)] } } } as ExecutionEvent;
    expect(estimatedFrameBytes(copy) - estimatedFrameBytes(watched[0]!)).toBeGreaterThan(4900);
  });
});

describe("boundFrame", () => {
  const id = idOf(1);
  const eventWith = (type: string, data: Record<string, unknown>) => ({ schema_version: "1", event_id: `${id}#7`, execution_id: id, sequence: 7, timestamp: "2026-12-01T00:00:00.000Z", type, data }) as unknown as ExecutionEvent;
  const bytes = (text: string) => Buffer.byteLength(text);

  test("boundFrame takes the largest values out first, until the frame fits frame_bytes, keeping the small ones; a handler event's texts are cut and marked truncated, so that the frame still validates (API tester, session 43)", () => {
    const event = eventWith("execution.diagnostic", { severity: "error", message: "m".repeat(1000), code: "c".repeat(900), file: "f".repeat(400), line: 3 });
    const frame = boundFrame(event, JSON.stringify(event), 1024);
    expect(bytes(frame)).toBeLessThanOrEqual(1024);
    const parsed = JSON.parse(frame);
    expect(v.safeParse(ExecutionEventSchema, parsed).success).toBe(true);
    const { data } = parsed;
    expect(data).toMatchObject({ severity: "error", line: 3, truncated: true });
    // Only as many as it takes: the largest two cut (to a start of each), and the file stays.
    expect("m".repeat(1000).startsWith(data.message)).toBe(true);
    expect(data.message.length).toBeLessThan(1000);
    expect("c".repeat(900).startsWith(data.code)).toBe(true);
    expect(data.file).toBe("f".repeat(400));
    // Not a handler event's text: an output is withheld, pointing at the snapshot.
    const completed = eventWith("execution.completed", { state: "succeeded", output: { text: "o".repeat(2000) }, duration_ms: 4 });
    expect(JSON.parse(boundFrame(completed, JSON.stringify(completed), 1024)).data.output).toEqual({ withheld: "too_large", bytes: 2011, limit: 1024, self: `/api/v1/executions/get?id=${id}` });
  });

  test("boundFrame cuts a text of wide characters at a whole one, and the frame validates, for every event a handler emits", () => {
    const long = "😀é字".repeat(700);
    for (const [type, data] of [
      ["execution.log", { level: "info", message: long }],
      ["execution.stream", { name: "out", chunk: long }],
      ["execution.step", { id: "s", title: long }],
      ["execution.step_done", { id: "s", ok: true, message: long }],
      ["execution.progress", { current: 1, total: 2, message: long }],
    ] as const) {
      const event = eventWith(type, data);
      const frame = boundFrame(event, JSON.stringify(event), 4096);
      expect(bytes(frame)).toBeLessThanOrEqual(4096);
      expect(bytes(frame)).toBeGreaterThan(3000);
      const parsed = JSON.parse(frame);
      expect(v.safeParse(ExecutionEventSchema, parsed).success).toBe(true);
      expect(parsed.data.truncated).toBe(true);
      const text = Object.values(parsed.data).find((value) => typeof value === "string" && value.length > 100) as string;
      expect(long.startsWith(text)).toBe(true);
      expect(/[\ud800-\udbff]$/.test(text)).toBe(false);
    }
  });

  test("boundFrame withholds the whole payload when many small values make the frame too large", () => {
    const data = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`k${i}`, "v".repeat(200)]));
    const event = eventWith("execution.step", data);
    const frame = boundFrame(event, JSON.stringify(event), 1024);
    expect(bytes(frame)).toBeLessThanOrEqual(1024);
    expect(JSON.parse(frame)).toMatchObject({ sequence: 7, type: "execution.step", data: { withheld: "too_large", limit: 1024 } });
  });

  test("boundFrame leaves a frame that fits as it is, the very same string", () => {
    const event = eventWith("execution.log", { level: "info", message: "hello" });
    const json = JSON.stringify(event);
    expect(boundFrame(event, json, 1024)).toBe(json);
  });
});
