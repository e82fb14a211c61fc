import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startBun, type StartedServer } from "./_support/servers.ts";
import { client } from "./_support/http.ts";

const MIB = 1024 * 1024;

/** The memory store's bound on all its executions' events together, through a real server. */
describe("executions_retained_bytes over HTTP (memory store)", () => {
  let server: StartedServer;
  let http: ReturnType<typeof client>;
  beforeAll(async () => {
    server = await startBun({ limits: { executions_retained_bytes: MIB } });
    http = client(server);
  }, 30_000);
  afterAll(() => server?.stop(), 15_000);

  test("a new execution makes the server forget the oldest finished ones while their events together are over the bound; the newer ones stay whole", async () => {
    // ~3,500 progress events: a little over half a MiB of events each.
    const flood = { steps: 0, delay_ms: 0, events: 3500 };
    const first = await http.start("executions.demonstrate", flood);
    await http.completed(first);
    const second = await http.start("executions.demonstrate", flood);
    await http.completed(second);
    // Both finished and together over 1 MiB, but nothing was created since: both are still held.
    expect((await http.get(`/api/v1/executions/get?id=${first}`)).status).toBe(200);
    const third = await http.start("executions.demonstrate", { steps: 0, delay_ms: 0 });
    await http.completed(third);
    const gone = await http.get(`/api/v1/executions/get?id=${first}`);
    expect(gone.status).toBe(404);
    const kept = (await (await http.get(`/api/v1/executions/get?id=${second}`)).json()) as any;
    expect(kept).toMatchObject({ id: second, state: "succeeded", retained_from: 1, truncated: false });
    const page = (await (await http.get(`/api/v1/executions/events?id=${second}&after=0&limit=1000`)).json()) as any;
    expect(page.events[0].sequence).toBe(1);
    // health.report says what the events held come to, against the bound.
    const report = (await (await http.post("/api/v1/health/report", {})).json()) as any;
    expect(report.store.retained_bytes).toBeGreaterThan(MIB / 2);
    expect(report.store.retained_bytes).toBeLessThanOrEqual(MIB);
    expect(report.checks.find((c: any) => c.id === "store").message).toContain("of 1.0 MiB (executions_retained_bytes)");
    // The protocol document serves the bound in force.
    const protocol = (await (await http.get("/api/v1/executions/protocol")).json()) as any;
    expect(protocol.limits.executions_retained_bytes).toBe(MIB);
  }, 30_000);
});
