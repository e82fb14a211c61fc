// Which signals stop a docket process cleanly (adapter/stop-signals.ts): a hang-up too, unless the
// process was started with hang-ups ignored, as nohup starts it.
import { describe, expect, test } from "bun:test";

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
});
