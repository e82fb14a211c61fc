// Runs that come back (docs/reconciliation.md), with real processes: a `docket run` that lost its
// server keeps trying and resumes — with a server restarted on another port, found through the
// lease — and a run frozen past the server's silence reports its real end as a reconciliation.
import { afterAll, describe, expect, test } from "bun:test";
import { docket, fromSource, oneJsonDocument, removeTempDirs, spawnDocket, tempCheckout, writeFiles } from "./_harness.ts";
import { aloneLines, api, pollUntil, reportedBy, serveCheckout } from "./_report-support.ts";

afterAll(removeTempDirs);

const DEMO = ["run", "executions.demonstrate", "--format", "json", "--input"];

/** A write that takes a while: only a write's outcome is unknown when the server stops hearing it. */
const SLOW_WRITE = `import { capability } from "docket";
import * as v from "valibot";
import { setTimeout as delay } from "node:timers/promises";

export default capability({
  id: "slow.write",
  title: "Slow write",
  description: "Counts its steps slowly, as a write that takes a while.",
  effect: "write",
  input: v.object({ steps: v.number(), delay_ms: v.number() }),
  output: v.object({ steps: v.number() }),
  async handler({ steps, delay_ms }, ctx) {
    for (let i = 1; i <= steps; i++) {
      await delay(delay_ms);
      ctx.progress.progress(i, steps);
    }
    return { steps };
  },
});
`;

describe("docket run that comes back", () => {
  test("docket run whose server restarts on another port finds it through the lease and resumes: the new server holds every event", async () => {
    const checkout = tempCheckout();
    const first = await serveCheckout(checkout);
    const child = spawnDocket(fromSource, [...DEMO, '{"steps":10,"delay_ms":150}'], { cwd: checkout });
    let second: Awaited<ReturnType<typeof serveCheckout>> | null = null;
    try {
      const stdout = new Response(child.stdout).text();
      const stderr = new Response(child.stderr).text();
      await reportedBy(api(first.url), child.pid, "running");
      await first.stop();
      second = await serveCheckout(checkout);
      expect(second.url).not.toBe(first.url);
      expect(await child.exited).toBe(0);
      const run = oneJsonDocument(await stdout).execution;
      const held = await pollUntil(() => api(second!.url).get(`/api/v1/executions/get?id=${run.id}`), (s) => s.state === "succeeded", "the new server to hold the run's end");
      expect(held).toMatchObject({ actor: { kind: "cli", pid: child.pid }, last_sequence: run.last_sequence, output: run.output });
      const { events } = await api(second.url).get(`/api/v1/executions/events?id=${run.id}&limit=1000`);
      expect(events.map((e: { sequence: number }) => e.sequence)).toEqual(Array.from({ length: run.last_sequence }, (_, i) => i + 1));
      expect(aloneLines(await stderr)).toBe(0);
    } finally {
      child.kill("SIGKILL");
      await first.stop();
      await second?.stop();
    }
  }, 20_000);

  test("docket run of a write frozen past the server's silence comes back: failed unavailable stays, and its real end is recorded as the reconciliation", async () => {
    const checkout = tempCheckout();
    writeFiles(checkout, { "capabilities/slow.write.ts": SLOW_WRITE });
    const server = await serveCheckout(checkout, { limits: { report_silence_ms: 400 } });
    const http = api(server.url);
    const child = spawnDocket(fromSource, ["run", "slow.write", "--format", "json", "--input", '{"steps":6,"delay_ms":150}'], { cwd: checkout });
    try {
      const stdout = new Response(child.stdout).text();
      const stderr = new Response(child.stderr).text();
      const running = await reportedBy(http, child.pid, "running");
      child.kill("SIGSTOP");
      const silenced = await pollUntil(() => http.get(`/api/v1/executions/get?id=${running.id}`), (s) => s.state === "failed", "the frozen run to be ended for silence");
      expect(silenced.failure).toMatchObject({ error_code: "unavailable", stage: "report", outcome_certainty: "unknown" });
      child.kill("SIGCONT");
      expect(await child.exited).toBe(0);
      const document = oneJsonDocument(await stdout);
      expect(document.execution.state).toBe("succeeded");
      const held = await pollUntil(() => http.get(`/api/v1/executions/get?id=${running.id}`), (s) => s.reconciliation !== undefined, "the run's end to be recorded");
      // The server's terminal state never moved; the truth is recorded beside it.
      expect(held).toMatchObject({ state: "failed", failure: { error_code: "unavailable", correlation_id: silenced.failure.correlation_id }, finished_at: silenced.finished_at });
      expect(held.reconciliation).toMatchObject({ outcome: "applied", method: "run", actor: { kind: "cli", pid: child.pid }, evidence: { state: "succeeded", output: document.output } });
      const said = await stderr;
      expect(said).toContain(`the server at ${server.url} ended ${running.id} as failed while it could not hear this run`);
      expect(said).toContain(`the server at ${server.url} holds ${running.id} as failed and recorded this run's real end`);
      expect(aloneLines(said)).toBe(0);
      // Shown by the CLI too.
      const shown = await docket(fromSource, ["executions", "show", running.id], { cwd: checkout });
      expect(shown.stdout).toContain(`reconciled as applied by the run's own end, by cli ${child.pid}`);
    } finally {
      child.kill("SIGCONT");
      child.kill("SIGKILL");
      await server.stop();
    }
  }, 20_000);

  test("docket run of a read frozen past the server's silence comes back: failed unavailable with nothing applied, nothing to reconcile", async () => {
    const checkout = tempCheckout();
    const server = await serveCheckout(checkout, { limits: { report_silence_ms: 400 } });
    const http = api(server.url);
    const child = spawnDocket(fromSource, [...DEMO, '{"steps":6,"delay_ms":150}'], { cwd: checkout });
    try {
      const running = await reportedBy(http, child.pid, "running");
      child.kill("SIGSTOP");
      const silenced = await pollUntil(() => http.get(`/api/v1/executions/get?id=${running.id}`), (s) => s.state === "failed", "the frozen run to be ended for silence");
      expect(silenced.failure).toMatchObject({ error_code: "unavailable", stage: "report", outcome_certainty: "not_applied", retryability: "safe" });
      child.kill("SIGCONT");
      expect(await child.exited).toBe(0);
      expect(await http.get(`/api/v1/executions/get?id=${running.id}`)).toMatchObject({ state: "failed", created_at: running.created_at });
      const shown = await docket(fromSource, ["executions", "show", running.id], { cwd: checkout });
      expect(shown.stdout + shown.stderr).not.toContain("unknown");
    } finally {
      child.kill("SIGCONT");
      child.kill("SIGKILL");
      await server.stop();
    }
  }, 20_000);
});
