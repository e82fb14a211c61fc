import { defineCommand } from "citty";
import { findCheckoutRoot } from "../../capability/checkout.ts";
import { impossibleIdDate, isExecutionId } from "../../execution/execution-id.ts";
import { resolveLimits } from "../../execution/limits.ts";
import { buildFailure, type FailureDescriptor } from "../../execution/failure.ts";
import { CANCEL_WORDS, CANCEL_WORDS_PAST } from "../../execution/cancel-words.ts";
import type { ExecutionEvent } from "../../execution/protocol.ts";
import type { ExecutionSnapshot, ReconciliationSnapshot } from "../../execution/snapshot.ts";
import type { ReconcileReceipt } from "../../execution/plane.ts";
import { EXECUTION_STATES, isTerminal } from "../../execution/state-machine.ts";
import { newTraceId, requestIdFrom } from "../../server/edge-ids.ts";
import { UsageError, type DocketCommandMeta } from "../_command-line.ts";
import { writeStdout } from "../_run-cli.ts";
import { writerOf } from "../fd-writer.ts";
import { terminalStyle, type TerminalStyle } from "../_terminal.ts";
import { EXIT, exitCodeOf, failureText } from "../exit-code.ts";
import { runnerSafe } from "../github-actions.ts";
import { createRunReporter, formatDuration, formatWindow, location, plainPrinters } from "../run-reporter.ts";
import { findServer, followEvents, isUnleased, readEvents, serverOnceStarted, ServerUnreachableError, startingWaitMs, type EventsOutcome, type ServerClient } from "../server-client.ts";
import type { Lease } from "../../server/lease.ts";
import { READER_LOOK_MS, readerGone } from "../../adapter/reader-gone.ts";
import { jsonText } from "../_json-text.ts";
import { oneLinePlain } from "../../execution/text-sanitize.ts";
import { withoutColour } from "../../execution/text-colour.ts";

const format = { type: "enum" as const, options: ["text", "json"], default: "text", description: "text: for a person; json: JSON (events: one event per line)" };
const idArg = { type: "positional", required: true, description: "An execution id, like x-20260908T010203Z-0a1b2c3d", valueHint: "id" } as const;

const NOTES = [
  "These commands ask the server serving this checkout (its lease, .docket/lease.json, with its token).",
  "Exit codes: 0 done, 1 no server serves the checkout or the server refused, 2 usage (a bad flag or id shape, an unknown execution).",
];

/** Where a command writes; colour follows each stream. */
interface Out {
  style: TerminalStyle;
  errStyle: TerminalStyle;
  json: boolean;
  note(line: string): void;
  /**
   * Text shaped by executions (outputs, messages, notes) as printed: in GitHub Actions, workflow
   * commands in it are made inert (docs/distribution.md). Each text starts a line.
   */
  shown(text: string): string;
}

function out(formatArg: string): Out {
  const errStyle = terminalStyle(process.stderr, process.env);
  const style = terminalStyle(process.stdout, process.env);
  return {
    style,
    errStyle,
    json: formatArg === "json",
    note: (line) => void process.stderr.write(`${errStyle.dim(line)}\n`),
    // Without colour on stdout, none of a handler's either (a log line, a step title): NO_COLOR and a pipe get plain text.
    shown: (text) => runnerSafe(process.env, style.color ? text : withoutColour(text)),
  };
}

/** A refusal or a missing server, projected once: text on stderr, `{error}` on stdout for json, the exit code of its code. */
async function fail(o: Out, failure: FailureDescriptor): Promise<number> {
  if (o.json) await writeStdout(`${JSON.stringify({ error: failure }, null, 2)}\n`);
  process.stderr.write(o.shown(failureText(failure, o.errStyle)));
  return exitCodeOf({ state: null, failure });
}

/** The failure of "no server here", saying how to start one (README.md). */
function noServer(root: string, why: string): FailureDescriptor {
  return buildFailure({
    error_code: "unavailable",
    stage: "admit",
    message: `No docket server serves ${root}${why}, so there are no executions to ask about.`,
    suggestion: "Start one in this checkout with `docket serve` (it serves until Ctrl-C), then run this again.",
    request_id: requestIdFrom(undefined),
    trace_id: newTraceId(),
    context: { root },
  });
}

/** The failure of a server that holds the checkout and does not answer (stopped, frozen, or too busy). */
function frozenServer(root: string, holder: Lease, waitedMs: number | null): FailureDescriptor {
  const pid = holder.pid > 0 ? ` (pid ${holder.pid})` : "";
  // Holding the checkout with no lease written is, most often, a server still loading its capability files.
  const [message, suggestion] = isUnleased(holder)
    ? [
        `The docket server${pid} holding ${root} has not written its address ${waitedMs !== null ? `within ${formatWindow(waitedMs)}: it is still starting (loading its capability files) or frozen` : "and its .docket/ was removed under it"}. No other server can start while it holds the checkout.`,
        `Run this again once it prints "docket serving ${root} at …"${holder.pid > 0 ? `; if it never does, stop it (kill ${holder.pid})` : ""}.`,
      ]
    : [
        `The docket server${pid} serving ${root} at ${holder.url} does not answer: it is stopped (SIGSTOP, a suspended terminal), frozen or too busy. No other server can start while it holds the checkout.`,
        `Resume it (kill -CONT ${holder.pid}) or stop it (kill ${holder.pid}), then run this again.`,
      ];
  return buildFailure({
    error_code: "unavailable",
    stage: "admit",
    message,
    suggestion,
    retryability: "after_delay",
    request_id: requestIdFrom(undefined),
    trace_id: newTraceId(),
    context: { root, pid: holder.pid, url: holder.url },
  });
}

/**
 * Runs `body` against the server serving the checkout of the working directory; a missing or
 * vanished server is the same failure, with how to start one.
 */
async function withServer(o: Out, body: (server: ServerClient) => Promise<number>): Promise<number> {
  const root = findCheckoutRoot(process.cwd());
  let server = await findServer(root);
  if (!server) {
    // A server that holds the checkout and does not answer is no missing one: starting another is
    // refused. One still starting (`docket serve &` just before) is waited for.
    const found = await serverOnceStarted(root, (holder, waitMs) => o.note(`the docket server${holder.pid ? ` (pid ${holder.pid})` : ""} serving this checkout is starting (loading its capability files); waiting up to ${formatWindow(waitMs)} for it to answer`), await startingWaitMs(root, [], loadTimeoutMs()));
    if (found !== null && "server" in found) server = found.server;
    else return fail(o, found ? frozenServer(root, found.holder, found.loading ? found.waitedMs : null) : noServer(root, ""));
  }
  try {
    return await body(server);
  } catch (error) {
    if (error instanceof ServerUnreachableError) return fail(o, noServer(root, ` any more (${error.reason})`));
    throw error;
  }
}

function checkId(id: string, command: string): void {
  if (!isExecutionId(id)) {
    // One shaped like an id, with a date no moment has, is told which part (as the API tells it).
    const date = impossibleIdDate(id);
    throw new UsageError(`${JSON.stringify(id)} is not an execution id: ${date === null ? "" : `its UTC date and time, yyyymmddThhmmss, name no moment (${date}); `}ids look like x-20260908T010203Z-0a1b2c3d (docket executions list shows them).`, command);
  }
}

/** A whole number flag in a range, checked before any request. */
function wholeNumber(value: string | undefined, flag: string, min: number, max: number, command: string): number | undefined {
  if (value === undefined) return undefined;
  // Untrimmed, as the HTTP API and /events read it (` 5` is refused there too).
  const n = /^\d+$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) throw new UsageError(`--${flag} must be a whole number from ${min} to ${max}, got ${JSON.stringify(value)}.`, command);
  return n;
}

const listMeta: DocketCommandMeta = {
  name: "list",
  description: "List executions, newest first: what the server ran and what runs reported, with counts per state.",
  examples: ["docket executions list", "docket executions list --state running --capability files.digest --limit 20 --format json"],
  notes: NOTES,
};

const list = defineCommand({
  meta: listMeta,
  args: {
    state: { type: "enum", options: [...EXECUTION_STATES], description: "Only executions in this state" },
    capability: { type: "string", description: "Only executions of this capability", valueHint: "ID" },
    limit: { type: "string", description: "At most N (1..500, default 50)", valueHint: "N" },
    format,
  },
  async run({ args }) {
    const limit = wholeNumber(args.limit, "limit", 1, 500, "docket executions list");
    const o = out(args.format);
    return withServer(o, async (server) => {
      const page = await server.request("GET", "/api/v1/executions", { query: { state: args.state, capability: args.capability, limit } });
      if (!page.ok) return fail(o, page.failure);
      if (o.json) await writeStdout(`${JSON.stringify(page.body, null, 2)}\n`);
      else await writeStdout(o.shown(listText(page.body, o.style)));
      return EXIT.succeeded;
    });
  },
});

const showMeta: DocketCommandMeta = {
  name: "show",
  description: "Show one execution: state, who started it, steps, progress, diagnostics, log tail, output or failure.",
  examples: ["docket executions show x-20260908T010203Z-0a1b2c3d", "docket executions show x-20260908T010203Z-0a1b2c3d --format json"],
  notes: NOTES,
};

const show = defineCommand({
  meta: showMeta,
  args: { id: idArg, format },
  async run({ args }) {
    checkId(args.id, "docket executions show");
    const o = out(args.format);
    return withServer(o, async (server) => {
      const got = await server.request("GET", "/api/v1/executions/get", { query: { id: args.id } });
      if (!got.ok) return fail(o, got.failure);
      await writeStdout(o.json ? `${JSON.stringify(got.body, null, 2)}\n` : o.shown(showText(got.body, server.url, o.style)));
      return EXIT.succeeded;
    });
  },
});

const eventsMeta: DocketCommandMeta = {
  name: "events",
  description: "Print an execution's events after a sequence; with --follow, then live from the live channel until it completes.",
  examples: ["docket executions events x-20260908T010203Z-0a1b2c3d", "docket executions events x-20260908T010203Z-0a1b2c3d --after 42 --follow --format json"],
  notes: [...NOTES, "--format json prints one event per line (JSON Lines), as the live channel sends them."],
};

const events = defineCommand({
  meta: eventsMeta,
  args: {
    id: idArg,
    after: { type: "string", description: "Only events with a sequence above N (default 0)", valueHint: "N" },
    follow: { type: "boolean", description: "Keep following live until the execution completes" },
    format,
  },
  async run({ args }) {
    const command = "docket executions events";
    checkId(args.id, command);
    const after = wholeNumber(args.after, "after", 0, Number.MAX_SAFE_INTEGER, command) ?? 0;
    const o = out(args.format);
    return withServer(o, async (server) => {
      let follow = args.follow === true;
      if (follow) {
        // The live channel refuses an unknown execution before its handshake, without a reason a client can read: ask first.
        const known = await server.request("GET", "/api/v1/executions/get", { query: { id: args.id } });
        if (!known.ok) return fail(o, known.failure);
        const { state, last_sequence } = known.body as ExecutionSnapshot;
        // Ended: no event will come that is not stored already (and one whose details expired
        // keeps none the live channel could replay), so what is kept is read, not followed.
        if (isTerminal(state)) follow = false;
        // A cursor past what exists hides the events up to it, its end perhaps among them: following would never end.
        else if (after > last_sequence) {
          throw new UsageError(`--after ${after} is past the last event of ${args.id} (sequence ${last_sequence}, ${state}): the live channel sends nothing at or below a cursor, so its end might never show; give --after ${last_sequence} or less.`, command);
        }
      }
      const plain = plainPrinters(o.style, { localTime: process.stdout.isTTY === true });
      const stdout = writerOf(process.stdout);
      // Events are this command's output: stdout, one write per event so a pipe sees them live.
      const printer = createRunReporter({ write: (text) => void stdout.write(o.shown(text)), printers: plain.printers, unknown: plain.unknown, flush: plain.flush });
      const onEvent = (event: ExecutionEvent) => (o.json ? void stdout.write(`${JSON.stringify(event)}\n`) : printer.print(event));
      // Whoever reads stdout left (`| head -2`) or it cannot be written: reading and following stop.
      const options = { id: args.id, after, onEvent, onNote: o.note, onQuiet: o.note, signal: stdout.closed };
      // Following a quiet execution writes nothing for a while, so no write would find the reader
      // gone: it is asked about every second, and the connection to the server ends with it.
      const stopWatching = follow ? stdout.watchReader(readerGone, READER_LOOK_MS) : () => undefined;
      const outcome: EventsOutcome = follow ? await followEvents(server, options).finally(stopWatching) : await readEvents(server, options);
      if (!o.json) printer.flush();
      await stdout.settled();
      // A reader that left is no error (exit quietly, as `docket run … | head -1` does); a failed
      // write is said, and exits non-zero, at the command's end (main.ts).
      if (outcome.ok || stdout.closed.aborted) return EXIT.succeeded;
      if ("failure" in outcome) return fail(o, outcome.failure);
      process.stderr.write(`${o.errStyle.red(`Stopped following ${args.id}: ${outcome.reason}.`)}\n`);
      return EXIT.failed;
    });
  },
});

const cancelMeta: DocketCommandMeta = {
  name: "cancel",
  description: "Ask an execution to stop (also one that a docket run reports); prints the receipt. Follow its events for the outcome.",
  examples: ["docket executions cancel x-20260908T010203Z-0a1b2c3d", "docket executions cancel x-20260908T010203Z-0a1b2c3d && docket executions events x-20260908T010203Z-0a1b2c3d --follow"],
  notes: [...NOTES, "Exit code 1 also when the request was not made (the execution is not cancellable, or already ended)."],
};

const cancel = defineCommand({
  meta: cancelMeta,
  args: { id: idArg, format },
  async run({ args }) {
    checkId(args.id, "docket executions cancel");
    const o = out(args.format);
    return withServer(o, async (server) => {
      const answer = await server.request("POST", "/api/v1/executions/cancel", { body: { id: args.id } });
      if (!answer.ok) return fail(o, answer.failure);
      const receipt = answer.body as { id: string; state: string; requested: boolean; message: string };
      await writeStdout(o.json ? `${JSON.stringify(receipt, null, 2)}\n` : o.shown(`${receipt.requested ? o.style.yellow("cancel requested") : o.style.dim("not requested")} — ${receipt.message} (state: ${receipt.state})\n`));
      return receipt.requested ? EXIT.succeeded : EXIT.failed;
    });
  },
});

const reconcileMeta: DocketCommandMeta = {
  name: "reconcile",
  description: "Settle an execution whose outcome is unknown: record what you found (--applied / --not-applied, with --note), or without either let its capability's reconcile() check.",
  examples: [
    'docket executions reconcile x-20260908T010203Z-0a1b2c3d --applied --note "the tag v1.2 exists on the remote"',
    "docket executions reconcile x-20260908T010203Z-0a1b2c3d --not-applied --note \"nothing was deployed\"",
    "docket executions reconcile x-20260908T010203Z-0a1b2c3d",
  ],
  notes: [
    ...NOTES,
    "Only an execution that ended with outcome_certainty unknown, not yet reconciled, can be settled; its state never changes, and its artifacts may be released afterwards.",
    "Exit code 1 also when the capability's check could not tell (nothing is recorded then).",
  ],
};

const reconcile = defineCommand({
  meta: reconcileMeta,
  args: {
    id: idArg,
    applied: { type: "boolean", description: "It took effect (you checked)" },
    "not-applied": { type: "boolean", description: "It did not take effect (you checked)" },
    note: { type: "string", description: "What you checked and what you saw (at most 4096 characters)", valueHint: "TEXT" },
    format,
  },
  async run({ args }) {
    const command = "docket executions reconcile";
    checkId(args.id, command);
    const applied = args.applied === true;
    const notApplied = (args as Record<string, unknown>)["not-applied"] === true || (args as Record<string, unknown>).notApplied === true;
    if (applied && notApplied) throw new UsageError("--applied and --not-applied contradict each other: give the one you verified, or neither to run the capability's own check.", command);
    const note = args.note === undefined ? undefined : String(args.note);
    if (note !== undefined && note.trim() === "") throw new UsageError("--note must say something: what you checked and what you saw.", command);
    const outcome = applied ? "applied" : notApplied ? "not_applied" : undefined;
    const o = out(args.format);
    return withServer(o, async (server) => {
      // A capability's check may take as long as its deadline allows: the request waits for it.
      const answer = await server.request("POST", "/api/v1/executions/reconcile", { body: { id: args.id, outcome, note }, timeoutMs: 60 * 60 * 1000 });
      if (!answer.ok) return fail(o, answer.failure);
      const receipt = answer.body as ReconcileReceipt;
      await writeStdout(o.json ? `${JSON.stringify(receipt, null, 2)}\n` : o.shown(reconcileText(receipt, o.style)));
      return receipt.reconciled ? EXIT.succeeded : EXIT.failed;
    });
  },
});

const protocolMeta: DocketCommandMeta = {
  name: "protocol",
  description: "The event contract of the server: schema version, event types, control messages, states and moves, limits in force.",
  examples: ["docket executions protocol", "docket executions protocol --format json > protocol.json"],
  notes: NOTES,
};

const protocol = defineCommand({
  meta: protocolMeta,
  args: { format },
  async run({ args }) {
    const o = out(args.format);
    return withServer(o, async (server) => {
      const doc = await server.request("GET", "/api/v1/executions/protocol");
      if (!doc.ok) return fail(o, doc.failure);
      await writeStdout(o.json ? `${JSON.stringify(doc.body, null, 2)}\n` : protocolText(doc.body, o.style));
      return EXIT.succeeded;
    });
  },
});

const groupMeta: DocketCommandMeta = {
  name: "executions",
  description: "Read, follow, cancel and reconcile the executions of the server serving this checkout (its own and those docket run reported).",
  examples: ["docket executions list --state running", "docket executions events x-20260908T010203Z-0a1b2c3d --follow", "docket executions cancel x-20260908T010203Z-0a1b2c3d"],
};

/** `docket executions list|show|events|cancel|reconcile|protocol` (README.md): projections of the server's store, over its API. */
export default defineCommand({ meta: groupMeta, subCommands: { list, show, events, cancel, reconcile, protocol } });

/** `2026-09-08 01:02:03` in UTC, as the snapshot's ISO stamp says it. */
const when = (iso: string | null) => (iso ? iso.replace("T", " ").replace(/\.\d+Z$|Z$/, "") : "—");
// A client's own text (an MCP client's name, a session key), printed as one line of plain text
// whatever a store written by an older docket holds: no escape, control or bidirectional override.
const actorText = (actor: ExecutionSnapshot["actor"]) => (actor.kind === "cli" ? `cli ${actor.pid}` : actor.kind === "mcp" && actor.client ? `mcp ${oneLinePlain(actor.client)}` : actor.kind);

/** id · state · capability · actor · created · duration, aligned, then the counts per state. */
function listText(page: { items: ExecutionSnapshot[]; next_cursor: string | null; counts: Record<string, number> }, style: TerminalStyle): string {
  const counts = Object.entries(page.counts).map(([state, n]) => `${state} ${n}`).join(" · ");
  if (page.items.length === 0) return `No executions match.\n${style.dim(counts)}\n`;
  const head = ["ID", "STATE", "CAPABILITY", "ACTOR", "CREATED (UTC)", "DURATION"];
  const rows = page.items.map((e) => [e.id, e.state, e.capability, actorText(e.actor), when(e.created_at), e.duration_ms === null ? "—" : formatDuration(e.duration_ms)]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join("  ");
  const more = page.next_cursor ? `\n${style.dim("More executions match; raise --limit (at most 500) or narrow with --state / --capability.")}` : "";
  return `${style.bold(line(head))}\n${rows.map(line).join("\n")}\n${style.dim(counts)}${more}\n`;
}

/** One execution for a person: the facts, then what it did, then how it ended. */
function showText(e: ExecutionSnapshot, url: string, style: TerminalStyle): string {
  const lines = [`${style.bold(e.id)} — ${e.capability}`, ""];
  lines.push(`state: ${e.state} · started by ${actorText(e.actor)} · effect ${e.effect}${e.cancellable ? " · cancellable" : ""}`);
  // Absent from executions stored before versions were recorded.
  if (e.capability_version) lines.push(`code version: ${e.capability_version}`);
  lines.push(`created ${when(e.created_at)} · started ${when(e.started_at)} · finished ${when(e.finished_at)}${e.duration_ms === null ? "" : ` · took ${formatDuration(e.duration_ms)}`} (UTC)`);
  // Why it was asked to stop, kept after the end: a deadline passed during a run that then succeeded shows it only here.
  const cancel = e.cancel_requested;
  if (cancel) {
    const words = e.finished_at === null ? CANCEL_WORDS : CANCEL_WORDS_PAST;
    lines.push(style.yellow(`${cancel.reason ? words[cancel.reason] : `cancel requested by ${actorText(cancel.actor)}`} (${when(cancel.at)} UTC)`));
  }
  // A session key is the client's text: one stored before keys were checked may hold anything.
  if (e.run_id || e.session_key) lines.push([e.run_id && `run_id ${e.run_id}`, e.session_key && `session ${oneLinePlain(e.session_key)}`].filter(Boolean).join(" · "));
  lines.push(style.dim(`request ${e.request_id} · trace ${e.trace_id} · last sequence ${e.last_sequence}${e.truncated ? ` (events before ${e.retained_from} dropped)` : ""}`));
  if (e.progress) lines.push(`progress: ${e.progress.current}${e.progress.total === null ? "" : `/${e.progress.total}`}${e.progress.message ? ` ${e.progress.message}` : ""}`);
  if (e.steps.length > 0) {
    lines.push("", style.bold("steps"));
    // A step still running in an execution that ended was stopped with it (as the cockpit shows it).
    const ended = e.finished_at !== null;
    for (const s of e.steps) {
      const stopped = ended && s.state === "running";
      const mark = s.state === "succeeded" ? style.green("✔") : s.state === "failed" ? style.red("✖") : stopped ? style.yellow("■") : style.cyan("▸");
      lines.push(`  ${mark} ${s.id} — ${s.title}${stopped ? " (stopped: the execution ended before this step did)" : s.message ? ` (${s.message})` : ""}`);
    }
  }
  if (e.diagnostics.length > 0) {
    lines.push("", style.bold(`diagnostics${e.diagnostics_dropped ? ` (${e.diagnostics_dropped} older dropped)` : ""}`));
    for (const d of e.diagnostics) lines.push(`  ${d.severity} ${location(d) ? `${location(d)} ` : ""}${d.message}${d.code ? ` [${d.code}]` : ""}`);
  }
  if (e.log.length > 0) {
    const shown = e.log.slice(-20);
    lines.push("", style.bold(`log (last ${shown.length} of ${e.log.length + e.log_dropped})`));
    for (const l of shown) lines.push(`  ${l.level.padEnd(5)} ${l.message}`);
  }
  if (e.state === "succeeded") lines.push("", style.bold("output"), jsonText(e.output ?? null));
  if (e.failure) lines.push("", failureText(e.failure, style).trimEnd());
  if (e.reconciliation) lines.push("", ...reconciliationLines(e.reconciliation, style));
  else if (e.failure?.outcome_certainty === "unknown") lines.push("", style.yellow(`outcome unknown, not reconciled: settle it with docket executions reconcile ${e.id} --applied|--not-applied --note "…"`));
  lines.push("", style.dim(`cockpit: ${url}${e.links.cockpit}`));
  return `${lines.join("\n")}\n`;
}

/** How an unknown outcome was settled, for `show` and `reconcile`. */
function reconciliationLines(r: ReconciliationSnapshot, style: TerminalStyle): string[] {
  const how = r.method === "check" ? "by its capability's check" : r.method === "run" ? "by the run's own end" : "by hand";
  const lines = [`${style.bold("reconciled")} as ${r.outcome} ${how}, by ${actorText(r.actor)} at ${when(r.at)} (UTC)`];
  if (r.note) lines.push(`  note: ${r.note}`);
  if (r.evidence !== undefined) lines.push(`  evidence: ${JSON.stringify(r.evidence)}`);
  return lines;
}

/** A reconcile receipt for a person: what was recorded, or what the check found. */
function reconcileText(receipt: ReconcileReceipt, style: TerminalStyle): string {
  const lines = [`${receipt.reconciled ? style.green("reconciled") : style.yellow("not reconciled")} — ${receipt.message}`];
  if (receipt.reconciliation) lines.push(...reconciliationLines(receipt.reconciliation, style));
  else if (receipt.check?.evidence !== undefined) lines.push(`  evidence: ${JSON.stringify(receipt.check.evidence)}`);
  return `${lines.join("\n")}\n`;
}

/** The contract at a glance; `--format json` has all of it. */
function protocolText(doc: { schema_version: string; payload_schemas: Record<string, unknown>; control_schema: Record<string, Array<{ properties?: { type?: { const?: string } } }> | undefined>; transitions: Record<string, string[]>; limits: Record<string, number> }, style: TerminalStyle): string {
  // A variant converts to oneOf (or anyOf): each branch names its type by a const.
  const branches = doc.control_schema.oneOf ?? doc.control_schema.anyOf ?? [];
  const controls = branches.map((s) => s.properties?.type?.const).filter(Boolean);
  const lines = [
    `${style.bold("schema_version")} ${doc.schema_version}`,
    `${style.bold("event types")} ${Object.keys(doc.payload_schemas).join(", ")}`,
    `${style.bold("control messages")} ${controls.join(", ")}`,
    style.bold("states and moves"),
    ...Object.entries(doc.transitions).map(([from, to]) => `  ${from} → ${to.length ? to.join(", ") : "(terminal)"}`),
    style.bold("limits in force"),
    ...Object.entries(doc.limits).map(([key, value]) => `  ${key} ${value}`),
  ];
  return `${lines.join("\n")}\n`;
}

/** `load_timeout_ms` as this process's environment sets it (the server's is most likely the same): the default when it sets none, or one out of bounds. */
function loadTimeoutMs(): number {
  try {
    return resolveLimits({ env: process.env }).load_timeout_ms;
  } catch {
    return resolveLimits().load_timeout_ms;
  }
}
