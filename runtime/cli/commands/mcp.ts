import { finished } from "node:stream/promises";
import type { Writable } from "node:stream";
import { defineCommand } from "citty";
import { prepareCapabilityThread } from "../_capability-thread.ts";
import { bootPlane } from "../../boot.ts";
import { findCheckoutRoot } from "../../capability/checkout.ts";
import { watchCapabilities } from "../../capability/watch-capabilities.ts";
import { LimitsError, resolveLimits, type Limits } from "../../execution/limits.ts";
import { isLeaseLive, readLease } from "../../server/lease.ts";
import { bridgeStdioToHttp } from "../../mcp/bridge.ts";
import { untilHangUp } from "../../mcp/hang-up.ts";
import { serveMcpOverStdio } from "../../mcp/stdio.ts";
import { claimStdout } from "../stdout-claim.ts";
import { repeatedFlag, UsageError, type DocketCommandMeta } from "../_command-line.ts";
import { EXIT } from "../exit-code.ts";

const meta: DocketCommandMeta = {
  name: "mcp",
  description: "MCP over stdio for agents: this checkout's capabilities as tools, its executions as tools and resources.",
  examples: [
    "docket mcp",
    "docket mcp --capabilities ./checks",
    `{"mcpServers":{"docket":{"command":"docket","args":["mcp"],"cwd":"/path/to/checkout"}}}`,
  ],
  notes: [
    "Stdout carries MCP messages only; everything else goes to stderr.",
    "When `docket serve` serves this checkout, messages are forwarded to its /mcp, so the agent's executions show in its cockpit; otherwise a plane runs in this process and its executions are visible to it alone.",
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
    // First, before anything else can print: from here on stdout is the protocol's alone.
    const stdout = await claimStdout();
    const log = (line: string) => void process.stderr.write(`${line}\n`);
    const hangUp = untilHangUp(process.stdin);
    const root = findCheckoutRoot(process.cwd());
    const capabilityDirs = repeatedFlag(rawArgs, "capabilities");

    const lease = readLease(root);
    if (lease && (await isLeaseLive(lease))) {
      log(`docket mcp: forwarding to the docket server at ${lease.url}, which serves ${root}; executions show in its cockpit.`);
      if (capabilityDirs.length > 0) log("docket mcp: --capabilities is ignored: the server's own capabilities answer.");
      // A server restarted meanwhile (on another port, say) is found again through its lease.
      const relocate = async () => {
        const now = readLease(root);
        return now && (await isLeaseLive(now)) ? { url: new URL("/mcp", now.url), token: now.token } : null;
      };
      await bridgeStdioToHttp({ url: new URL("/mcp", lease.url), token: lease.token, stdin: process.stdin, stdout, hangUp, log, relocate });
      await flushed(stdout);
      return EXIT.succeeded;
    }

    prepareCapabilityThread();
    const plane = await bootPlane({ cwd: process.cwd(), storeKind: "memory", limits, capabilityDirs, importFile: (path) => import(path), log, trialLoads: true });
    for (const error of plane.registry.loadErrors()) {
      log(`docket mcp: could not load ${error.file}${error.line !== null ? `:${error.line}` : ""}: ${error.reason}`);
    }
    log(`docket mcp: no docket server serves ${root}, so executions started here are visible to this process alone (start one with docket serve).`);
    // The agent is told tools.listChanged: a capability file saved meanwhile is served and announced, as by docket serve.
    const watching = watchCapabilities(plane, { log });
    try {
      await serveMcpOverStdio(plane.engine, { stdin: process.stdin, stdout, hangUp, log });
    } finally {
      watching?.close();
      await plane.close();
    }
    await flushed(stdout);
    return EXIT.succeeded;
  },
});

/** Resolves once the last answer left for stdout: the CLI exits right after. */
async function flushed(stdout: Writable): Promise<void> {
  stdout.end();
  await finished(stdout).catch(() => undefined);
}
