// The binary's entry: `docket <command>`. Sub-commands are imported on first use, so `docket run`
// never evaluates the server's modules and `docket --version` evaluates almost nothing. (In a
// bundle without code splitting, the node: built-ins every command imports still load up front.)
// First of all: a stop signal to `docket run` is held for the run from here on.
import "./_early-signals.ts";
import "./_server-token-env.ts";
import { followLauncher } from "./_npm-launcher.ts";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { defineCommand } from "citty";
import { findCheckoutRoot } from "../capability/checkout.ts";
import { DOCKET_VERSION, VERSION_FLAGS } from "../version.ts";
import { runCli } from "./_run-cli.ts";
import { settleOutput, writerOf } from "./fd-writer.ts";
import { repeatedFlag, type DocketCommandMeta } from "./_command-line.ts";
import { unnamablePathArgument, unnamableWorkingFolder } from "./_working-folder.ts";
import { EXIT } from "./exit-code.ts";

// The runtime's exit, taken before any capability file is imported: a run guards process.exit
// from capability code while it runs (worker/_own-process.ts, guardExit), and the command's end
// must exit whatever state it left that guard in.
const exitProcess = process.exit.bind(process);

const meta: DocketCommandMeta = {
  name: "docket",
  version: DOCKET_VERSION,
  description: "Every capability is one file: run it here, serve it over HTTP, a live channel, a cockpit and MCP.",
  examples: ["docket init", "docket run health.report", "docket capabilities list", "docket new hello.greet", "docket serve --port 4700"],
};

/** The root command; each sub-command lives in its own file under commands/. */
export const main = defineCommand({
  meta,
  subCommands: {
    run: () => import("./commands/run.ts").then((m) => m.default),
    capabilities: () => import("./commands/capabilities.ts").then((m) => m.default),
    executions: () => import("./commands/executions.ts").then((m) => m.default),
    serve: () => import("./commands/serve.ts").then((m) => m.default),
    mcp: () => import("./commands/mcp.ts").then((m) => m.default),
    new: () => import("./commands/new.ts").then((m) => m.default),
    init: () => import("./commands/init.ts").then((m) => m.default),
    types: () => import("./commands/types.ts").then((m) => m.default),
  },
});

/**
 * The command line as the parser takes it: `docket help [command…]` is `docket [command…] --help`,
 * as in git or npm (`docket help help` the top-level help); a `--format` given before the
 * command's words (`docket --format json executions list`) is the command's, moved after them —
 * its value was taken for a command, and the next word, a real one, refused as unknown (checking
 * tester, session 48). Nothing after `--` is moved.
 */
export function commandLine(given: readonly string[]): string[] {
  const argv = formatLast(given);
  if (argv[0] !== "help") return [...argv];
  const rest = argv[1] === "help" ? argv.slice(2) : argv.slice(1);
  return [...rest, "--help"];
}

/** `tokens` with each `--format X` (or `--format=X`) before any `--` moved to the end of that part, as `--format=X`. */
function formatLast(tokens: readonly string[]): string[] {
  const end = tokens.indexOf("--");
  const head = end === -1 ? tokens : tokens.slice(0, end);
  const kept: string[] = [];
  const formats: string[] = [];
  for (let i = 0; i < head.length; i++) {
    const token = head[i]!;
    const next = head[i + 1];
    if (token === "--format" && next !== undefined && !next.startsWith("-")) {
      formats.push(`--format=${next}`);
      i++;
    } else if (token.startsWith("--format=")) formats.push(token);
    else kept.push(token);
  }
  return [...kept, ...formats, ...(end === -1 ? [] : tokens.slice(end))];
}

if (import.meta.main) {
  // Started by the npm launcher, which waits beside it: its end ends docket too.
  followLauncher();
  // Before process.stdout is first used, which makes a pipe behind it non-blocking for good: the
  // modes found are given back at exit, so the next program of a CI step can write to the pipe.
  (await import("../adapter/bun-stdio-blocking.ts")).restoreStdioBlockingAtExit();
  // Before anything is written: stdout and stderr go through writers whose end can be awaited.
  const args = commandLine(process.argv.slice(2));
  // A server's stdout holds no document, only what handlers print: bounded, as a log is.
  const stdout = writerOf(process.stdout, { log: args[0] === "serve" });
  const stderr = writerOf(process.stderr);
  // A server's file work is not stopped by a few handlers stuck in a read (adapter/bun-file-threads.ts).
  if (args[0] === "serve" || args[0] === "mcp") await (await import("../adapter/bun-file-threads.ts")).widenFileThreads();
  const asksOnly = args.length === 0 || args.some((arg) => VERSION_FLAGS.includes(arg) || arg === "--help" || arg === "-h");
  const unnamable = asksOnly ? null : (unnamableWorkingFolder(process.cwd()) ?? unnamablePathArgument(args, process.cwd()));
  if (unnamable !== null) {
    process.stderr.write(`${unnamable}\n`);
    exitProcess(await settleOutput(EXIT.usage, stdout, stderr));
  }
  // A checkout set up by `docket init` gets this build's editor types before a command runs; not
  // for --version or --help, nor a command that does not exist, which write nothing (install.sh
  // runs --version wherever it is; a typo must not touch the checkout).
  const root = findCheckoutRoot(process.cwd());
  const known = Object.hasOwn(main.subCommands as object, args[0] ?? "");
  // A `--capabilities` folder that `docket init --capabilities` set up counts as capabilities/ does.
  const folders = known ? repeatedFlag(args, "capabilities").map((dir) => resolve(process.cwd(), dir)) : [];
  const typed = [join(root, "capabilities"), ...folders].some((folder) => existsSync(join(folder, "tsconfig.json")));
  if (!asksOnly && known && typed && args[0] !== "init" && args[0] !== "types") {
    await (await import("./editor-types.ts")).refreshEditorTypes(root, (line) => process.stderr.write(`${line}\n`), folders);
  }
  const code = await runCli(main, args);
  // Exit explicitly: an idle worker or a stray handle must not keep a finished command alive. But
  // only once a slow reader has taken every line (the last one is the verdict), and never 0 when
  // a write failed (a full disk): README.md.
  exitProcess(await settleOutput(code, stdout, stderr));
}
