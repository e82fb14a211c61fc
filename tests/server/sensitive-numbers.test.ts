import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { DocketServer } from "../../runtime/server/serve.ts";
import { serveCapabilityFiles, type ServedCheckout } from "./_support/servers.ts";
import { openLive, completedOf } from "./_support/live-client.ts";

const PIN = 73914562;

const CAPABILITY = `import { capability, sensitive } from "docket";
import * as v from "valibot";

export default capability({
  id: "sec.pin",
  title: "Use a PIN",
  description: "Prints and returns its sensitive number, as careless code does.",
  effect: "read",
  input: v.object({ pin: sensitive(v.number()), short: v.optional(sensitive(v.number())) }),
  output: v.object({ o: v.object({ pin: v.unknown(), twice: v.unknown(), plain: v.number() }) }),
  async handler(i, ctx) {
    console.log("pin", i.pin);
    ctx.progress.log(\`the pin is \${i.pin}, short \${i.short}\`);
    ctx.progress.progress(i.pin, i.pin * 2, "counting");
    ctx.progress.diagnostic({ severity: "warning", message: "at the pin", file: "a.ts", line: i.pin, column: 3 });
    return { o: { pin: i.pin, twice: [i.pin, { deep: i.pin }], plain: 12345 } };
  },
});
`;

const TOTAL = `import { capability, sensitive } from "docket";
import * as v from "valibot";

export default capability({
  id: "sec.total",
  title: "Total",
  description: "Returns a number: its sensitive input as it came, or one computed from it.",
  effect: "read",
  input: v.object({ pin: sensitive(v.number()), times: v.number() }),
  output: v.object({ total: v.number() }),
  async handler(i) {
    return { total: i.pin * i.times };
  },
});
`;

const CODE = `import { capability, sensitive } from "docket";
import * as v from "valibot";

export default capability({
  id: "sec.code",
  title: "Code",
  description: "Returns its secret as a string of digits, which its schema says it is.",
  effect: "read",
  input: v.object({ token: sensitive(v.string()) }),
  output: v.object({ code: v.pipe(v.string(), v.regex(/^[0-9]+$/)) }),
  async handler(i) {
    return { code: i.token };
  },
});
`;

/** A number the input schema marks sensitive (tester S): hidden in the stored input, and masked in every text and output too. */
describe("a sensitive number", () => {
  let served: ServedCheckout;
  let server: DocketServer;
  beforeAll(async () => {
    served = await serveCapabilityFiles({ "sec.pin.ts": CAPABILITY, "sec.total.ts": TOTAL, "sec.code.ts": CODE });
    ({ server } = served);
  }, 30_000);
  afterAll(() => served?.stop());

  test("is masked in the log, the console, live frames, the output and the cockpit: a number holding it becomes \"[redacted]\"", async () => {
    const live = await openLive(server.url, "");
    await live.waitFor((f) => f.type === "stream.ready");
    const started = (await (await fetch(`${server.url}/api/v1/executions/start`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ capability: "sec.pin", input: { pin: PIN, short: 42 } }) })).json()) as any;
    const id = started.execution.id;
    await live.waitFor(completedOf(id));
    await live.close();
    const snapshot = (await (await fetch(`${server.url}/api/v1/executions/get?id=${id}`)).json()) as any;
    expect(snapshot.state).toBe("succeeded");
    expect(snapshot.input).toEqual({ pin: "[redacted]", short: "[redacted]" });
    expect(snapshot.output).toEqual({ o: { pin: "[redacted]", twice: ["[redacted]", { deep: "[redacted]" }], plain: 12345 } });
    const events = await (await fetch(`${server.url}/api/v1/executions/events?id=${id}`)).text();
    const page = await (await fetch(`${server.url}/cockpit/executions/${id}`)).text();
    for (const text of [JSON.stringify(live.frames), JSON.stringify(snapshot), events, page]) expect(text).not.toContain(String(PIN));
    expect(events).toContain("the pin is [redacted], short 42");
    expect(events).toContain("pin [redacted]");
    // Numbers of events that are the secret are left out, as unknown (tester U: a PIN as a progress count).
    const parsed = JSON.parse(events).events as any[];
    expect(parsed.find((e) => e.type === "execution.progress").data).toEqual({ current: 0, total: PIN * 2, message: "counting" });
    expect(parsed.find((e) => e.type === "execution.diagnostic").data).toEqual({ severity: "warning", message: "at the pin", file: "a.ts", column: 3 });
  });

  test("an output whose schema takes a number where the sensitive number stands is refused, not sent as text that breaks the schema (tester T); a number computed from it is no secret", async () => {
    const call = async (times: number) => (await fetch(`${server.url}/api/v1/sec/total`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ pin: PIN, times }) })).json() as Promise<any>;
    const refused = await call(1);
    expect(refused.error).toMatchObject({ error_code: "internal", stage: "complete", context: { reason: "sensitive_output" } });
    expect(refused.error.message).toContain("returned a sensitive value of its input");
    expect(JSON.stringify(refused)).not.toContain(String(PIN));
    expect(await call(10)).toEqual({ total: PIN * 10 });
  });

  test("a secret string masked where the output schema does not take \"[redacted]\" (a pattern) is refused the same way (tester U)", async () => {
    const answer = (await (await fetch(`${server.url}/api/v1/sec/code`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ token: "90210443" }) })).json()) as any;
    expect(answer.error).toMatchObject({ error_code: "internal", stage: "complete", context: { reason: "sensitive_output" } });
    expect(JSON.stringify(answer)).not.toContain("90210443");
  });

  test("a direct call's answer is masked the same way", async () => {
    const answer = (await (await fetch(`${server.url}/api/v1/sec/pin`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ pin: PIN }) })).json()) as any;
    expect(answer).toEqual({ o: { pin: "[redacted]", twice: ["[redacted]", { deep: "[redacted]" }], plain: 12345 } });
  });
});
