import { describe, expect, test } from "bun:test";
import Ajv2020 from "ajv/dist/2020";
import addFormats from "ajv-formats";
import { protocolDocument } from "../../runtime/execution/protocol-document.ts";
import { resolveLimits } from "../../runtime/execution/limits.ts";
import { EVENT_TYPES } from "../../runtime/execution/protocol.ts";
import { EDGE, harness } from "./_support/harness.ts";
import { flush } from "./_support/fake-pool.ts";

function validatorFor(schema: unknown) {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  return ajv.compile(schema as object);
}

describe("executions.protocol", () => {
  test("protocolDocument serves the schema version, schemas, states, moves and the limits in force", () => {
    const limits = resolveLimits({ overrides: { heartbeat_ms: 1234 } });
    const doc = protocolDocument(limits);
    expect(doc.schema_version).toBe("1");
    expect(doc.limits.heartbeat_ms).toBe(1234);
    expect(doc.transitions.queued).toEqual(["running", "cancelled"]);
    expect(Object.keys(doc.payload_schemas).sort()).toEqual([...EVENT_TYPES].sort());
    expect(JSON.stringify(doc.control_schema)).toContain("stream.lagged");
  });

  test("every event an execution emits validates against the served event_schema", async () => {
    const h = harness();
    const validate = validatorFor(h.engine.handle(EDGE).protocol().event_schema);
    const ok = h.engine.start({ capability: "demo.read", input: {} }, EDGE).execution.id;
    const failed = h.engine.start({ capability: "demo.read", input: {} }, EDGE).execution.id;
    await flush();
    h.pool.of(ok)!.emit(
      { type: "execution.step", data: { id: "s", title: "Step" } },
      { type: "execution.progress", data: { current: 1, total: 3, message: "one" } },
      { type: "execution.progress", data: { current: 2 } },
      { type: "execution.log", data: { level: "warn", message: "\u001b[31mred\u001b[0m" } },
      { type: "execution.stream", data: { name: "stdout", chunk: "hello\n" } },
      { type: "execution.diagnostic", data: { severity: "error", message: "bad", file: "a.ts", line: 3, column: 1, code: "x" } },
      { type: "execution.step_done", data: { id: "s", ok: true } },
    );
    h.engine.cancel(ok, EDGE);
    h.pool.of(ok)!.succeed({ n: 1 });
    h.pool.of(failed)!.end({ ok: false, error: { kind: "capability", code: "verification_failed", message: "no", context: {} } });
    const queued = h.engine.start({ capability: "demo.read", input: {} }, EDGE).execution.id;
    h.engine.cancel(queued, EDGE);
    // A write stopped by force ends unknown, and a person settles it: execution.reconciled.
    const unknown = h.engine.start({ capability: "demo.write", input: {} }, EDGE).execution.id;
    await flush();
    h.pool.of(unknown)!.end({ ok: false, error: { kind: "worker_lost", message: "gone" } });
    await flush();
    await h.engine.handle(EDGE).reconcile({ id: unknown, outcome: "applied", note: "the file is there" });
    const events = [ok, failed, queued, unknown].flatMap((id) => h.store.events(id, 0, 1000)!.events);
    expect(new Set(events.map((e) => e.type)).size).toBe(EVENT_TYPES.length);
    for (const event of events) {
      const valid = validate(JSON.parse(JSON.stringify(event)));
      expect({ type: event.type, errors: validate.errors ?? null, valid }).toMatchObject({ valid: true });
    }
  });

  test("the event_schema refuses an event with a wrong sequence or an unknown payload field type", () => {
    const validate = validatorFor(protocolDocument(resolveLimits()).event_schema);
    const good = { schema_version: "1", event_id: "x-20260908T010203Z-0a1b2c3d#1", execution_id: "x-20260908T010203Z-0a1b2c3d", sequence: 1, timestamp: "2026-09-08T01:02:03.000Z", type: "execution.started", data: {} };
    expect(validate(good)).toBe(true);
    expect(validate({ ...good, sequence: 0 })).toBe(false);
    expect(validate({ ...good, type: "execution.progress", data: { current: "x" } })).toBe(false);
  });
});
