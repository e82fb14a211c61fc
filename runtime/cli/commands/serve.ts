import { defineCommand, type ArgsDef } from "citty";
import { plainText } from "../../execution/text-sanitize.ts";
import { prepareCapabilityThread } from "../_capability-thread.ts";
import { routeConsole } from "../_console-route.ts";
import { guardExit, SERVER_ENDING } from "../../worker/_own-process.ts";
import { LIMIT_SPECS, limitFlagName, LimitsError, mistypedLimitVariables, resolveLimits, type Limits } from "../../execution/limits.ts";
import { installShutdown } from "../../server/shutdown.ts";
import { lockCheckout, type CheckoutLock } from "../../server/checkout-lock.ts";
import { findCheckoutRoot } from "../../capability/checkout.ts";
import { repeatedFlag, UsageError, type DocketCommandMeta } from "../_command-line.ts";
import { inertOutput } from "../github-actions.ts";
import { settleOutput, writerOf } from "../fd-writer.ts";
import { portHolder, portTakenMessage } from "../_port-holder.ts";
import { StoreDamagedError, storeDamagedRemedy } from "../../store/store.ts";

const meta: DocketCommandMeta = {
  name: "serve",
  repeatable: ["capabilities", "allow-host"],
  description: "Serve this checkout's capabilities: HTTP API, live channel (/events), cockpit and MCP, on one port.",
  examples: ["docket serve", "docket serve --port 8080 --open", "DOCKET_TOKEN=… docket serve --host 0.0.0.0 --max-concurrent 4"],
};

const LIMIT_KEYS = Object.keys(LIMIT_SPECS) as Array<keyof Limits>;

/** One `--<limit>` flag per limit (`--max-concurrent`, `--heartbeat-ms`, …), documented from LIMIT_SPECS. */
const limitArgs: ArgsDef = Object.fromEntries(
  LIMIT_KEYS.map((key) => [limitFlagName(key), { type: "string", valueHint: "N", description: `${LIMIT_SPECS[key].doc} (default ${LIMIT_SPECS[key].default}, ${LIMIT_SPECS[key].min}..${LIMIT_SPECS[key].max})` }]),
);

const args = {
  port: { type: "string", default: "4700", description: "Port to listen on (0 picks a free one)", valueHint: "N" },
  host: { type: "string", default: "127.0.0.1", description: "Address to bind; anything but loopback requires a token", valueHint: "ADDRESS" },
  store: { type: "enum", options: ["sqlite", "memory"], default: "sqlite", description: "Where executions are kept: sqlite (.docket/state.db, survives restarts) or memory" },
  capabilities: { type: "string", description: "Also load the capability files of DIR (repeatable)", valueHint: "DIR" },
  "allow-host": { type: "string", description: "Accept this Host name besides addresses and localhost (repeatable)", valueHint: "NAME" },
  token: { type: "string", description: "Require Authorization: Bearer TOKEN (generated when binding beyond loopback); DOCKET_TOKEN in the environment keeps it out of ps", valueHint: "TOKEN" },
  open: { type: "boolean", description: "Open the cockpit in a browser" },
  watch: { type: "boolean", default: true, description: "Reload capability files within a second of a change (--no-watch: load them once)" },
  ...limitArgs,
} as const satisfies ArgsDef;

/** `docket serve` (README.md): runs until Ctrl-C or SIGTERM, which stop it cleanly. */
export default defineCommand({
  meta,
  args,
  async run({ args: parsed, rawArgs }) {
    const command = "docket serve";
    const port = String(parsed.port).trim();
    if (!/^\d+$/.test(port) || Number(port) > 65535) throw new UsageError(`--port must be a whole number from 0 to 65535, got ${JSON.stringify(parsed.port)}.`, command);
    const overrides: Partial<Record<keyof Limits, unknown>> = {};
    for (const key of LIMIT_KEYS) {
      const value = (parsed as Record<string, unknown>)[limitFlagName(key)];
      if (value !== undefined) overrides[key] = value;
    }
    let limits: Limits;
    try {
      limits = resolveLimits({ env: process.env, overrides });
    } catch (error) {
      if (error instanceof LimitsError) throw new UsageError(`${error.message}.`, command);
      throw error;
    }

    prepareCapabilityThread();
    // What a file's top level prints on this thread never holds it (a stderr nobody reads).
    routeConsole();
    // Capability code on this thread (a file's top level) may not end the server; its own stop does.
    const exitGuard = guardExit(SERVER_ENDING);
    // Capability text (load errors, stacks, what handlers print) never acts as a workflow command.
    inertOutput(process.env, [1, 2]);
    // The log holds what handlers threw (stacks, messages): no escape of theirs reaches the terminal or the log file.
    const log = (line: string) => void process.stderr.write(`${plainText(line)}\n`);
    for (const note of mistypedLimitVariables(process.env)) log(note);
    // "[::1]", as a URL writes it, is the address ::1 (bracketed again, it made http://[[::1]]:port);
    // anything else with brackets, a slash or a space is no address nor name.
    const host = String(parsed.host).replace(/^\[(.*)\]$/, "$1");
    if (host === "" || /[[\]\s/]/.test(host)) {
      throw new UsageError(`--host must be an address or a name of this machine, like 127.0.0.1, ::1 or localhost, got ${JSON.stringify(String(parsed.host).slice(0, 80))}.`, command);
    }
    // Set but empty (a secret the environment was not given) is no token: said, not served open.
    if (parsed.token === undefined && process.env.DOCKET_TOKEN !== undefined && process.env.DOCKET_TOKEN.trim() === "") {
      throw new UsageError("Cannot serve: DOCKET_TOKEN is set but empty; set it to the token, or unset it to serve without one (or with one generated, beyond loopback).", command);
    }
    const token = parsed.token ?? (process.env.DOCKET_TOKEN || null);
    // The server's credential is no handler's business: a worker, and every child it runs
    // (test runners, npm scripts), would otherwise inherit it with the environment, and print it.
    delete process.env.DOCKET_TOKEN;
    // The checkout's lock first, before the server's modules (the cockpit, the MCP SDK: about
    // 0.4 s of loading): a `docket run --run-id` started with `docket serve &` looked before the
    // lock was taken, ran as a run without a server, and was never seen by it (checking tester).
    // Taken or refused here, startServer reports it as it does its own.
    let lock: CheckoutLock | null | undefined;
    let serveModule: typeof import("../../server/serve.ts") | undefined;
    let server;
    // The checkout moved or deleted under the server: it stops, as on a signal, and exits 1.
    let checkoutGone = () => undefined as void;
    try {
      lock = lockCheckout(findCheckoutRoot(process.cwd()));
      serveModule = await import("../../server/serve.ts");
      const { defaultMounts } = await import("../../server/default-mounts.ts");
      server = await serveModule.startServer({
        lock,
        cwd: process.cwd(),
        host,
        port: Number(port),
        storeKind: parsed.store === "memory" ? "memory" : "sqlite",
        limits,
        capabilityDirs: repeatedFlag(rawArgs, "capabilities"),
        allowedHosts: repeatedFlag(rawArgs, "allow-host"),
        // From the environment, the token is not in the process's arguments, which ps shows to every user.
        token,
        runtime: "bun",
        importFile: (path) => import(path),
        mounts: defaultMounts,
        watch: parsed.watch !== false,
        log,
        onCheckoutGone: () => checkoutGone(),
      });
    } catch (error) {
      // Another server on this checkout, a bad token, a port in use, an unusable store file: the operator fixes it.
      const disk = isDiskRefusal(error) || ["CheckoutLockError", "DocketDirError"].includes((error as Error)?.name);
      if (isAddressUnusable(error)) {
        throw new UsageError(`Cannot serve: cannot listen on --host ${host} (${(error as { code: string }).code}): it is not an address of this machine. Give one of its addresses, such as 127.0.0.1 (the default) or ::1.`, command);
      }
      // Bun says only "Is port N in use?": who holds it (another docket server?) and the way out are said instead.
      if (isAddressInUse(error)) {
        throw new UsageError(`Cannot serve: ${portTakenMessage(host, Number(port), await portHolder(host, Number(port)))}`, command, { pointToHelp: false });
      }
      const another = serveModule !== undefined && error instanceof serveModule.ServerAlreadyRunningError;
      if (another || error instanceof RangeError || disk || (error as Error)?.name === "StoreFileError") {
        // Only a bad flag is answered by the help; another server, the disk or a store file is not.
        throw new UsageError(`Cannot serve: ${(error as Error).message}`, command, { pointToHelp: error instanceof RangeError });
      }
      // Damaged pages found while the store opened (recovery reads every unfinished execution): the
      // file must be put back or moved aside by a person; a crash's stack says none of that.
      if (error instanceof StoreDamagedError) {
        throw new UsageError(`Cannot serve: ${error.message} ${storeDamagedRemedy(error.path).replace("Stop docket serve, then put", "Put")}`, command, { pointToHelp: false });
      }
      throw error;
    }
    // A clean stop exits once stderr has taken every line (the last says it stopped), and never 0
    // when a line was lost (a full disk); a second signal leaves at once (fd-writer.ts hands over
    // what the reader takes then).
    installShutdown(server, { log: server.log, exit: (code) => void exitWhenWritten(code, exitGuard.exit) });
    const stopped = server;
    checkoutGone = () => {
      const exit = () => void exitWhenWritten(1, exitGuard.exit);
      stopped.stop("server stopping (its checkout was moved or deleted)").then(exit, exit);
    };
    if (parsed.open) void openBrowser(`${server.url}/cockpit`, server.log);
    // Runs until a signal; installShutdown stops the server and exits the process.
    return new Promise<number>(() => {});
  },
});

/** Exits with `code` (130 at once), or once stdout and stderr have taken what was written (settleOutput). */
async function exitWhenWritten(code: number, exit: (code: number) => never): Promise<void> {
  if (code === 130) return exit(code);
  exit(await settleOutput(code, writerOf(process.stdout), writerOf(process.stderr)));
}

/** `.docket/` could not be written at all: a full, read-only or forbidden disk. */
function isDiskRefusal(error: unknown): boolean {
  return ["ENOSPC", "EDQUOT", "EROFS", "EACCES", "EPERM"].includes((error as { code?: string } | null)?.code ?? "");
}

/** --host names no address of this machine: not an address at all, or another machine's. */
function isAddressUnusable(error: unknown): boolean {
  return ["EINVAL", "EADDRNOTAVAIL", "ENOTFOUND", "EAI_NONAME", "EAI_AGAIN"].includes((error as { code?: string } | null)?.code ?? "");
}

function isAddressInUse(error: unknown): boolean {
  const e = error as { code?: string; message?: string } | null;
  return e?.code === "EADDRINUSE" || /address already in use|EADDRINUSE/i.test(e?.message ?? "");
}

/** Best effort: the URL is already printed, so a machine without a browser loses nothing. */
async function openBrowser(url: string, log: (line: string) => void): Promise<void> {
  const [command, ...rest] = process.platform === "darwin" ? ["open"] : process.platform === "win32" ? ["cmd", "/c", "start", ""] : ["xdg-open"];
  try {
    // Imported here: only --open needs it.
    const { spawn } = await import("node:child_process");
    const child = spawn(command!, [...rest, url], { stdio: "ignore", detached: true });
    child.on("error", () => log(`Could not open a browser; open ${url} yourself.`));
    child.unref();
  } catch {
    log(`Could not open a browser; open ${url} yourself.`);
  }
}
