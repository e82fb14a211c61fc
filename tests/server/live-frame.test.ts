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

  const valid = (frame: string) => {
    const parsed = JSON.parse(frame);
    const checked = v.safeParse(ExecutionEventSchema, parsed);
    expect(checked.issues?.map((issue) => issue.message) ?? []).toEqual([]);
    return parsed;
  };
  /** `cut` is `whole`, or a start of it ending in "…". */
  const startOf = (cut: string, whole: string) => cut === whole || (cut.endsWith("…") && whole.startsWith(cut.slice(0, -1)));

  test("boundFrame cuts a handler event's texts to fair shares, marked truncated, so that the frame fits and validates; a short one is kept whole (API tester, session 43)", () => {
    const texts = { message: "m".repeat(1000), code: "c".repeat(900), file: "f".repeat(120) };
    const event = eventWith("execution.diagnostic", { severity: "error", ...texts, line: 3 });
    const frame = boundFrame(event, JSON.stringify(event), 1024);
    expect(bytes(frame)).toBeLessThanOrEqual(1024);
    const { data } = valid(frame);
    expect(data).toMatchObject({ severity: "error", line: 3, truncated: true, file: texts.file });
    // The two long ones share what is left, alike: neither is emptied for the other.
    expect(startOf(data.message, texts.message) && startOf(data.code, texts.code)).toBe(true);
    expect(Math.abs(data.message.length - data.code.length)).toBeLessThanOrEqual(4);
    expect(data.message.length).toBeGreaterThan(250);
    // Not a handler event's text: an output is withheld, pointing at the snapshot.
    const completed = eventWith("execution.completed", { state: "succeeded", output: { text: "o".repeat(2000) }, duration_ms: 4 });
    expect(valid(boundFrame(completed, JSON.stringify(completed), 1024)).data.output).toEqual({ withheld: "too_large", bytes: 2011, limit: 1024, self: `/api/v1/executions/get?id=${id}` });
  });

  test("boundFrame never cuts an identity: a step's id and a stream's name stay whole while their texts give way (checking tester, session 43)", () => {
    const stepId = `alpha-${"k".repeat(300)}`;
    for (const [type, data, key] of [
      ["execution.step", { id: stepId, title: "t".repeat(2000) }, "id"],
      ["execution.step_done", { id: stepId, ok: false, message: "m".repeat(2000) }, "id"],
      ["execution.stream", { name: `out-${"n".repeat(300)}`, chunk: "c".repeat(2000) }, "name"],
    ] as const) {
      const event = eventWith(type, data);
      const parsed = valid(boundFrame(event, JSON.stringify(event), 1024));
      expect(parsed.data[key]).toBe((data as Record<string, string>)[key]);
      expect(parsed.data.truncated).toBe(true);
    }
  });

  test("boundFrame keeps a failure, a reconciliation and a creation in their schema's shape: texts cut, opaque values withheld (checking tester, session 43)", () => {
    const failure = { error_code: "boom", stage: "run", message: "a".repeat(3000), retryability: "never", outcome_certainty: "not_applied", correlation_id: "c-1", request_id: "r-1", trace_id: "t".repeat(32), suggestion: "s".repeat(3000), context: { detail: "d".repeat(2000) } };
    const completed = eventWith("execution.completed", { state: "failed", failure, duration_ms: 5 });
    const done = valid(boundFrame(completed, JSON.stringify(completed), 4096));
    expect(done.data.failure).toMatchObject({ error_code: "boom", stage: "run", context: { withheld: "too_large" } });
    expect(startOf(done.data.failure.message, failure.message) && startOf(done.data.failure.suggestion, failure.suggestion)).toBe(true);
    expect(done.data.failure.message.length).toBeGreaterThan(1000);
    const note = "é\u0001😀".repeat(300);
    const reconciled = eventWith("execution.reconciled", { outcome: "applied", method: "manual", actor: { kind: "http" }, note, evidence: { log: "e".repeat(3000) } });
    const settled = valid(boundFrame(reconciled, JSON.stringify(reconciled), 1024));
    expect(startOf(settled.data.note, note)).toBe(true);
    expect(settled.data.evidence).toMatchObject({ withheld: "too_large" });
    const created = eventWith("execution.created", { capability: "team.x", input: { text: "i".repeat(800) }, actor: { kind: "http" }, run_id: "r".repeat(123), session_key: "€".repeat(60) });
    const made = valid(boundFrame(created, JSON.stringify(created), 1024));
    expect(made.data).toMatchObject({ run_id: "r".repeat(123), session_key: "€".repeat(60), input: { withheld: "too_large" } });
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
      expect(bytes(frame)).toBeGreaterThan(3500);
      const parsed = valid(frame);
      expect(parsed.data.truncated).toBe(true);
      const text = Object.values(parsed.data).find((value) => typeof value === "string" && value.length > 100) as string;
      expect(startOf(text, long)).toBe(true);
      expect(/[\ud800-\udbff]…$/.test(text)).toBe(false);
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
