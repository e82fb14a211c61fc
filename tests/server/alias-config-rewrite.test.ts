import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DocketServer } from "../../runtime/server/serve.ts";
import { serveCheckout } from "./_support/servers.ts";

// A config rewritten while serving that leaves a name's mapping as it was (docs/authoring.md,
// "Live reload"): `npm install` rewrites package.json, editor-types.md has `"types"` added to
// capabilities/tsconfig.json. A worker that had run other capabilities before, and imports the
// workspace package or the alias only after the write, serves the capability as loaded — it
// refused it as "changed after this process first read it", and every call failed as
// capability_changed (hostile tester, session 38).

let root: string;
let server: DocketServer;

const capabilityFile = (id: string, imports: string, output: string) =>
  `import { capability } from "docket";\nimport * as v from "valibot";\n${imports}\nexport default capability({ id: ${JSON.stringify(id)}, title: ${JSON.stringify(id)}, description: "Answers through what it imports.", effect: "read", input: v.object({}), output: v.object({ said: v.string() }), handler: () => ({ said: ${output} }) });\n`;

const call = async (id: string) => {
  const response = await fetch(`${server.url}/api/v1/${id.replace(".", "/")}`, { method: "POST", headers: { "Content-Type": "application/json" }, body: "{}" });
  return { status: response.status, body: (await response.json()) as { said?: string; error_code?: string; message?: string } };
};

beforeAll(async () => {
  root = realpathSync(mkdtempSync(join(tmpdir(), "docket-alias-rewrite-")));
  mkdirSync(join(root, ".git"));
  // An npm workspace: its package linked into node_modules, resolving to its own folder.
  writeFileSync(join(root, "package.json"), JSON.stringify({ name: "team", private: true, workspaces: ["packages/*"] }));
  mkdirSync(join(root, "packages", "util", "src"), { recursive: true });
  writeFileSync(join(root, "packages", "util", "package.json"), JSON.stringify({ name: "@team/util", version: "1.0.0", type: "module", main: "./src/index.ts" }));
  writeFileSync(join(root, "packages", "util", "src", "index.ts"), "export const shout = (s: string) => s.toUpperCase();\n");
  mkdirSync(join(root, "node_modules", "@team"), { recursive: true });
  symlinkSync("../../packages/util", join(root, "node_modules", "@team", "util"));
  // A tsconfig `paths` alias of the capabilities' folder, as docket init writes one.
  mkdirSync(join(root, "capabilities"));
  mkdirSync(join(root, "lib"));
  writeFileSync(join(root, "lib", "word.ts"), 'export const WORD = "aliased";\n');
  writeFileSync(join(root, "capabilities", "tsconfig.json"), JSON.stringify({ compilerOptions: { paths: { "@lib/*": ["../lib/*"] } } }));
  writeFileSync(join(root, "capabilities", "team.plain.ts"), capabilityFile("team.plain", "", '"plain"'));
  writeFileSync(join(root, "capabilities", "team.workspace.ts"), capabilityFile("team.workspace", 'import { shout } from "@team/util";', 'shout("hi")'));
  writeFileSync(join(root, "capabilities", "team.alias.ts"), capabilityFile("team.alias", 'import { WORD } from "@lib/word.ts";', "WORD"));
  server = await serveCheckout(root, { watchOptions: { debounceMs: 30 } });
});

afterAll(async () => {
  await server?.stop();
  rmSync(root, { recursive: true, force: true });
});

describe("a config rewritten while serving, its mappings unchanged", () => {
  test("a workspace package and a tsconfig alias imported first after package.json and tsconfig.json were rewritten still run", async () => {
    // Every worker reads the capabilities' folder, and notes its configs, before the writes.
    const warm = await Promise.all(Array.from({ length: 6 }, () => call("team.plain")));
    expect(warm.map((answer) => answer.body.said)).toEqual(Array(6).fill("plain"));
    // What `npm install ms` does to the root manifest, and what editor-types.md has added to the tsconfig.
    await Bun.sleep(20);
    writeFileSync(join(root, "package.json"), JSON.stringify({ name: "team", private: true, workspaces: ["packages/*"], dependencies: { ms: "^2.1.3" } }));
    writeFileSync(join(root, "capabilities", "tsconfig.json"), JSON.stringify({ compilerOptions: { paths: { "@lib/*": ["../lib/*"] }, types: ["node"] } }));
    // Once the reload the writes cause has settled: the capabilities are still listed, unchanged.
    await Bun.sleep(300);
    const listed = (await (await fetch(`${server.url}/api/v1/capabilities/list`)).json()) as { capabilities: Array<{ id: string }>; load_errors: unknown[] };
    expect(listed.load_errors).toEqual([]);
    expect(listed.capabilities.map((c) => c.id)).toEqual(expect.arrayContaining(["team.workspace", "team.alias"]));
    for (let round = 0; round < 3; round++) {
      const [workspace, alias] = await Promise.all([call("team.workspace"), call("team.alias")]);
      expect(workspace).toEqual({ status: 200, body: { said: "HI" } });
      expect(alias).toEqual({ status: 200, body: { said: "aliased" } });
    }
  });
});
