// `docket run` in a real pseudo-terminal (a tmux pane of fixed size): the live view end to end.
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { REPO, removeTempDirs, SOURCE_FLAGS, tempCheckout } from "./_harness.ts";

const TMUX = Bun.which("tmux");
const BUN = join(REPO, "node_modules", ".bin", "bun");
const MAIN = join(REPO, "runtime", "cli", "main.ts");
const INPUT = '{"steps":3,"delay_ms":150}';
const LOG_LINES = ["Demonstrating 3 steps of 150 ms", "Working on step 1", "Working on step 2", "Working on step 3", "A diagnostic is a finding", "Demonstration complete"];

if (!TMUX && !process.env.CI) console.warn("live-view-terminal.test.ts: skipped, tmux is not installed (it runs docket in a pseudo-terminal); install tmux to run it.");

const sockets: string[] = [];
afterEach(() => {
  // Each test's own tmux server, and with it its session and pane.
  for (const socket of sockets.splice(0)) Bun.spawnSync([TMUX ?? "tmux", "-S", socket, "kill-server"], { stderr: "ignore" });
});
afterAll(removeTempDirs);

const tmux = (socket: string, ...args: string[]) => {
  const done = Bun.spawnSync([TMUX!, "-S", socket, "-f", "/dev/null", ...args], { stdout: "pipe", stderr: "pipe" });
  if (done.exitCode !== 0) throw new Error(`tmux ${args.join(" ")} failed: ${done.stderr.toString()}`);
  return done.stdout.toString();
};

/**
 * Runs `docket run executions.demonstrate` in a 100×40 pane with a clean environment and answers
 * the final screen (scrollback included) and every byte the pane received.
 */
async function runInPane(env: Record<string, string>, options: { input?: string; during?: (pane: Pane) => Promise<void> } = {}): Promise<{ screen: string; raw: string }> {
  const dir = tempCheckout();
  // The server's socket lives in the test's temporary folder, so removing the folder removes it too.
  const socket = join(dir, "tmux.sock");
  sockets.push(socket);
  const raw = join(dir, "pane.raw");
  const bytes = () => (existsSync(raw) ? readFileSync(raw, "utf8") : "");
  const vars = Object.entries({ PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? dir, TERM: "xterm-256color", ...env }).map(([k, v]) => `${k}='${v}'`);
  const script = join(dir, "run.sh");
  // Waits for Enter, so the pane is recorded from the first byte; says when it is done over tmux's own channel.
  // `trap` keeps this shell alive through a Ctrl-C (its child gets the default, which docket replaces).
  writeFileSync(script, [`trap true INT`, `read _`, `env -i ${vars.join(" ")} '${BUN}' ${SOURCE_FLAGS.map((flag) => `'${flag}'`).join(" ")} '${MAIN}' run executions.demonstrate --input '${options.input ?? INPUT}'`, `echo "[exit $?]"`, `'${TMUX}' -S '${socket}' wait-for -S done`, `read _`, ""].join("\n"));
  tmux(socket, "new-session", "-d", "-s", "run", "-x", "100", "-y", "40", "-c", dir, `sh '${script}'`);
  tmux(socket, "pipe-pane", "-t", "run", "-o", `cat > '${raw}'`);
  tmux(socket, "send-keys", "-t", "run", "Enter");
  await options.during?.({ keys: (...keys) => void tmux(socket, "send-keys", "-t", "run", ...keys), until: (part) => until(() => bytes().includes(part)) });
  await Bun.spawn([TMUX!, "-S", socket, "wait-for", "done"]).exited;
  const screen = tmux(socket, "capture-pane", "-p", "-S", "-", "-E", "-", "-t", "run");
  // pipe-pane's cat may still be writing: the exit line is the last thing the run's pane printed.
  await until(() => bytes().includes("[exit "));
  return { screen, raw: bytes() };
}

/** What a test does while docket runs: type keys, wait for output. */
interface Pane {
  keys(...keys: string[]): void;
  until(part: string): Promise<void>;
}

/** Polls the recorded pane (there is nothing to await on a file another process writes), for 10 s at most. */
async function until(ready: () => boolean): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    if (ready()) return;
    await Bun.sleep(10);
  }
  throw new Error("the pane never showed what the test waited for");
}

const count = (text: string, part: string) => text.split(part).length - 1;

describe.skipIf(!TMUX && !process.env.CI)("docket run in a terminal", () => {
  test("docket run draws the live view and leaves the steps, every log line once and the summary", async () => {
    if (!TMUX) throw new Error("tmux is required in CI for the live view's terminal test.");
    const { screen, raw } = await runInPane({});
    expect(screen).toContain("[exit 0]");
    for (let i = 1; i <= 3; i++) expect(count(screen, `✔ Step ${i} of 3`)).toBe(1);
    expect(screen).toMatch(/^✔ executions\.demonstrate x-\S+ succeeded in \d/m);
    for (const line of LOG_LINES) expect(count(screen, line)).toBe(1);
    // The output on stdout is untouched, after the summary.
    expect(screen.indexOf('"message": "Completed 3 steps and 0 events"')).toBeGreaterThan(screen.indexOf("succeeded in"));
    // It animated (cursor hidden, moved up) and gave the cursor back after its last hide.
    expect(raw).toContain("\u001b[?25l");
    expect(raw).toMatch(/\u001b\[\d+A/);
    expect(raw.lastIndexOf("\u001b[?25h")).toBeGreaterThan(raw.lastIndexOf("\u001b[?25l"));
  }, 30_000);

  test("docket run cancels on Ctrl-C with a note, ends with the cancelled summary and the cursor back", async () => {
    if (!TMUX) throw new Error("tmux is required in CI for the live view's terminal test.");
    const { screen, raw } = await runInPane({}, {
      input: '{"steps":20,"delay_ms":300}',
      async during(pane) {
        await pane.until("Step 2 of 20");
        pane.keys("C-c");
      },
    });
    expect(screen).toContain("[exit 130]");
    expect(raw).toContain("cancelling… press Ctrl-C again to stop now");
    expect(screen).toMatch(/^■ executions\.demonstrate x-\S+ cancelled in \d/m);
    expect(count(screen, "✔ Step 1 of 20")).toBe(1);
    expect(raw.lastIndexOf("\u001b[?25h")).toBeGreaterThan(raw.lastIndexOf("\u001b[?25l"));
  }, 30_000);

  test("docket run with NO_COLOR prints plain timestamped lines in the same terminal", async () => {
    if (!TMUX) throw new Error("tmux is required in CI for the live view's terminal test.");
    const { screen, raw } = await runInPane({ NO_COLOR: "1" });
    expect(screen).toContain("[exit 0]");
    expect(screen).toMatch(/^\d\d:\d\d:\d\d ▸ step step-1 — Step 1 of 3$/m);
    expect(screen).toMatch(/^\d\d:\d\d:\d\d ✔ step step-3$/m);
    expect(screen).toMatch(/^\d\d:\d\d:\d\d ✔ succeeded in \d/m);
    for (const line of LOG_LINES) expect(count(screen, line)).toBe(1);
    expect(raw).not.toContain("\u001b[?25l");
    expect(raw).not.toMatch(/\u001b\[\d+A/);
    expect(raw).not.toMatch(/\u001b\[\d+m/);
  }, 30_000);
});
