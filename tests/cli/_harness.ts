// Spawns the real CLI (from source, and as the compiled binary) in temporary checkouts.
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository this suite belongs to. */
export const REPO = fileURLToPath(new URL("../../", import.meta.url));
const BUN = join(REPO, "node_modules", ".bin", "bun");
const MAIN = join(REPO, "runtime", "cli", "main.ts");

/** How a test starts docket: the command line before docket's own arguments. */
export interface DocketRunner {
  name: string;
  argv(): string[];
}

/**
 * What docket runs with from source, as the binary is built (docs/architecture.md, "The binary"):
 * not the checkout's `.env` files, and docket's own bunfig.toml in place of the checkout's (whose
 * `preload` would run first). Bun reads both from where it starts, before any of docket's code.
 */
export const SOURCE_FLAGS = ["--no-env-file", `--config=${join(REPO, "bunfig.toml")}`];

/** `bun --no-env-file --config=… runtime/cli/main.ts …`, as `npm start` runs it. */
export const fromSource: DocketRunner = { name: "source", argv: () => [BUN, ...SOURCE_FLAGS, MAIN] };

let built: Promise<string> | null = null;

/**
 * Compiles the binary into a temporary folder (never over the user's dist/docket), with the build
 * script's own function and entry points; once per test file, whose removeTempDirs deletes it.
 */
export function buildBinary(): Promise<string> {
  built ??= (async () => {
    const { compileDocket, CLI_ENTRY, WORKER_ENTRIES } = await import("../../scripts/build.ts");
    const outfile = join(tempDir("bin"), "docket");
    await compileDocket({ entrypoints: [CLI_ENTRY, ...WORKER_ENTRIES], outfile });
    return outfile;
  })();
  return built;
}

/** The compiled binary as a runner; `buildBinary()` must have resolved first. */
export function fromBinary(path: string): DocketRunner {
  return { name: "binary", argv: () => [path] };
}

/** What a finished docket process left. */
export interface Finished {
  code: number;
  stdout: string;
  stderr: string;
}

/** Options of one docket invocation. */
export interface SpawnOptions {
  cwd: string;
  env?: Record<string, string>;
  stdin?: string;
}

/**
 * The environment a CI job or a developer's shell might leak into a child is removed, so that each
 * test states what it depends on: GitHub's variables, colour forcing, and every DOCKET_* limit.
 */
export function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value === undefined || key.startsWith("GITHUB_") || key.startsWith("DOCKET_") || key === "FORCE_COLOR" || key === "TRACEPARENT") continue;
    env[key] = value;
  }
  return { ...env, NO_COLOR: "1", ...extra };
}

/** Runs docket to its end and collects its streams. */
export async function docket(runner: DocketRunner, args: string[], options: SpawnOptions): Promise<Finished> {
  const child = Bun.spawn([...runner.argv(), ...args], {
    cwd: options.cwd,
    env: cleanEnv(options.env),
    stdin: options.stdin === undefined ? "ignore" : new Blob([options.stdin]),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  return { code, stdout, stderr };
}

/** Starts docket and hands back the process, for tests that signal it mid-run. */
export function spawnDocket(runner: DocketRunner, args: string[], options: SpawnOptions) {
  return Bun.spawn([...runner.argv(), ...args], { cwd: options.cwd, env: cleanEnv(options.env), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
}

/** A stream read as it comes: wait for a pattern, then another, then the end. */
export interface StreamWatch {
  /** Resolves once `pattern` has appeared in everything read so far. */
  until(pattern: RegExp): Promise<string>;
  /** Everything, once the stream has ended. */
  readonly done: Promise<string>;
}

/** Starts reading `stream` at once, keeping all of it. */
export function watchStream(stream: ReadableStream<Uint8Array>): StreamWatch {
  const decoder = new TextDecoder();
  let text = "";
  let ended = false;
  const waiters = new Set<() => void>();
  const done = (async () => {
    for await (const chunk of stream) {
      text += decoder.decode(chunk, { stream: true });
      for (const wake of waiters) wake();
    }
    ended = true;
    for (const wake of waiters) wake();
    return text;
  })();
  return {
    done,
    until(pattern) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (pattern.test(text)) {
            waiters.delete(check);
            resolve(text);
          } else if (ended) {
            waiters.delete(check);
            reject(new Error(`The stream ended before ${pattern} appeared; it said:\n${text}`));
          }
        };
        waiters.add(check);
        check();
      });
    },
  };
}

const created: string[] = [];

/** A fresh temporary folder (outside the repository, so nothing resolves from its node_modules). */
export function tempDir(prefix: string): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), `docket-${prefix}-`)));
  created.push(dir);
  return dir;
}

/** Removes every folder `tempDir` made so far (each test file's afterAll). */
export function removeTempDirs(): void {
  for (const dir of created.splice(0)) rmSync(dir, { recursive: true, force: true });
  built = null;
}

/** A temporary checkout: a folder with `git init` done, as a user's repository would be. */
export function tempCheckout(): string {
  const dir = tempDir("checkout");
  const init = Bun.spawnSync(["git", "init", "-q", dir]);
  // Without git on the machine, a `.git` folder is what discovery looks for all the same.
  if (init.exitCode !== 0) mkdirSync(join(dir, ".git"));
  return dir;
}

/** Writes files (relative path → text) under a folder. */
export function writeFiles(dir: string, files: Record<string, string>): void {
  for (const [path, text] of Object.entries(files)) {
    const full = join(dir, path);
    mkdirSync(join(full, ".."), { recursive: true });
    writeFileSync(full, text);
  }
}

/** Parses stdout that must be exactly one JSON document. */
export function oneJsonDocument(stdout: string): any {
  // JSON.parse refuses trailing text, so a second document or a stray line fails here.
  return JSON.parse(stdout);
}
