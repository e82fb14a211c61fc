import { capability, type CapabilityContext, type DiagnosticInput, type HostFacts } from "docket";
import * as v from "valibot";
import { constants } from "node:fs";
import { access, stat } from "node:fs/promises";
import { isAbsolute, join, relative } from "node:path";

const check = v.object({
  id: v.string(),
  title: v.string(),
  ok: v.boolean(),
  message: v.string(),
});

export default capability({
  id: "health.report",
  title: "Health report",
  description:
    "The checkout this process serves, its runtime, the loaded capabilities and the files that failed to load, the store and the limits in force: one step per check, one diagnostic per problem.",
  effect: "read",
  input: v.object({}),
  output: v.object({
    ok: v.pipe(v.boolean(), v.description("No check found an error (warnings do not count).")),
    root: v.string(),
    checks: v.array(check),
    capabilities: v.pipe(v.number(), v.description("Capabilities loaded.")),
    load_errors: v.pipe(v.number(), v.description("Capability files that failed to load.")),
    warnings: v.number(),
    runtime: v.object({ docket_version: v.string(), bun: v.nullable(v.string()), node: v.string(), platform: v.string(), arch: v.string(), pid: v.number(), uptime_ms: v.number() }),
    store: v.object({
      kind: v.string(),
      counts: v.record(v.string(), v.number()),
      fault: v.optional(v.nullable(v.object({ reason: v.string(), since: v.string() })), null),
      retained_bytes: v.optional(v.pipe(v.nullable(v.number()), v.description("Bytes of events the memory store holds, against executions_retained_bytes (past it the oldest finished executions are forgotten); null for a store that keeps them on disk.")), null),
      storage: v.optional(
        v.object({
          bytes: v.number(),
          budget_bytes: v.number(),
          over_budget: v.boolean(),
          disk_free_bytes: v.pipe(v.nullable(v.number()), v.description("Bytes free on the disk holding .docket/; null where the file system cannot say.")),
          disk_free_floor_bytes: v.number(),
          disk_low: v.pipe(v.boolean(), v.description("Free space is under disk_free_floor_bytes: new executions are refused until space is freed.")),
        }),
      ),
    }),
    workers: v.optional(
      v.nullable(
        v.object({
          execution: v.pipe(v.number(), v.description("Execution-lane workers that can take a task (not given up).")),
          direct: v.pipe(v.number(), v.description("Direct-lane workers that can take a task (not given up).")),
          fault: v.pipe(
            v.nullable(v.object({ lanes: v.array(v.string()), reason: v.string(), since: v.string() })),
            v.description("The lanes none of whose workers could start: their tasks fail at once until one starts again, which docket tries after a wait."),
          ),
        }),
      ),
      null,
    ),
    limits: v.record(v.string(), v.number()),
  }),
  examples: [{}],
  async handler(_input, ctx) {
    const host = await ctx.host();
    const checks: Array<v.InferOutput<typeof check>> = [];
    let warnings = 0;
    let errors = 0;
    const run = async (id: string, title: string, body: () => Promise<{ message: string; problems: DiagnosticInput[] }>) => {
      ctx.progress.step(id, title);
      const { message, problems } = await body();
      for (const problem of problems) {
        ctx.progress.diagnostic(problem);
        if (problem.severity === "error") errors++;
        if (problem.severity === "warning") warnings++;
      }
      const ok = !problems.some((p) => p.severity === "error");
      ctx.progress.stepDone(id, ok, message);
      checks.push({ id, title, ok, message });
    };

    await run("checkout", "Checkout", () => checkCheckout(host.root));
    await run("runtime", "Runtime", async () => ({ message: describeRuntime(host), problems: [] }));
    await run("capabilities", "Capabilities", async () => checkCapabilities(host, ctx));
    await run("store", "Execution store", async () => checkStore(host));
    if (host.workers) await run("workers", "Workers", async () => checkWorkers(host.workers!));
    await run("limits", "Limits in force", async () => checkLimits(host));

    return {
      ok: errors === 0,
      root: host.root,
      checks,
      capabilities: host.capabilities.length,
      load_errors: host.load_errors.length,
      warnings,
      runtime: host.runtime,
      store: host.store,
      workers: host.workers ?? null,
      limits: host.limits,
    };
  },
});

/** The root is a folder, is a git checkout (or docket fell back to the working directory), and `.docket` can be written. */
async function checkCheckout(root: string): Promise<{ message: string; problems: DiagnosticInput[] }> {
  const problems: DiagnosticInput[] = [];
  try {
    if (!(await stat(root)).isDirectory()) return { message: `${root} is not a folder`, problems: [{ severity: "error", code: "root_missing", message: `The checkout root ${root} is not a folder` }] };
  } catch {
    return { message: `${root} does not exist`, problems: [{ severity: "error", code: "root_missing", message: `The checkout root ${root} does not exist; start docket inside a checkout` }] };
  }
  const git = await exists(join(root, ".git"));
  if (!git) {
    problems.push({ severity: "warning", code: "not_a_checkout", message: `${root} has no .git: docket serves the working directory; start it inside a git checkout to serve the whole repository` });
  }
  const stateDir = (await exists(join(root, ".docket"))) ? join(root, ".docket") : root;
  try {
    await access(stateDir, constants.W_OK);
  } catch {
    problems.push({ severity: "warning", code: "read_only", message: `${stateDir} is not writable: artifacts and a durable store cannot be kept there` });
  }
  return { message: `${root}${git ? " (git checkout)" : " (working directory, no .git)"}`, problems };
}

function describeRuntime(host: HostFacts): string {
  const r = host.runtime;
  return `docket ${r.docket_version} on ${r.bun ? `Bun ${r.bun}` : `Node ${r.node}`}, ${r.platform}-${r.arch}, pid ${r.pid}`;
}

/** One error diagnostic per capability file that did not load, pointing at its file and line. */
function checkCapabilities(host: HostFacts, ctx: CapabilityContext): { message: string; problems: DiagnosticInput[] } {
  const problems: DiagnosticInput[] = host.load_errors.map((e) => ({
    severity: "error",
    code: "load_error",
    message: `Cannot load ${displayPath(host.root, e.file)}: ${e.reason}`,
    file: displayPath(host.root, e.file),
    ...(e.line !== null ? { line: e.line } : {}),
    ...(e.column !== null ? { column: e.column } : {}),
  }));
  const work = host.capabilities.filter((c) => c.execution !== "never").length;
  ctx.progress.log(`Capabilities: ${host.capabilities.map((c) => c.id).join(", ")}`, "debug");
  const failed = host.load_errors.length > 0 ? `; ${host.load_errors.length} failed to load` : "";
  return { message: `${host.capabilities.length} loaded (${work} runnable as executions)${failed}`, problems };
}

/** The store writes, `.docket/` is within its storage budget and its disk above its free-space floor; any failing refuses new executions. */
function checkStore(host: HostFacts): { message: string; problems: DiagnosticInput[] } {
  const { kind, counts, fault, storage, retained_bytes } = host.store;
  const problems: DiagnosticInput[] = [];
  if (fault) {
    problems.push({
      severity: "error",
      code: "store_fault",
      message: `The execution store cannot write since ${fault.since} (${fault.reason}): new executions are refused until a write succeeds; free disk space and it resumes by itself`,
    });
  }
  if (storage?.over_budget) {
    problems.push({
      severity: "error",
      code: "storage_budget",
      message: `.docket/ holds ${mib(storage.bytes)}, over its storage budget of ${mib(storage.budget_bytes)}: new executions are refused with capacity; release artifacts of finished executions (executions.release) or raise storage_budget_bytes`,
    });
  }
  const held = Object.entries(counts).filter(([, n]) => n > 0).map(([k, n]) => `${n} ${k}`).join(", ") || "empty";
  if (storage?.disk_low) {
    problems.push({
      severity: "error",
      code: "disk_low",
      message: `The disk holding .docket/ has ${mib(storage.disk_free_bytes ?? 0)} free, under the ${mib(storage.disk_free_floor_bytes)} it must keep (disk_free_floor_bytes): new executions are refused until space is freed`,
    });
  }
  const retainedLimit = host.limits.executions_retained_bytes ?? Number.POSITIVE_INFINITY;
  if (retained_bytes != null && retained_bytes > retainedLimit) {
    problems.push({
      severity: "warning",
      code: "retained_over",
      message: `The executions held hold ${mib(retained_bytes)} of events, over executions_retained_bytes (${mib(retainedLimit)}): what runs is never forgotten, nor an unknown outcome not yet reconciled while they hold less than the bound; finished ones are forgotten as new executions start`,
    });
  }
  const free = storage?.disk_free_bytes != null ? `, ${mib(storage.disk_free_bytes)} free on its disk` : "";
  const used = storage ? `; ${mib(storage.bytes)} of ${mib(storage.budget_bytes)} in use${free}` : "";
  const events = retained_bytes != null ? `; events ${mib(retained_bytes)} of ${mib(host.limits.executions_retained_bytes ?? 0)} (executions_retained_bytes)` : "";
  return { message: `${kind} store${fault ? " (cannot write)" : ""}: ${held}${events}${used}`, problems };
}

/** Each lane has a worker to run on; a lane none of whose workers could start fails its tasks at once. */
function checkWorkers(workers: NonNullable<HostFacts["workers"]>): { message: string; problems: DiagnosticInput[] } {
  const problems: DiagnosticInput[] = [];
  const { fault } = workers;
  if (fault) {
    problems.push({
      severity: "error",
      code: "no_worker",
      message: `No ${fault.lanes.join(" or ")} worker could start since ${fault.since} (${fault.reason}): such tasks fail at once, never begun; docket tries to start one again after a wait — free memory or threads, or restart the server`,
    });
  }
  return { message: `${workers.execution} execution worker(s), ${workers.direct} direct worker(s)${fault ? `; the ${fault.lanes.join(" and ")} lane${fault.lanes.length > 1 ? "s have" : " has"} none` : ""}`, problems };
}

function mib(bytes: number): string {
  return `${(bytes / 1048576).toFixed(1)} MiB`;
}

/** Limits that switch a feature off are worth a warning; the rest are reported as they are. */
function checkLimits(host: HostFacts): { message: string; problems: DiagnosticInput[] } {
  const problems: DiagnosticInput[] = [];
  const l = host.limits;
  if (l.artifacts_per_execution === 0 || l.artifact_bytes === 0 || l.artifacts_total_bytes === 0) {
    problems.push({ severity: "warning", code: "artifacts_disabled", message: "Artifacts are switched off by the limits in force: files.digest cannot write its manifest" });
  }
  if (l.max_queued === 0) {
    problems.push({ severity: "warning", code: "queue_disabled", message: "max_queued is 0: an execution started while others run is refused with capacity" });
  }
  const shown = ["max_concurrent", "max_queued", "events_retained", "input_bytes"].filter((k) => k in l).map((k) => `${k}=${l[k]}`);
  return { message: shown.join(", ") || `${Object.keys(l).length} limits`, problems };
}

/** A path inside the checkout is shown relative to it, as editors and CI annotations expect. */
function displayPath(root: string, file: string): string {
  if (!isAbsolute(file)) return file;
  const rel = relative(root, file);
  return rel.startsWith("..") || isAbsolute(rel) ? file : rel;
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}
