import { defineCommand } from "citty";
import { lstatSync, statSync, type Stats } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { firstPositional, repeatedFlag, UsageError, type DocketCommandMeta } from "../_command-line.ts";
import { applyInputEnv, readInput } from "../_input.ts";
import { claimStdout, writeClaimed } from "../stdout-claim.ts";
import { runLocally } from "../local-run.ts";
import { existingFolders } from "../_capability-folders.ts";
import { recordUsageRefusal } from "../_usage-refusal.ts";
import { writerOf } from "../fd-writer.ts";
import { defaultLimits, resolveLimits } from "../../execution/limits.ts";
import { MAX_DEADLINE_MS } from "../../execution/engine.ts";

const meta: DocketCommandMeta = {
  name: "run",
  repeatable: ["input-env", "capabilities"],
  description: "Run a capability as an execution in this process: progress on stderr, output on stdout.",
  examples: [
    `docket run files.digest --input '{"path":"src"}'`,
    `docket run ./checks/release.check.ts --input @input.json --format json`,
    `echo '{"steps":3}' | docket run executions.demonstrate --input - --deadline-ms 60000`,
    `docket run deploy.notify --input '{"channel":"ops"}' --input-env token=SLACK_TOKEN`,
  ],
  notes: [
    "Exit codes: 0 succeeded, 1 failed, 2 usage or invalid input, 130 cancelled.",
    "Stdout holds the output alone: what a capability prints (console.log, a child with inherited stdio) goes to stderr.",
    "Ctrl-C asks the capability to stop, and stops it DOCKET_GRACE_MS later if it has not; a second Ctrl-C stops it at once.",
    "In GitHub Actions, steps become log groups, diagnostics annotations, and a summary goes to $GITHUB_STEP_SUMMARY; every sensitive input value is announced with ::add-mask:: before anything else; the step's outputs are execution-id, state and result-file.",
    "A sensitive value is masked as [redacted] in everything the run prints and reports; pass it with --input-env so it is not on the command line either.",
    "Limits come from DOCKET_* variables (DOCKET_GRACE_MS, DOCKET_LOG_LINE_BYTES, …).",
  ],
  // A command line refused (exit 2) is a refused run: --result-file and the job's outputs say so.
  onUsageError: ({ message, tokens, args }) => {
    const at = firstPositional(tokens, args);
    const files = repeatedFlag(tokens, "result-file");
    const formats = repeatedFlag(tokens, "format");
    return recordUsageRefusal({
      // Through stdout's own writer: once the run claimed stdout, process.stdout is sent to stderr.
      ...(formats.length > 0 && formats.every((format) => format === "json") ? { stdout: (text: string) => writerOf(process.stdout).write(text) } : {}),
      cwd: process.cwd(),
      env: process.env,
      target: at === -1 ? undefined : tokens[at],
      resultFile: files.length === 1 ? writableResultFile(files[0]!) : undefined,
      message,
      stderr: (text) => void process.stderr.write(text),
    });
  },
};

/** `docket run <capability|./file.ts>` (README.md). */
export default defineCommand({
  meta,
  args: {
    target: { type: "positional", required: true, description: "A capability id (files.digest) or a capability file (./check.ts), run Deno-style", valueHint: "capability|./file.ts" },
    input: { type: "string", description: "The input: inline JSON, @path to a JSON file, or - to read stdin", valueHint: "JSON|@file|-" },
    "input-env": { type: "string", description: "Fill the input's field from the environment variable VAR (repeatable), so a secret never appears in ps", valueHint: "field=VAR" },
    format: { type: "enum", options: ["text", "json"], default: "text", description: "text: the output as readable text; json: one JSON document {execution, output|failure}" },
    "run-id": { type: "string", description: "Idempotency key, [A-Za-z0-9._:-]{1,128}", valueHint: "ID" },
    "deadline-ms": { type: "string", description: "Cancel after N ms, counted from now (queue time included); a handler still running DOCKET_GRACE_MS later has its worker terminated and the run fails deadline_exceeded", valueHint: "N" },
    capabilities: { type: "string", description: "Also load the capability files of DIR (repeatable)", valueHint: "DIR" },
    "result-file": { type: "string", description: "Also write the JSON document {execution, output|failure} to PATH, whatever --format", valueHint: "PATH" },
  },
  async run({ args, rawArgs }) {
    const deadline = args["deadline-ms"];
    const deadlineMs = deadline === undefined ? undefined : deadlineFlag(deadline);
    // Before any capability file is imported: stdout is the run's result alone, and whatever a
    // capability prints (at load, in its handler, from a child) goes to stderr with the progress.
    const stdout = await claimStdout();
    const sources = { cwd: process.cwd(), stdin: () => process.stdin, maxBytes: inputLimit(process.env), say: (line: string) => void process.stderr.write(`${line}\n`) };
    const input = applyInputEnv(await readInput(args.input, sources), repeatedFlag(rawArgs, "input-env"), process.env);
    return runLocally({
      cwd: process.cwd(),
      env: process.env,
      target: args.target,
      input,
      format: args.format === "json" ? "json" : "text",
      runId: args["run-id"],
      deadlineMs,
      capabilityDirs: existingFolders(repeatedFlag(rawArgs, "capabilities"), "docket run"),
      resultFile: resultFile(args["result-file"]),
      output: { stdout: (text) => writeClaimed(stdout, text), stderr: (text) => void process.stderr.write(text), stderrIsTTY: process.stderr.isTTY === true },
    });
  },
});

/** The full `--result-file` path when it names a file in a folder that exists, else undefined. */
function writableResultFile(path: string): string | undefined {
  try {
    return resultFile(path);
  } catch {
    return undefined;
  }
}

/** The `--result-file` path, refused before anything runs when it names no file in a folder that exists. */
function resultFile(path: string | undefined): string | undefined {
  if (path === undefined) return undefined;
  const full = resolve(process.cwd(), path);
  // Each case in its own words: `/tmp`, a folder that exists, was told to be "in a folder that exists" (MCP/CLI tester, session 48).
  const refuse = (why: string) => new UsageError(`--result-file ${JSON.stringify(path)} cannot be written: ${why}`, "docket run");
  if (path.trim() === "") throw refuse("it names no file; give a file path, e.g. --result-file result.json.");
  const target = statOrNull(full);
  // A path ending in a separator, `.` or `..` names a folder, which resolve() would take for a file of its name.
  if (target?.isDirectory() || /(?:^|[\\/])\.{0,2}$/.test(path)) throw refuse(`it names a folder; give a file path, e.g. --result-file ${join(path, "result.json")}.`);
  // A link to nothing failed only once the run had run (round-2 checking tester, session 48).
  if (target === null && lstatOrNull(full)?.isSymbolicLink()) throw refuse("it is a symbolic link to nothing; remove it, or give another path.");
  const folder = dirname(full);
  const folderStatus = statOrNull(folder);
  if (folderStatus === null) throw refuse(`its folder ${folder} does not exist; make it first, or give a file path in a folder that exists.`);
  // Checked before anything runs: a file where its folder should be failed only after the write ran (checking tester, session 48).
  if (!folderStatus.isDirectory()) throw refuse(`${folder} is a file, not a folder; give a file path in a folder that exists.`);
  return full;
}

/** The input_bytes limit in force; a DOCKET_* value out of range is refused by the run itself, before the input is used. */
function inputLimit(env: Record<string, string | undefined>): number {
  try {
    return resolveLimits({ env }).input_bytes;
  } catch {
    return defaultLimits().input_bytes;
  }
}

/** `--deadline-ms` as milliseconds, or why it is none: the bounds of a start's deadline_ms, said of the flag. */
function deadlineFlag(text: string): number | { problem: string } {
  const value = /^\d+$/.test(text.trim()) ? Number(text) : Number.NaN;
  if (value >= 1 && value <= MAX_DEADLINE_MS) return value;
  return { problem: `--deadline-ms must be a whole number of milliseconds from 1 to ${MAX_DEADLINE_MS} (about 24.8 days), got ${JSON.stringify(text)}.` };
}

function lstatOrNull(path: string): Stats | null {
  try {
    return lstatSync(path);
  } catch {
    return null;
  }
}

function statOrNull(path: string): Stats | null {
  try {
    return statSync(path);
  } catch {
    return null;
  }
}
