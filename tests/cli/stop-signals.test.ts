// Which signals stop a docket process cleanly (adapter/stop-signals.ts): a hang-up and Ctrl-C too,
// unless the process was started with them ignored, as nohup and a script's `&` start it; and one
// request to stop that arrives twice counts once.
import { describe, expect, test } from "bun:test";
import { onStopSignal, STOP_SIGNAL_ECHO_MS } from "../../runtime/adapter/stop-signals.ts";

const MODULE = new URL("../../runtime/adapter/stop-signals.ts", import.meta.url).pathname;
const printSignals = `import { stopSignals } from ${JSON.stringify(MODULE)}; console.log(stopSignals().join(" "));`;

function signalsOf(argv: string[]): string {
  const child = Bun.spawnSync([...argv, process.execPath, "-e", printSignals], { stdout: "pipe", stderr: "pipe" });
  return child.stdout.toString().trim();
}

describe("stopSignals", () => {
  test.skipIf(process.platform !== "linux")("a hang-up stops a process, but not one started under nohup (whose hang-ups stay ignored)", () => {
    // The runtime starts children with default dispositions, whatever this process ignores.
    expect(signalsOf(["env"])).toBe("SIGINT SIGTERM SIGHUP");
    expect(signalsOf(["nohup"])).toBe("SIGINT SIGTERM");
  });

  test.skipIf(process.platform !== "linux")("Ctrl-C does not stop a command a script started in the background (the shell starts it with SIGINT ignored); SIGTERM always does", () => {
    expect(signalsOf(["sh", "-c", '"$@" & wait', "sh"])).toBe("SIGTERM SIGHUP");
    expect(signalsOf(["sh", "-c", 'nohup "$@" 2>/dev/null & wait', "sh"])).toBe("SIGTERM");
  });
});

describe("onStopSignal", () => {
  test("onStopSignal takes a signal within the echo window of the last one as its echo, of any kind", () => {
    let clock = 1000;
    const heard: string[] = [];
    // Emitted, not sent: the listeners run as on a real signal, and this process stays untouched.
    const off = onStopSignal((signal) => heard.push(`${signal}@${clock}`), { signals: ["SIGUSR2", "SIGWINCH"], now: () => clock });
    try {
      process.emit("SIGUSR2", "SIGUSR2");
      clock += 5; // the same signal passed on by the launcher
      process.emit("SIGUSR2", "SIGUSR2");
      clock += STOP_SIGNAL_ECHO_MS - 10; // another kind, still within the window of the first
      process.emit("SIGWINCH", "SIGWINCH");
      clock += 10; // a second request, as late after the first as the window is long
      process.emit("SIGWINCH", "SIGWINCH");
      expect(heard).toEqual(["SIGUSR2@1000", `SIGWINCH@${1000 + STOP_SIGNAL_ECHO_MS + 5}`]);
    } finally {
      off();
    }
    process.emit("SIGUSR2", "SIGUSR2");
    expect(heard).toHaveLength(2);
  });
});

describe("holdStopSignals", () => {
  // In a process of its own: a real SIGTERM, sent to itself.
  const run = (script: string) => {
    const child = Bun.spawnSync([process.execPath, "-e", `import { holdStopSignals, onStopSignal } from ${JSON.stringify(MODULE)};\n${script}`], { stdout: "pipe", stderr: "pipe" });
    return { out: child.stdout.toString().trim(), code: child.exitCode, signal: child.signalCode };
  };

  test.skipIf(process.platform === "win32")("a stop signal that comes before the command listens is held for its first listener, which gets it at once (tester T4: a run stopped in its first 70 ms left no document)", () => {
    const held = run(`holdStopSignals();
process.kill(process.pid, "SIGTERM");
await Bun.sleep(50);
console.log("still here");
onStopSignal((signal) => { console.log("got " + signal); process.exit(3); });
await Bun.sleep(5000);`);
    expect({ out: held.out, code: held.code }).toEqual({ out: "still here\ngot SIGTERM", code: 3 });
  });

  test.skipIf(process.platform === "win32")("a held stop signal nobody listens for ends the process as it would have, after the hold", () => {
    const unheld = run(`holdStopSignals(200);
process.kill(process.pid, "SIGTERM");
console.log("held");
await Bun.sleep(5000);
console.log("never");`);
    expect(unheld.out).toBe("held");
    expect(unheld.signal).toBe("SIGTERM");
  });
});
