import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DocketServer } from "../../runtime/server/serve.ts";
import { serveCheckout } from "./_support/servers.ts";

// A capability file discovery does not take (in a subfolder, or named .tsx) is named, with why and
// what to do, wherever its id is asked for over HTTP: the capability's route, the cockpit's page
// and capabilities.get — not a bare "not loaded" (docs/authoring.md; the CLI said it already).

let root: string;
let server: DocketServer;
const logged: string[] = [];

const capabilityFile = (id: string) =>
  `import { capability } from "docket";\nimport * as v from "valibot";\nexport default capability({ id: ${JSON.stringify(id)}, title: "t", description: "d", effect: "read", input: v.object({}), output: v.object({}), handler: () => ({}) });\n`;

beforeAll(async () => {
  root = realpathSync(mkdtempSync(join(tmpdir(), "docket-lookalike-http-")));
  mkdirSync(join(root, "capabilities", "ci"), { recursive: true });
  writeFileSync(join(root, "capabilities", "ci", "ci.lint.ts"), capabilityFile("ci.lint"));
  writeFileSync(join(root, "capabilities", "page.view.tsx"), capabilityFile("page.view"));
  writeFileSync(join(root, "capabilities", "team.greet.ts"), capabilityFile("team.greet"));
  server = await serveCheckout(root, { log: (line) => logged.push(line) });
});

afterAll(async () => {
  await server?.stop();
  rmSync(root, { recursive: true, force: true });
});

describe("a look-alike capability file, asked for over HTTP", () => {
  const subfolder = () => `${join(root, "capabilities/ci/ci.lint.ts")} is not loaded: it is in the subfolder ci/`;
  const tsx = () => `${join(root, "capabilities/page.view.tsx")} is not loaded: docket loads capability files named .ts or .js, not .tsx; rename it to page.view.ts`;

  test("its API route is 404 naming the file, why, and what to do", async () => {
    for (const [path, said] of [
      ["/api/v1/ci/lint", subfolder()],
      ["/api/v1/page/view", tsx()],
    ] as const) {
      const response = await fetch(`${server.url}${path}`, { method: "POST", headers: { "Content-Type": "application/json" }, body: "{}" });
      const body = (await response.json()) as { error: { error_code: string; message: string; suggestion: string; context: Record<string, unknown> } };
      expect({ path, status: response.status, code: body.error.error_code, reason: body.error.context.reason }).toEqual({ path, status: 404, code: "not_found", reason: "not_a_capability_file" });
      expect(body.error.message).toContain(said);
      expect(body.error.suggestion).toContain("Move or rename the file");
    }
    // An id no file looks like keeps the closest ids.
    const other = (await (await fetch(`${server.url}/api/v1/team/greeet`, { method: "POST", headers: { "Content-Type": "application/json" }, body: "{}" })).json()) as { error: { suggestion: string } };
    expect(other.error.suggestion).toContain("Did you mean /api/v1/team/greet?");
    // An id no file can declare (its file would be skipped as a test) says what to name it instead (authoring checking tester, session 49).
    const skipped = (await (await fetch(`${server.url}/api/v1/other/d`, { method: "POST", headers: { "Content-Type": "application/json" }, body: "{}" })).json()) as { error: { suggestion: string } };
    expect(skipped.error.suggestion).toStartWith("A capability's id cannot end in .d: its file would be other.d.ts, and docket skips *.d.ts files (declaration files); choose another last part, like other.data.");
  });

  test("the cockpit's page and capabilities.get say the same", async () => {
    const page = await fetch(`${server.url}/cockpit/capabilities/ci.lint`);
    expect(page.status).toBe(404);
    const html = await page.text();
    expect(html).toContain("Capability file not loaded");
    expect(html).toContain(`${join(root, "capabilities/ci/ci.lint.ts")} is not loaded`);
    const get = (await (await fetch(`${server.url}/api/v1/capabilities/get?id=page.view`)).json()) as { error: { error_code: string; suggestion: string } };
    expect(get.error.error_code).toBe("not_found");
    expect(get.error.suggestion).toContain(tsx());
  });

  test("the server names each at start, with why, unasked: an .mts or a subfolder's file was ignored without a word (authoring tester, session 46)", () => {
    expect(logged).toContain(`docket does not load ${join(root, "capabilities/page.view.tsx")} as the capability page.view: docket loads capability files named .ts or .js, not .tsx; rename it to page.view.ts (the modules it imports may stay .tsx)`);
    expect(logged.some((line) => line.startsWith(`docket does not load ${join(root, "capabilities/ci/ci.lint.ts")} as the capability ci.lint: it is in the subfolder ci/`))).toBe(true);
  });
});
