// GitHub Actions' view of a run: workflow commands for steps and diagnostics, and a step summary.
// Command syntax and escaping follow @actions/core (toolkit/packages/core/src/command.ts).
import { randomUUID } from "node:crypto";
import { writeSync } from "node:fs";
import { appendFile, stat, truncate } from "node:fs/promises";
import type { DiagnosticInput } from "../capability/declaration.ts";
import type { ExecutionSnapshot } from "../execution/snapshot.ts";
import type { FailureDescriptor } from "../execution/failure.ts";
import type { EventPrinters } from "./run-reporter.ts";
import { formatDuration, location } from "./run-reporter.ts";

/** True inside a GitHub Actions job, which sets `GITHUB_ACTIONS=true` for every step. */
export function isGitHubActions(env: Record<string, string | undefined>): boolean {
  return env.GITHUB_ACTIONS === "true";
}

/** A command's message: `%`, CR and LF escaped, so a multi-line message stays one command. */
export function escapeData(text: string): string {
  return text.replace(/%/g, "%25").replace(/\r/g, "%0D").replace(/\n/g, "%0A");
}

/** A command's property value: as `escapeData`, plus `:` and `,`, which delimit properties. */
export function escapeProperty(text: string): string {
  return escapeData(text).replace(/:/g, "%3A").replace(/,/g, "%2C");
}

// The runner reads a workflow command from any line of a step's stdout or stderr that starts,
// blanks aside, with `::` (or `##[`, the older form); it splits lines at CR as well as LF.
const COMMAND_LINE = /(?:^|[\r\n])\s*(?:::|##\[)/;

/**
 * `text` made inert for the runner, to be printed at the start of a line: text holding a line that
 * the runner would obey (a capability's output, a thrown error's stack) goes between
 * `::stop-commands::<token>` and `::<token>::`, so the log shows it as it is and obeys none of it.
 * The token is random, so the text cannot end the pause itself. Other text is left unchanged.
 */
export function inertCommands(text: string, token: string = randomUUID()): string {
  if (!COMMAND_LINE.test(text)) return text;
  return `::stop-commands::${token}\n${text}${/[\r\n]$/.test(text) ? "" : "\n"}::${token}::\n`;
}

/**
 * Text that a capability or a thrown error may have shaped (the output, a failure, a stack), as
 * printed: in GitHub Actions, workflow commands in it are made inert (docs/distribution.md).
 */
export function runnerSafe(env: Record<string, string | undefined>, text: string): string {
  return isGitHubActions(env) ? inertCommands(text) : text;
}

/**
 * Under GitHub Actions, stops the runner from obeying any workflow command in what this process
 * prints from now on, until it exits: `::stop-commands::<random token>` on each of `fds` now,
 * `::<token>::` when the process exits. For `docket serve` and `docket mcp`, whose output carries
 * capability text — a file's load error, a direct call's stack, what a handler's `console.log`
 * or a child writes straight to the descriptor, in pieces or whole — and never a workflow command
 * of docket's own. Wrapping each write missed what does not go through `stream.write` (Bun's
 * console writes to the descriptor) and a command split across two writes (a tester's finding).
 * (`docket run` prints its own annotations, and wraps capability text where it prints it.)
 */
export function inertOutput(env: Record<string, string | undefined>, fds: number[], token: string = randomUUID()): void {
  if (!isGitHubActions(env)) return;
  const say = (line: string) => {
    for (const fd of fds) {
      try {
        writeSync(fd, line);
      } catch {
        // A closed descriptor prints nothing, obeyed or not.
      }
    }
  };
  say(`::stop-commands::${token}\n`);
  process.once("exit", () => say(`\n::${token}::\n`));
}

/**
 * `::add-mask::` for each secret value, so the runner blanks it in every later line of the job's
 * log, whoever prints it. The runner masks line by line, so a multi-line value is announced line
 * by line as well; lines shorter than the masking minimum are left out, as docket leaves them.
 */
export function maskCommands(values: readonly string[], minimum: number): string {
  const lines = new Set<string>();
  for (const value of values) {
    if (value.length < minimum) continue;
    lines.add(value);
    for (const line of value.split(/\r?\n/)) if (line.trim().length >= minimum) lines.add(line);
  }
  return [...lines].map((line) => `::add-mask::${escapeData(line)}\n`).join("");
}

const COMMAND_OF = { error: "error", warning: "warning", info: "notice" } as const;

/** `::error file=src/a.ts,line=3,col=7,title=bad_id::message` for one diagnostic. */
export function annotation(diagnostic: DiagnosticInput): string {
  const properties: string[] = [];
  if (diagnostic.file) properties.push(`file=${escapeProperty(diagnostic.file)}`);
  if (diagnostic.line !== undefined) properties.push(`line=${diagnostic.line}`);
  if (diagnostic.column !== undefined) properties.push(`col=${diagnostic.column}`);
  if (diagnostic.code) properties.push(`title=${escapeProperty(diagnostic.code)}`);
  const command = COMMAND_OF[diagnostic.severity] ?? "notice";
  return `::${command}${properties.length > 0 ? ` ${properties.join(",")}` : ""}::${escapeData(diagnostic.message)}`;
}

/**
 * Printers that turn steps into collapsible groups and diagnostics into annotations; the rest is
 * printed as plain lines. Groups cannot nest in GitHub's log, so a step that begins while another
 * is open closes it first, and the run's end closes whatever is still open.
 */
export function gitHubPrinters(plain: Required<EventPrinters>): EventPrinters {
  let open = false;
  const close = () => {
    if (!open) return [];
    open = false;
    return ["::endgroup::"];
  };
  return {
    ...plain,
    "execution.step": (e) => {
      const lines = close();
      open = true;
      return [...lines, `::group::${escapeData(`${e.data.title} (${e.data.id})`)}`];
    },
    "execution.step_done": (e) => [...plain["execution.step_done"](e), ...close()],
    "execution.diagnostic": (e) => [annotation(e.data)],
    "execution.completed": (e) => [...close(), ...plain["execution.completed"](e)],
  };
}

/** Appends the run's Markdown summary to the file GitHub renders on the job's page. */
export async function appendStepSummary(path: string, markdown: string): Promise<void> {
  await refusePipe(path);
  await appendFile(path, markdown.endsWith("\n") ? markdown : `${markdown}\n`, "utf8");
}

/**
 * Refuses a pipe where the runner gives a file: opened to append, a FIFO nobody reads holds the
 * run past its end for good, signals included (checking tester).
 */
async function refusePipe(path: string): Promise<void> {
  const found = await stat(path).catch(() => null);
  if (found !== null && (found.isFIFO() || found.isSocket())) throw new Error(`${path} is a pipe, not a file`);
}

/**
 * Sets a step's outputs through the `$GITHUB_OUTPUT` file, in the heredoc form of @actions/core
 * (`name<<delimiter`), so that no value can end its own line and forge another output. Appended
 * whole or not at all: a write that fails halfway (a full disk) is cut off again, since a block
 * left without its closing delimiter fails the runner's reading of every output of the step.
 */
export async function appendStepOutputs(path: string, outputs: Record<string, string>): Promise<void> {
  const delimiter = `ghadelimiter_${randomUUID()}`;
  const text = Object.entries(outputs).map(([name, value]) => `${name}<<${delimiter}\n${value}\n${delimiter}\n`).join("");
  await refusePipe(path);
  const before = await stat(path).catch(() => null);
  try {
    await appendFile(path, text, "utf8");
  } catch (error) {
    if (before?.isFile()) await truncate(path, before.size).catch(() => undefined);
    throw error;
  }
}

// GitHub limits a step summary to 1 MiB; an output bigger than this points at --format json instead.
const OUTPUT_LIMIT = 64 * 1024;

/** What the summary shows of one run: the final snapshot, and the failure when there is no execution. */
export interface SummaryFacts {
  capability: string;
  execution: ExecutionSnapshot | null;
  failure: FailureDescriptor | null;
}

/** The Markdown summary of one run: capability, state, duration, diagnostics, output or failure. */
export function stepSummary(facts: SummaryFacts): string {
  const x = facts.execution;
  const state = x?.state ?? "refused";
  const icon = state === "succeeded" ? "✅" : state === "cancelled" ? "⏹️" : "❌";
  const lines = [`### ${icon} docket run \`${facts.capability}\` — ${state}`, "", "| | |", "|---|---|"];
  lines.push(`| capability | \`${cell(facts.capability)}\` |`, `| state | ${state} |`);
  if (x) {
    lines.push(`| execution | \`${x.id}\` |`);
    if (x.duration_ms !== null) lines.push(`| duration | ${formatDuration(x.duration_ms)} |`);
  }
  if (x && x.diagnostics.length > 0) {
    lines.push("", `#### Diagnostics (${x.diagnostics.length}${x.diagnostics_dropped ? `, ${x.diagnostics_dropped} more dropped` : ""})`, "");
    lines.push("| severity | location | message | code |", "|---|---|---|---|");
    for (const d of x.diagnostics) lines.push(`| ${d.severity} | ${cell(location(d))} | ${cell(d.message)} | ${cell(d.code ?? "")} |`);
  }
  const failure = x?.failure ?? facts.failure;
  if (state === "succeeded" && x) {
    lines.push("", "#### Output", "", ...fenced(x.output));
  } else if (failure) {
    lines.push("", "#### Failure", "", `**${failure.error_code}**: ${failure.message}`, "");
    if (failure.suggestion) lines.push(`${failure.suggestion}`, "");
    lines.push(`correlation id \`${failure.correlation_id}\` · retry: ${failure.retryability} · outcome: ${failure.outcome_certainty}`);
  }
  return `${lines.join("\n")}\n`;
}

/** A table cell: pipes escaped and line breaks flattened, or the table breaks. */
function cell(text: string): string {
  return text.replace(/\|/g, "\\|").replace(/\r?\n/g, " ");
}

/** A fenced block whose fence is longer than any backtick run inside, bounded in size. */
function fenced(value: unknown): string[] {
  let text = typeof value === "string" ? value : JSON.stringify(value, null, 2) ?? "null";
  if (text.length > OUTPUT_LIMIT) text = `${text.slice(0, OUTPUT_LIMIT)}\n… (${text.length - OUTPUT_LIMIT} more characters; use --format json for the whole output)`;
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = "`".repeat(longest + 1);
  return [`${fence}${typeof value === "string" ? "text" : "json"}`, text, fence];
}
