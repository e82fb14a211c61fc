// `docket serve` and `docket mcp` in a GitHub Actions job: their stderr carries capability text (a
// file's load error, a direct call's stack), which must never act as a workflow command (tester Z2).
import { afterAll, describe, expect, test } from "bun:test";
import { obeyedCommands } from "../_support/workflow-commands.ts";
import { docket, fromSource, removeTempDirs, spawnDocket, tempCheckout, watchStream, writeFiles } from "./_harness.ts";

afterAll(removeTempDirs);

/** What a file's top level prints straight to the descriptors, and in pieces. */
const PRINTS_ON_LOAD = `import { writeSync } from "node:fs";
console.log("::error title=F1::from console.log");
console.error("::error title=F2::from console.error");
process.stdout.write(":");
process.stdout.write(":error title=F3::split in two writes\\n");
writeSync(2, "::error title=F4::straight to the descriptor\\n");
export default {};
`;
const FORGED = "top level failed\\n::error title=forged::from a load error\\n##[warning]old form\\n::stop-commands::abc";
const THROWS_ON_LOAD = `throw new Error("${FORGED}");\nexport default {};\n`;
const THROWS_ON_CALL = `import { capability } from "docket";
import * as v from "valibot";
export default capability({
  id: "gha.say",
  title: "Say",
  description: "Throws a forged stack.",
  effect: "read",
  input: v.object({}),
  output: v.object({}),
  handler() {
    throw new Error("line1\\n::error title=forged::from a stack\\n::stop-commands::tok");
  },
});
`;

describe("docket serve and docket mcp under GitHub Actions", () => {
  test("capability text on their stderr is printed inert: a load error and a direct call's stack obey no command", async () => {
    const root = tempCheckout();
    writeFiles(root, { "capabilities/gha.load.ts": THROWS_ON_LOAD, "capabilities/gha.say.ts": THROWS_ON_CALL, "capabilities/gha.prints.ts": PRINTS_ON_LOAD });
    const env = { GITHUB_ACTIONS: "true" };
    const server = spawnDocket(fromSource, ["serve", "--port", "0"], { cwd: root, env });
    try {
      const stderr = watchStream(server.stderr!);
      const banner = await stderr.until(/docket serving .* at (http:\/\/127\.0\.0\.1:\d+)/);
      const url = /at (http:\/\/127\.0\.0\.1:\d+)/.exec(banner)![1]!;
      expect((await fetch(`${url}/api/v1/gha/say`)).status).toBe(500);
      const said = await stderr.until(/gha\.say \(direct call\)[\s\S]*::stop-commands::tok/);
      expect(said).toContain("::error title=forged::from a load error");
      expect(said).toContain("F4::straight to the descriptor");
      expect(obeyedCommands(said)).toEqual([]);
    } finally {
      server.kill("SIGTERM");
      await server.exited;
    }
    const stdout = await new Response(server.stdout).text();
    expect(stdout).toContain("split in two writes");
    expect(obeyedCommands(stdout)).toEqual([]);
    const mcp = await docket(fromSource, ["mcp"], { cwd: root, env, stdin: "" });
    expect(mcp.stderr).toContain("::error title=forged::from a load error");
    expect(obeyedCommands(mcp.stderr)).toEqual([]);
  }, 30_000);
});
