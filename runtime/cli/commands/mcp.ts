import { finished } from "node:stream/promises";
import { fstatSync } from "node:fs";
import { resolve } from "node:path";
import type { Writable } from "node:stream";
import { defineCommand } from "citty";
import { prepareCapabilityThread } from "../_capability-thread.ts";
import { routeConsole } from "../_console-route.ts";
import { guardExit, SERVER_ENDING } from "../../worker/_own-process.ts";
import { bootPlane } from "../../boot.ts";
import { findCheckoutRoot } from "../../capability/checkout.ts";
import { watchCapabilities } from "../../capability/watch-capabilities.ts";
import { loadErrorReason } from "../../capability/registered.ts";
import { LimitsError, mistypedLimitVariables, resolveLimits, type Limits } from "../../execution/limits.ts";
import { buildFailure, type FailureDescriptor } from "../../execution/failure.ts";
import type { EdgeInfo } from "../../execution/plane.ts";
import { isLeaseLive, readLease, type Lease } from "../../server/lease.ts";
import { checkoutHolder, isUnleased, serverOnceStarted, startingWaitMs } from "../server-client.ts";
import { formatWindow } from "../run-reporter.ts";
import { bridgeStdioToHttp } from "../../mcp/bridge.ts";
import { untilHangUp } from "../../mcp/hang-up.ts";
import { standbyPlane } from "../../mcp/standby-plane.ts";
import { laterServerPlane } from "../../mcp/later-server-plane.ts";
import { serveMcpOverStdio } from "../../mcp/stdio.ts";
import { claimStdout } from "../stdout-claim.ts";
import { writerOf } from "../fd-writer.ts";
import { READER_LOOK_MS, readerGone } from "../../adapter/reader-gone.ts";
import { repeatedFlag, UsageError, type DocketCommandMeta } from "../_command-line.ts";
import { inertOutput } from "../github-actions.ts";
import { EXIT } from "../exit-code.ts";
import { plainText } from "../../execution/text-sanitize.ts";
import { readToEnd } from "../../adapter/read-to-end.ts";

const meta: DocketCommandMeta = {
  name: "mcp",
  repeatable: ["capabilities"],
  description: "MCP over stdio for agents: this checkout's capabilities as tools, its executions as tools and resources.",
  examples: [
    "docket mcp",
    "docket mcp --capabilities ./checks",
    `{"mcpServers":{"docket":{"command":"docket","args":["mcp"],"cwd":"/path/to/checkout"}}}`,
  ],
  notes: [
    "Stdout carries MCP messages only; everything else goes to stderr.",
    "When `docket serve` serves this checkout, messages are forwarded to its /mcp, so the agent's executions show in its cockpit; otherwise a plane runs in this process and its executions are visible to it alone.",
    "A server that holds the checkout and does not answer (stopped, frozen, too busy) is no missing one: only direct calls of read capabilities run here, and everything else is refused, naming it, until docket mcp is started again.",
    "A server started on the checkout after docket mcp is seen within about 2 s: while it holds the checkout, starts and direct writes are refused here, naming it; restart docket mcp to forward to it.",
    "Limits come from DOCKET_* variables when the plane runs here.",
    "A plane run here watches the capability folders like docket serve: a change reloads them and tells the agent (notifications/tools/list_changed).",
  ],
};

/** `docket mcp` (README.md): forwards to the checkout's server, or serves a plane of its own. */
export default defineCommand({
  meta,
  args: {
    capabilities: { type: "string", description: "Also load the capability files of DIR (repeatable; when no server serves the checkout)", valueHint: "DIR" },
  },
  async run({ rawArgs }) {
    const command = "docket mcp";
    let limits: Limits;
    try {
      limits = resolveLimits({ env: process.env });
    } catch (error) {
      if (error instanceof LimitsError) throw new UsageError(`${error.message}.`, command);
      throw error;
    }
    // A folder given as stdin (`docket mcp < /tmp`) has no messages to read: said, not an EISDIR stack (MCP/CLI checking tester, session 48).
    if (stdinIsFolder()) throw new UsageError("docket mcp reads JSON-RPC messages, one a line, on stdin, but its stdin is a folder; start it from an MCP client, or give it a file or a pipe of messages.", command);
    // First, before anything else can print: from here on stdout is the protocol's alone.
    const stdout = await claimStdout();
    // Capability text on stderr never acts as a workflow command; stdout is the protocol's (one JSON message a line).
    inertOutput(process.env, [2]);
    // What handlers threw reaches this log: none of their escapes reaches the terminal.
    const log = (line: string) => void process.stderr.write(`${plainText(line)}\n`);
    for (const note of mistypedLimitVariables(process.env)) log(note);
    // An agent that closed its end of stdout can be answered no more: the session ends as on a signal.
    // An idle session, or one whose calls run long, writes nothing that would find it gone: asked every second.
    const protocolOut = writerOf(process.stdout);
    protocolOut.watchReader(readerGone, READER_LOOK_MS);
    // Still watched once stdin ends: a signal or stdout closed then stops what is left at once.
    const { hangUp, stopNow } = untilHangUp(process.stdin, protocolOut.closed, () => readToEnd(0));
    const root = findCheckoutRoot(process.cwd());
    const capabilityDirs = repeatedFlag(rawArgs, "capabilities");

    const { answering: server, silent } = await locateServer(root, log, await startingWaitMs(root, capabilityDirs.map((dir) => resolve(process.cwd(), dir)), limits.load_timeout_ms));
    if (server) {
      log(`docket mcp: forwarding to the docket server at ${server.url}, which serves ${root}; executions show in its cockpit.`);
      if (capabilityDirs.length > 0) log("docket mcp: --capabilities is ignored: the server's own capabilities answer.");
      // A server restarted meanwhile (on another port, say) is found again through its lease.
      const relocate = async () => {
        const now = readLease(root);
        return now && (await isLeaseLive(now)) ? { url: new URL("/mcp", now.url), token: now.token } : null;
      };
      await bridgeStdioToHttp({ url: new URL("/mcp", server.url), token: server.token, stdin: process.stdin, stdout, hangUp, stopNow, log, relocate });
      await flushed(stdout);
      return EXIT.succeeded;
    }

    prepareCapabilityThread();
    // What a file's top level prints on this thread never holds it (stdout is the protocol's: stderr, by claimStdout).
    routeConsole();
    // Capability code on this thread (a file's top level) may not end the session; the command's end exits (main.ts).
    guardExit(SERVER_ENDING);
    const plane = await bootPlane({ cwd: process.cwd(), storeKind: "memory", limits, capabilityDirs, importFile: (path) => import(path), log, trialLoads: true });
    for (const error of plane.registry.loadErrors()) {
      log(`docket mcp: could not load ${plainText(error.file)}${error.line !== null ? `:${error.line}` : ""}: ${loadErrorReason(error)}`);
    }
    if (silent) log(`docket mcp: the docket server (pid ${silent.pid}) at ${silent.url} holds ${root} and does not answer (stopped, frozen or too busy), so only direct calls of read capabilities run here; everything else is refused until docket mcp is started again with the server answering.`);
    else log(`docket mcp: no docket server serves ${root}, so executions started here are visible to this process alone (start one with docket serve).`);
    // The agent is told tools.listChanged: a capability file saved meanwhile is served and announced, as by docket serve.
    const watching = watchCapabilities(plane, { log });
    // A server started on the checkout later (the agent's host starts docket mcp first, the user
    // docket serve after): looked for, so that no start runs here, invisible to it.
    const later = silent ? null : watchForServer(root, log);
    try {
      // Beside a silent server, a plane of its own could run a run_id a second time (the server may hold it already).
      const served = silent
        ? standbyPlane(plane.engine, (what, edge) => silentServerFailure(root, silent, what, edge))
        : laterServerPlane(plane.engine, () => later!.found() !== null, (what, edge) => laterServerFailure(root, later!.found()!, what, edge));
      await serveMcpOverStdio(served, { stdin: process.stdin, stdout, hangUp, stopNow, log });
    } finally {
      later?.close();
      watching?.close();
      await plane.close();
    }
    await flushed(stdout);
    return EXIT.succeeded;
  },
});

/**
 * The checkout's server as docket mcp finds it: one that answers (forwarded to), one that holds
 * the checkout and does not answer (silent: stopped, frozen, too busy), or neither.
 */
async function locateServer(root: string, log: (line: string) => void, loadingMs: number): Promise<{ answering: Lease | null; silent: Lease | null }> {
  // A server still starting (`docket serve &` just before) is waited for, as a --run-id run waits.
  const found = await serverOnceStarted(root, (holder, waitMs) => log(`docket mcp: the docket server${holder.pid ? ` (pid ${holder.pid})` : ""} serving ${root} is starting (loading its capability files); waiting up to ${formatWindow(waitMs)} for it to answer.`), loadingMs);
  if (found === null) return { answering: null, silent: null };
  if ("server" in found) return { answering: found.lease, silent: null };
  const holder = found.holder;
  if (isUnleased(holder)) return { answering: null, silent: holder };
  // A busy server (parsing a large input, say) answers late, and is still the checkout's server.
  return (await isLeaseLive(holder, { timeout_ms: BUSY_SERVER_MS })) ? { answering: holder, silent: null } : { answering: null, silent: holder };
}

/** How long a server that holds the checkout and did not answer the first look is given to answer a second. */
const BUSY_SERVER_MS = 5_000;

/**
 * The failure of a call refused beside a silent server: nothing ran, what to do to reach it. The
 * server's state is looked at again, so that one stopped since is not said to hold the checkout.
 */
function silentServerFailure(root: string, silent: Lease, what: string, edge: EdgeInfo): FailureDescriptor {
  const holds = checkoutHolder(root)?.pid === silent.pid;
  const state = holds ? "holds this checkout and did not answer when docket mcp started (stopped, frozen or too busy)" : "did not answer when docket mcp started and has stopped since";
  return buildFailure({
    error_code: "unavailable",
    stage: "admit",
    message: `Cannot ${what}: the docket server (pid ${silent.pid}) at ${silent.url} ${state}. docket mcp does not run it in a plane of its own beside that server, where a run_id could run a second time and the server would not know of it; nothing ran.`,
    suggestion: holds
      ? `Once the server answers (kill -CONT ${silent.pid} if it was stopped), or after stopping it (kill ${silent.pid}), restart docket mcp (reconnect the docket MCP server in your client) and call again; the same run_id is safe. Direct calls of read capabilities work meanwhile.`
      : "Restart docket mcp (reconnect the docket MCP server in your client) and call again: it forwards to a server that answers, or runs a plane of its own when none serves the checkout.",
    retryability: "after_delay",
    context: { root, pid: silent.pid, url: silent.url },
    request_id: edge.request_id,
    trace_id: edge.trace_id,
  });
}

/** How often a standalone docket mcp looks for a server started on its checkout since. */
const LATER_SERVER_LOOK_MS = 2000;

/**
 * Looks every LATER_SERVER_LOOK_MS whether a server holds the checkout — answering or not: one
 * still loading its files (its lock held, no lease yet) or frozen is there all the same, and a
 * write run here beside it would be invisible to it (checking tester, session 44). `found` is the
 * holder as last seen (null: none); each change is said once on stderr. `close` stops looking.
 */
function watchForServer(root: string, log: (line: string) => void): { found(): Lease | null; close(): void } {
  let found: Lease | null = null;
  const where = (holder: Lease) => (isUnleased(holder) ? "" : ` at ${holder.url}`);
  const timer = setInterval(() => {
    let holder: Lease | null;
    try {
      holder = checkoutHolder(root);
    } catch {
      return;
    }
    if (holder?.pid === found?.pid && holder?.url === found?.url) return;
    if (holder !== null) {
      log(`docket mcp: a docket server (pid ${holder.pid})${where(holder)} now holds ${root}. Executions and writes are refused here while it does (they would be invisible to it, and a run_id could run twice); restart docket mcp (reconnect it in your client) to forward to that server.`);
    } else {
      log(`docket mcp: the docket server (pid ${found!.pid}) no longer holds ${root}: executions and writes run here again, visible to this process alone.`);
    }
    found = holder;
  }, LATER_SERVER_LOOK_MS);
  timer.unref?.();
  return { found: () => found, close: () => clearInterval(timer) };
}

/** The failure of a start or write refused while a server holds the checkout: nothing ran, and how to reach it. */
function laterServerFailure(root: string, server: Lease, what: string, edge: EdgeInfo): FailureDescriptor {
  const where = isUnleased(server) ? " (still starting, or frozen: it has written no address)" : ` at ${server.url}`;
  return buildFailure({
    error_code: "unavailable",
    stage: "admit",
    message: `Cannot ${what}: a docket server (pid ${server.pid})${where} started serving ${root} after this docket mcp, which runs a plane of its own. Run here, it would be invisible to that server and its cockpit, and a run_id the server also takes would run twice; nothing ran.`,
    suggestion: "Restart docket mcp (reconnect the docket MCP server in your client) and call again: it then forwards to that server. The executions this docket mcp started before can still be read and cancelled here; direct calls of read capabilities work too.",
    retryability: "after_delay",
    context: { root, pid: server.pid, ...(isUnleased(server) ? {} : { url: server.url }) },
    request_id: edge.request_id,
    trace_id: edge.trace_id,
  });
}

/** Resolves once the last answer left for stdout: the CLI exits right after. */
async function flushed(stdout: Writable): Promise<void> {
  stdout.end();
  await finished(stdout).catch(() => undefined);
}

/** Whether stdin is a folder (a shell's `< dir`), which has no line to read. */
function stdinIsFolder(): boolean {
  try {
    return fstatSync(0).isDirectory();
  } catch {
    return false;
  }
}
