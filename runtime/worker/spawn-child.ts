import { spawn } from "node:child_process";
import type { Writable } from "node:stream";
import { signalGroup } from "./process-groups.ts";

/** A child to start, as `ctx.exec` asks for it. Structured-clone safe: it may cross to the main thread. */
export interface SpawnRequest {
  argv: string[];
  /** Absolute, already checked to be inside the checkout. */
  cwd: string;
  /** Added to the environment of the process; null: the environment as it is. */
  env: Record<string, string> | null;
  /**
   * Written to stdin, which is then closed; null: no stdin. With `stdinMore`, only its first part:
   * the rest is asked for one part at a time (the Spawner's `moreStdin`) as the pipe takes each.
   */
  stdin: string | Uint8Array | null;
  stdinMore?: boolean;
}

/**
 * The largest part of a child's stdin handed over at once: the rest stays with the handler that
 * gave it until the child has read what came before. 60 MiB given to each of 32 children crossed
 * to the server's main thread whole, which held 3.6 GB and every client for 28 s (containment
 * tester, session 49).
 */
export const STDIN_PART_BYTES = 256 * 1024;

/** How a child ended. */
export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A started child: its pid (also its process group's id) and its end, after all its output. */
export interface SpawnedChild {
  pid: number;
  exited: Promise<ChildExit>;
}

/** Why a child did not start: the errno code (`ENOENT`, `EACCES`) and the runtime's message. */
export class SpawnError extends Error {
  constructor(readonly code: string | null, message: string) {
    super(message);
    this.name = "SpawnError";
  }
}

/**
 * Where output goes as it comes: raw bytes of stdout or stderr. `pause`, where the child's pipes
 * can be left unread, stops reading both and answers what reads them again: a child whose reader
 * is behind then waits in its own write, as it would on a full pipe.
 */
export type OnOutput = (stream: "stdout" | "stderr", chunk: Uint8Array, pause?: () => () => void) => void;

/**
 * Starts a child: in this thread, or (from a worker) in the main thread. Rejects with SpawnError.
 * `onPid`, when given, hears the child's pid as soon as the process exists, before it is known to
 * have started (the ledger of child-ledger.ts records it then, leaving no moment unrecorded).
 * `abandoned`, asked of a child that waits its turn before it starts (_spawn-through-main.ts): true
 * when its caller no longer wants it (cancelled, its task over); it then never starts.
 */
export type Spawner = (request: SpawnRequest, onOutput: OnOutput, onPid?: (pid: number) => void, abandoned?: () => boolean, moreStdin?: MoreStdin) => Promise<SpawnedChild>;

/** The next part of a child's stdin (STDIN_PART_BYTES at most), or null at its end. */
export type MoreStdin = () => Promise<Uint8Array | null>;

/**
 * Starts a child in this thread as the leader of a process group of its own (setsid), no shell.
 * The thread that starts a child is the one that reaps it: a worker's children are started by the
 * main thread (spawnThroughMain), so that one terminated never leaves a zombie behind.
 */
export const spawnHere: Spawner = (request, onOutput, onPid, _abandoned, moreStdin) =>
  new Promise((resolve, reject) => {
    let child;
    try {
      child = spawn(request.argv[0]!, request.argv.slice(1), {
        cwd: request.cwd,
        env: request.env ? { ...process.env, ...request.env } : process.env,
        detached: true,
        stdio: [request.stdin === null ? "ignore" : "pipe", "pipe", "pipe"],
        shell: false,
      });
    } catch (error) {
      reject(new SpawnError((error as NodeJS.ErrnoException).code ?? null, (error as Error).message));
      return;
    }
    if (child.pid !== undefined) onPid?.(child.pid);
    // Every listener is attached before anything is awaited: a fast child may exit at once.
    const pause = () => {
      child.stdout!.pause();
      child.stderr!.pause();
      return () => {
        child.stdout!.resume();
        child.stderr!.resume();
      };
    };
    child.stdout!.on("data", (chunk: Buffer) => onOutput("stdout", chunk, pause));
    child.stderr!.on("data", (chunk: Buffer) => onOutput("stderr", chunk, pause));
    child.stdin?.on("error", () => undefined);
    const closed = new Promise<void>((done) => child.once("close", () => done()));
    const exited = new Promise<ChildExit>((done) =>
      child.once("exit", (code, signal) => {
        // The leader is gone; what it left in its group (a background grandchild) goes with it,
        // which also closes the pipes such a grandchild would otherwise hold open for ever.
        signalGroup(child.pid!, "SIGKILL");
        void closed.then(() => done({ code, signal }));
      }),
    );
    child.once("spawn", () => {
      if (request.stdin !== null) feedStdin(child.stdin!, request.stdin, request.stdinMore === true ? moreStdin : undefined);
      resolve({ pid: child.pid!, exited });
    });
    child.once("error", (error: NodeJS.ErrnoException) => reject(new SpawnError(error.code ?? null, error.message)));
  });

/**
 * Writes a child's stdin: `first`, then each part `more` gives once the pipe has taken the one
 * before (its buffer drained), then the end. A child that closes its stdin (or exits) without
 * reading it all stops the asking: what it did not read is never asked for, nor held here.
 */
function feedStdin(stdin: Writable, first: string | Uint8Array, more: MoreStdin | undefined): void {
  let gone = false;
  stdin.once("close", () => (gone = true));
  const next = (): void => {
    if (gone) return;
    more!().then(
      (part) => {
        if (gone) return;
        if (part === null) stdin.end();
        else if (stdin.write(part)) next();
        else stdin.once("drain", next);
      },
      () => stdin.destroy(),
    );
  };
  try {
    if (more === undefined) stdin.end(first);
    else if (stdin.write(first)) next();
    else stdin.once("drain", next);
  } catch {
    // What the stream cannot take (ctx.exec checks the type first): an empty stdin, closed,
    // never one left open for a child that reads it until it ends.
    stdin.destroy();
  }
}
