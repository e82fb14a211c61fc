// Every example in examples/ runs through the compiled binary, copied into a temporary checkout as
// a user would copy it, against loopback servers standing in for the outside world.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { cpSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { buildBinary, docket, fromBinary, REPO, removeTempDirs, spawnDocket, tempCheckout, watchStream, writeFiles, type DocketRunner } from "../cli/_harness.ts";

let binary: DocketRunner;

beforeAll(async () => {
  binary = fromBinary(await buildBinary());
}, 180_000);

afterAll(removeTempDirs);

const EXAMPLES = join(REPO, "examples");

/** A checkout holding the example in capabilities/, plus the given files. */
function checkoutWith(example: string, files: Record<string, string> = {}): string {
  const checkout = tempCheckout();
  cpSync(join(EXAMPLES, `${example}.ts`), join(checkout, "capabilities", `${example}.ts`));
  writeFiles(checkout, files);
  return checkout;
}

/** A loopback HTTP server for one test; `requests` records what reached it. */
function loopback(handler: (request: Request) => Response | Promise<Response>) {
  const requests: Array<{ method: string; path: string; headers: Headers; body: string }> = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      requests.push({ method: request.method, path: new URL(request.url).pathname, headers: request.headers, body: await request.text() });
      return handler(request);
    },
  });
  return { url: `http://127.0.0.1:${server.port}`, requests, stop: () => server.stop(true) };
}

describe("examples/", () => {
  test("every example is run by this file", () => {
    const examples = readdirSync(EXAMPLES).filter((name) => name.endsWith(".ts")).sort();
    expect(examples).toEqual(expect.arrayContaining(["links.check.ts", "webhook.notify.ts", "workflows.report.ts"]));
  });

  test("workflows.report returns a table of workflows with the checkout's js-yaml, and a diagnostic for a broken file", async () => {
    const checkout = checkoutWith("workflows.report", {
      "package.json": JSON.stringify({ private: true, dependencies: { "js-yaml": "^5" } }),
      ".github/workflows/ci.yml": "name: CI\non: [push, pull_request]\njobs:\n  test:\n    runs-on: ubuntu-latest\n  lint:\n    runs-on: [self-hosted, linux]\n",
      ".github/workflows/release.yaml": "on:\n  push:\n    tags: ['v*']\njobs:\n  publish:\n    runs-on: ubuntu-latest\n",
      ".github/workflows/broken.yml": "name: Broken\non: push\njobs:\n  a: [unclosed\n",
    });
    for (const name of ["js-yaml", "argparse"]) cpSync(join(REPO, "node_modules", name), join(checkout, "node_modules", name), { recursive: true });
    const result = await docket(binary, ["run", "workflows.report", "--format", "json"], { cwd: checkout });
    expect(result.code).toBe(0);
    const { output, execution } = JSON.parse(result.stdout);
    expect(output).toEqual({
      workflows: [
        { file: ".github/workflows/ci.yml", name: "CI", triggers: ["push", "pull_request"], jobs: 2, runners: ["linux", "self-hosted", "ubuntu-latest"] },
        { file: ".github/workflows/release.yaml", name: ".github/workflows/release.yaml", triggers: ["push"], jobs: 1, runners: ["ubuntu-latest"] },
      ],
      unreadable: 1,
    });
    expect(execution.diagnostics).toEqual([expect.objectContaining({ severity: "warning", code: "invalid_yaml", file: ".github/workflows/broken.yml", line: 5 })]);
  });

  test("webhook.notify sends the token to the webhook and nowhere else", async () => {
    const hook = loopback(() => new Response("ok"));
    const token = "tok-4f1d9a7c2e";
    try {
      const checkout = checkoutWith("webhook.notify");
      const input = JSON.stringify({ url: `${hook.url}/hooks/deploy`, token, text: "Deployed v1.2.3" });
      const result = await docket(binary, ["run", "webhook.notify", "--input", input, "--format", "json"], { cwd: checkout });
      expect(result.code).toBe(0);
      expect(hook.requests).toHaveLength(1);
      expect(hook.requests[0]).toMatchObject({ method: "POST", path: "/hooks/deploy", body: JSON.stringify({ text: "Deployed v1.2.3" }) });
      expect(hook.requests[0]!.headers.get("authorization")).toBe(`Bearer ${token}`);
      const { output, execution } = JSON.parse(result.stdout);
      expect(output.status).toBe(200);
      expect(execution.input).toEqual({ url: `${hook.url}/hooks/deploy`, token: "[redacted]", text: "Deployed v1.2.3" });
      expect(result.stdout + result.stderr).not.toContain(token);
    } finally {
      hook.stop();
    }
  });

  test("webhook.notify fails with webhook_refused when the webhook refuses, without passing its body on", async () => {
    const hook = loopback(() => new Response("token tok-4f1d9a7c2e is not valid", { status: 401, statusText: "Unauthorized" }));
    try {
      const checkout = checkoutWith("webhook.notify");
      const input = JSON.stringify({ url: hook.url, token: "tok-4f1d9a7c2e", text: "hello" });
      const result = await docket(binary, ["run", "webhook.notify", "--input", input, "--format", "json"], { cwd: checkout });
      expect(result.code).toBe(1);
      const { failure } = JSON.parse(result.stdout);
      expect(failure).toMatchObject({ error_code: "webhook_refused", message: `${hook.url} answered 401 Unauthorized.`, suggestion: "Check the token." });
      expect(result.stdout + result.stderr).not.toContain("tok-4f1d9a7c2e");
    } finally {
      hook.stop();
    }
  });

  test("links.check reports each broken link with its file and line, writes links.tsv and fails broken_links", async () => {
    const site = loopback((request) => new Response(null, { status: new URL(request.url).pathname === "/missing" ? 404 : 200 }));
    try {
      const checkout = checkoutWith("links.check", {
        "docs/guide.md": `# Guide\n\nSee ${site.url}/ok and\nthe [old page](${site.url}/missing).\n`,
        "README.md": `Home: ${site.url}/ok\n`,
        "node_modules/pkg/README.md": `${site.url}/missing\n`,
      });
      const result = await docket(binary, ["run", "links.check", "--format", "json"], { cwd: checkout });
      expect(result.code).toBe(1);
      const { execution, failure } = JSON.parse(result.stdout);
      expect(failure).toMatchObject({ error_code: "broken_links", context: { files: 2, links: 2, broken: 1 } });
      expect(execution.diagnostics).toEqual([expect.objectContaining({ severity: "error", code: "broken_link", message: `${site.url}/missing: HTTP 404`, file: "docs/guide.md", line: 4 })]);
      expect(execution.steps.map((s: { id: string; state: string }) => [s.id, s.state])).toEqual([
        ["find", "succeeded"],
        ["extract", "succeeded"],
        ["check", "failed"],
      ]);
      const tsv = readFileSync(join(checkout, ".docket", "artifacts", execution.id, "links.tsv"), "utf8");
      expect(tsv).toContain(`HTTP 404\t${site.url}/missing\tdocs/guide.md:4`);
      expect(tsv).toContain(`ok\t${site.url}/ok\tREADME.md:1 docs/guide.md:3`);
    } finally {
      site.stop();
    }
  });

  test("links.check stops when cancelled, even in the middle of a request that never answers", async () => {
    // /hang never answers: only the cancel can end the run.
    const site = loopback((request) => (new URL(request.url).pathname === "/hang" ? new Promise<Response>(() => {}) : new Response("ok")));
    try {
      const checkout = checkoutWith("links.check", { "docs/a.md": `${site.url}/ok\n${site.url}/hang\n` });
      const child = spawnDocket(binary, ["run", "links.check", "--input", '{"timeout_ms":120000}'], { cwd: checkout });
      const stderr = watchStream(child.stderr);
      await stderr.until(/\[1\/2\]/);
      // The second request is in flight (or about to be): Ctrl-C asks the execution to stop.
      child.kill("SIGINT");
      expect(await child.exited).toBe(130);
      expect(await stderr.done).toContain("cancelled");
    } finally {
      site.stop();
    }
  });
});
