import { existsSync, statSync } from "node:fs";
import { dirname, isAbsolute, join, relative } from "node:path";
import { StringDecoder } from "node:string_decoder";
import { CapabilityError } from "../capability/capability-error.ts";
import type { ExecOptions, ExecResult, ProgressReporter } from "../capability/declaration.ts";
import { resolveInside } from "../capability/resolve-inside.ts";
import { signalGroup } from "./process-groups.ts";
import { SpawnError, STDIN_PART_BYTES, type SpawnedChild, type SpawnRequest, type Spawner } from "./spawn-child.ts";

/** Bytes of each stream a result keeps by default (its tail), and the most a handler may ask for. */
export const EXEC_OUTPUT_BYTES = 256 * 1024;
const MAX_OUTPUT_BYTES = 16 * 1024 * 1024;
/** A line longer than this is streamed in pieces, so that a child that never writes "\n" is still seen. */
const LINE_PIECE_CHARS = 16 * 1024;
/** How much of the command an error message or log line shows. */
const COMMAND_CHARS = 200;

/** What `ctx.exec` needs from the task it runs in. */
export interface ExecHost {
  root: string;
  progress: ProgressReporter;
  /** Aborts on cancel or deadline; read lazily, since most handlers never spawn. */
  signal(): AbortSignal;
  /** TERM → KILL wait for a child's process group when the task is cancelled. */
  killGraceMs: number;
  /** Starts the child: here, or in the main thread for a worker (spawn-child.ts). */
  spawn: Spawner;
  /**
   * Characters a long line's piece holds back for the next one: one less than the longest secret
   * masked (0 without secrets), so that no secret is split between two streamed pieces, each
   * masked alone (docs/security.md).
   */
  holdBack?: number;
}

/** `ctx.exec` for one task, and the way to end its children when the task ends. */
export interface Exec {
  exec(argv: readonly string[], options?: ExecOptions): Promise<ExecResult>;
  /** The task ended: any child still running (a handler that did not await it) is ended too. */
  endAll(): void;
}

/**
 * Runs children for one task (docs/authoring.md, "Running a command"): argv only, no shell; each
 * child leads a process group of its own, so that cancel, deadline and task end reach everything
 * it started (TERM, then KILL after the grace); stdout and stderr are streamed line by line and
 * their tails kept, bounded.
 */
export function createExec(host: ExecHost): Exec {
  const running = new Set<number>();
  // Set once the task has ended: a child whose start was still on its way then (a handler that
  // returned without awaiting ctx.exec) is ended as soon as it exists, never left running.
  let taskEnded = false;
  const endGroup = (pid: number) => {
    signalGroup(pid, "SIGTERM");
    setTimeout(() => signalGroup(pid, "SIGKILL"), host.killGraceMs).unref?.();
  };

  async function exec(argv: readonly string[], options: ExecOptions = {}): Promise<ExecResult> {
    checkArgv(argv);
    checkOptions(options);
    // Its stdin as bytes, encoded (or copied) here, before anything is awaited: what the caller
    // does to its buffer once the call returned its promise is not what the child reads.
    const stdin = stdinBytes(options.stdin);
    const command = describeCommand(argv);
    const maxBytes = checkMaxBytes(options.maxOutputBytes);
    const cwd = await resolveCwd(host.root, options.cwd);
    if (taskEnded) throw taskOver(command);
    const signal = host.signal();
    if (signal.aborted) throw host.progress.cancellation();

    const started = performance.now();
    const stdout = new Capture("stdout", maxBytes, options.stream === false ? null : host.progress, host.holdBack ?? 0);
    const stderr = new Capture("stderr", maxBytes, options.stream === false ? null : host.progress, host.holdBack ?? 0);
    // Handed over a part at a time, from this thread (not the server's main thread).
    const request: SpawnRequest = { argv: [...argv], cwd, env: options.env ? { ...options.env } : null, stdin: stdin === null ? null : stdin.slice(0, STDIN_PART_BYTES), stdinMore: stdin !== null && stdin.byteLength > STDIN_PART_BYTES };
    let stdinAt = STDIN_PART_BYTES;
    const moreStdin = async () => (stdin === null || stdinAt >= stdin.byteLength ? null : stdin.slice(stdinAt, (stdinAt += STDIN_PART_BYTES)));
    let child: SpawnedChild;
    // Output that arrives before the spawn's answer (the child wrote at once; its start crosses the
    // main thread) waits for the "started" line, so that the log reads in the order things happened.
    let early: Array<[name: "stdout" | "stderr", chunk: Uint8Array]> | null = [];
    const take = (name: "stdout" | "stderr", chunk: Uint8Array) => (name === "stdout" ? stdout : stderr).push(chunk);
    try {
      child = await host.spawn(request, (name, chunk) => (early === null ? take(name, chunk) : early.push([name, chunk])), undefined, () => taskEnded || signal.aborted, moreStdin);
    } catch (error) {
      // Given up on while it waited its turn (_spawn-through-main.ts): what gave it up is why.
      if (taskEnded) throw taskOver(command);
      if (signal.aborted) throw host.progress.cancellation();
      throw spawnFailure(command, error, folderMissing(cwd) ? relative(host.root, cwd) || "." : null, host.root, argv[0]!, cwd);
    }
    const { pid } = child;
    if (taskEnded) {
      endGroup(pid);
      throw taskOver(command);
    }
    running.add(pid);
    host.progress.log(`exec: ${command} started (pid ${pid}${cwd === host.root ? "" : `, in ${relative(host.root, cwd) || "."}`})`);
    const held = early;
    early = null;
    for (const [name, chunk] of held) take(name, chunk);

    let stopping: ReturnType<typeof setTimeout> | null = null;
    const stop = () => {
      signalGroup(pid, "SIGTERM");
      stopping = setTimeout(() => signalGroup(pid, "SIGKILL"), host.killGraceMs);
    };
    if (signal.aborted) stop();
    else signal.addEventListener("abort", stop, { once: true });

    const { code, signal: signalName } = await child.exited;
    signal.removeEventListener("abort", stop);
    if (stopping !== null) clearTimeout(stopping);
    running.delete(pid);
    stdout.end();
    stderr.end();
    const durationMs = Math.round(performance.now() - started);
    const ended = code !== null ? `exited ${code}` : `was ended by ${signalName}`;
    const failed = code !== 0;
    host.progress.log(`exec: ${command} ${ended} after ${durationMs} ms (pid ${pid})`, failed ? (options.allowFailure ? "warn" : "error") : "info");

    if (signal.aborted) throw host.progress.cancellation();
    const result: ExecResult = {
      exitCode: code,
      signal: signalName,
      stdout: stdout.text(),
      stderr: stderr.text(),
      truncated: stdout.truncated || stderr.truncated,
      durationMs,
      pid,
    };
    if (failed && !options.allowFailure) {
      // The output is not in the message: it may hold secrets. It is in the execution's streams.
      throw new CapabilityError("exec_failed", `${command} ${ended}.`, {
        context: { command: argv[0], exit_code: code, signal: signalName, duration_ms: durationMs },
        suggestion: "Its output is in the execution's stdout and stderr streams; pass { allowFailure: true } to handle a non-zero exit yourself.",
      });
    }
    return result;
  }

  return {
    exec,
    endAll() {
      taskEnded = true;
      for (const pid of running) endGroup(pid);
    },
  };
}

/** What an exec still starting when its task ended rejects with (nobody awaits it: the handler has returned). */
function taskOver(command: string): CapabilityError {
  return new CapabilityError("exec_failed", `${command} was not run: its execution had already ended (the handler returned without awaiting ctx.exec).`, {
    suggestion: "Await ctx.exec (or Promise.all the children) before the handler returns.",
  });
}

/**
 * One output stream of a child: split into lines as it comes (each streamed with its "\n"), and
 * its last `maxBytes` bytes kept for the result. The tail, not the head: a test runner's verdict
 * is at its end.
 */
class Capture {
  truncated = false;
  private readonly decoder = new StringDecoder("utf8");
  private readonly kept: Buffer[] = [];
  private keptBytes = 0;
  private partial = "";

  constructor(
    private readonly name: string,
    private readonly maxBytes: number,
    private readonly progress: ProgressReporter | null,
    private readonly holdBack: number,
  ) {}

  push(bytes: Uint8Array): void {
    // A view, not a copy: a chunk that crossed from the main thread arrives as a plain Uint8Array.
    const chunk = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.keep(chunk);
    if (!this.progress) return;
    this.partial += this.decoder.write(chunk);
    let newline = this.partial.indexOf("\n");
    while (newline >= 0) {
      this.progress.stream(this.name, this.partial.slice(0, newline + 1));
      this.partial = this.partial.slice(newline + 1);
      newline = this.partial.indexOf("\n");
    }
    if (this.partial.length >= LINE_PIECE_CHARS + this.holdBack) {
      // The held-back tail starts the next piece: a secret written across the cut stays whole in one.
      let cut = this.partial.length - this.holdBack;
      const unit = this.partial.charCodeAt(cut - 1);
      if (unit >= 0xd800 && unit <= 0xdbff) cut--;
      this.progress.stream(this.name, this.partial.slice(0, cut));
      this.partial = this.partial.slice(cut);
    }
  }

  end(): void {
    if (!this.progress) return;
    this.partial += this.decoder.end();
    if (this.partial !== "") this.progress.stream(this.name, this.partial);
    this.partial = "";
  }

  text(): string {
    const all = Buffer.concat(this.kept);
    // Cut at a character boundary: skip UTF-8 continuation bytes at the start of the tail.
    let at = 0;
    while (this.truncated && at < all.length && (all[at]! & 0xc0) === 0x80) at++;
    return all.subarray(at).toString("utf8");
  }

  private keep(chunk: Buffer): void {
    this.kept.push(chunk);
    this.keptBytes += chunk.length;
    while (this.keptBytes > this.maxBytes) {
      this.truncated = true;
      const first = this.kept[0]!;
      const over = this.keptBytes - this.maxBytes;
      if (first.length <= over) {
        this.kept.shift();
        this.keptBytes -= first.length;
      } else {
        this.kept[0] = first.subarray(over);
        this.keptBytes -= over;
      }
    }
  }
}

function checkArgv(argv: readonly string[]): void {
  if (!Array.isArray(argv) || argv.length === 0 || !argv.every((a) => typeof a === "string")) {
    throw new TypeError(`ctx.exec takes the command as a list of strings, like ["git", "log", "--oneline"], got ${describeValue(argv)}. No shell runs it.`);
  }
  if (argv[0] === "") throw new TypeError("ctx.exec: the program (argv[0]) is empty; name a program, like \"git\".");
  if (argv.some((a) => a.includes("\0"))) throw new TypeError("ctx.exec: an argument contains a NUL byte, which no program can receive.");
}

/**
 * The options' types, checked before anything starts: a `stdin` of another type (a number from a
 * `.js` file or an `any`) threw inside the spawn on the main thread, the child's stdin never
 * closed, and the execution ran for ever (authoring tester, session 43); an `env` value that is
 * no string became the text "null" in the child's environment.
 */
function checkOptions(options: ExecOptions): void {
  if (options === null || typeof options !== "object" || Array.isArray(options)) throw new TypeError(`ctx.exec: its options must be an object, like { cwd: "src" }, got ${describeValue(options)}.`);
  const { stdin, env, allowFailure, stream } = options as Record<string, unknown>;
  if (stdin !== undefined && typeof stdin !== "string" && !ArrayBuffer.isView(stdin)) {
    throw new TypeError(`ctx.exec: stdin must be a string (or bytes: a Buffer or Uint8Array), got ${describeValue(stdin)}; write String(value) to send a number.`);
  }
  if (env !== undefined) {
    if (env === null || typeof env !== "object" || Array.isArray(env)) throw new TypeError(`ctx.exec: env must be an object of variables, like { CI: "1" }, got ${describeValue(env)}.`);
    for (const [name, value] of Object.entries(env)) {
      if (name === "" || name.includes("=") || name.includes("\0")) throw new TypeError(`ctx.exec: env holds the variable name ${JSON.stringify(name)}, which no environment can hold (empty, or with "=" or a NUL byte).`);
      if (typeof value !== "string") throw new TypeError(`ctx.exec: env.${name} must be a string, got ${describeValue(value)}; write String(value), or leave the variable out.`);
      if (value.includes("\0")) throw new TypeError(`ctx.exec: env.${name} contains a NUL byte, which no environment variable can hold.`);
    }
  }
  for (const [name, value] of [["allowFailure", allowFailure], ["stream", stream]] as const) {
    if (value !== undefined && typeof value !== "boolean") throw new TypeError(`ctx.exec: ${name} must be true or false, got ${describeValue(value)}.`);
  }
}

function checkMaxBytes(value: unknown): number {
  if (value === undefined) return EXEC_OUTPUT_BYTES;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0 || value > MAX_OUTPUT_BYTES) {
    throw new TypeError(`ctx.exec: maxOutputBytes must be a whole number of bytes from 0 to ${MAX_OUTPUT_BYTES}, got ${describeValue(value)}.`);
  }
  return value;
}

/** The folder the child runs in: the checkout, or a folder inside it (relative, or absolute inside). */
async function resolveCwd(root: string, cwd: string | undefined): Promise<string> {
  if (cwd === undefined) return root;
  if (typeof cwd !== "string") throw new TypeError(`ctx.exec: cwd must be a folder inside the checkout, got ${describeValue(cwd)}.`);
  const inside = isAbsolute(cwd) ? relative(root, cwd) : cwd;
  return resolveInside(root, inside === "" ? "." : inside, { label: "ctx.exec cwd" }).catch((error) => {
    if (isAbsolute(cwd) && CapabilityError.is(error)) {
      throw new CapabilityError("invalid_input", `ctx.exec cwd ${JSON.stringify(cwd)} is outside the checkout ${root}; a child runs in the checkout or a folder inside it.`, { context: { cwd } });
    }
    throw error;
  });
}

/** True when `cwd` is no folder now: a spawn's ENOENT then means the folder, not the program. */
function folderMissing(cwd: string): boolean {
  try {
    return !statSync(cwd).isDirectory();
  } catch {
    return true;
  }
}

/** `missingCwd`: the child's folder (relative to the checkout) when it does not exist. */
function spawnFailure(command: string, error: unknown, missingCwd: string | null = null, root = "", program: string | null = null, cwd: string | null = null): CapabilityError {
  const code = error instanceof SpawnError ? error.code : (error as NodeJS.ErrnoException)?.code;
  if (code === "ENOENT" && missingCwd !== null) {
    return new CapabilityError("exec_failed", `${command} could not start: its folder ${JSON.stringify(missingCwd)} (ctx.exec cwd) does not exist in the checkout.`, {
      context: { command: command.split(" ")[0], reason: "cwd_missing", cwd: missingCwd },
      suggestion: "Check the folder's name, or create it before running the command.",
    });
  }
  const why = code === "ENOENT" ? "the program was not found (is it installed and on PATH?)" : code === "EACCES" ? "the program is not executable" : (error as Error)?.message ?? String(error);
  const local = code === "ENOENT" && program !== null && cwd !== null ? packageBin(root, cwd, program) : null;
  // An npm package's tool (tsc, vitest) is in node_modules/.bin, which npm scripts put on PATH and ctx.exec does not (authoring tester).
  // Named as the child's folder reaches it: a path relative to the checkout would not start from `cwd: "sub"` (checking tester).
  const reach = local === null ? "" : relative(cwd!, local);
  const suggestion = local === null ? undefined : `${program} is installed in the checkout (${relative(root, local)}), which is not on PATH: run it as ["${reach}", …]${cwd === root ? "" : ` (from ${relative(root, cwd!)}/)`}, or through npm, like ["npx", "--no-install", "${program}", …].`;
  return new CapabilityError("exec_failed", `${command} could not start: ${why}.`, { context: { command: command.split(" ")[0], reason: code ?? "spawn_failed" }, ...(suggestion === undefined ? {} : { suggestion }) });
}

/**
 * The `node_modules/.bin/<program>` the child's folder would find first, as npm does — its own
 * folder's, then each folder up to the checkout's (a workspace's package, then the root) — when
 * `program` is a bare name; else null.
 */
function packageBin(root: string, cwd: string, program: string): string | null {
  if (program.includes("/") || program.includes("\\")) return null;
  for (let dir = cwd; ; dir = dirname(dir)) {
    const bin = join(dir, "node_modules", ".bin", program);
    if (existsSync(bin)) return bin;
    if (dir === root || dirname(dir) === dir || relative(root, dir).startsWith("..")) return null;
  }
}

/** The command as a person reads it: arguments with spaces or quotes quoted, bounded. */
export function describeCommand(argv: readonly string[]): string {
  const text = argv.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : JSON.stringify(a))).join(" ");
  return text.length > COMMAND_CHARS ? `${text.slice(0, COMMAND_CHARS)}…` : text;
}

function describeValue(value: unknown): string {
  if (value === undefined) return "nothing";
  try {
    const text = JSON.stringify(value);
    return text.length > 60 ? `${text.slice(0, 60)}…` : text;
  } catch {
    return typeof value;
  }
}

/**
 * A stdin given to ctx.exec as a plain Uint8Array of its bytes as they are at the call, never a
 * Buffer: each part is taken with Uint8Array's `slice`, a copy (a Buffer's `slice` is a view, and
 * a view crosses to another thread with its whole buffer). Bytes are copied at the call: handed
 * over a part at a time, a buffer wiped (`key.fill(0)`) or transferred after the call reached the
 * child changed or cut short, with no error (checking tester, session 49).
 */
function stdinBytes(stdin: ExecOptions["stdin"]): Uint8Array | null {
  if (stdin === undefined || stdin === null) return null;
  if (typeof stdin === "string") {
    const encoded = Buffer.from(stdin);
    return new Uint8Array(encoded.buffer, encoded.byteOffset, encoded.byteLength);
  }
  const view = stdin as ArrayBufferView;
  return new Uint8Array(view.buffer, view.byteOffset, view.byteLength).slice();
}
