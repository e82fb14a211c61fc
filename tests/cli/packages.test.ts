// A capability file imports the checkout's own npm packages: through the compiled binary, in a
// temporary checkout outside this repository, whose node_modules holds copies of real packages
// taken from this repository's node_modules (no network in tests).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { cpSync } from "node:fs";
import { join } from "node:path";
import { buildBinary, docket, fromBinary, REPO, removeTempDirs, spawnDocket, tempCheckout, watchStream, writeFiles, type DocketRunner } from "./_harness.ts";

let binary: DocketRunner;

beforeAll(async () => {
  binary = fromBinary(await buildBinary());
}, 180_000);

afterAll(removeTempDirs);

/**
 * `docket serve` of `checkout` (memory store, `args` added) through the binary, and what it says on
 * stderr: `said(pattern)` waits 20 s at most for a line, then stops the server and fails with all
 * it said; `said.url()` is its address, `said.all()` everything once it ended.
 */
function serving(checkout: string, args: string[]) {
  const child = spawnDocket(binary, ["serve", "--port", "0", "--store", "memory", ...args], { cwd: checkout });
  const stderr = watchStream(child.stderr);
  const said = Object.assign(
    (pattern: RegExp) =>
      Promise.race([
        stderr.until(pattern),
        Bun.sleep(20_000).then(async () => {
          child.kill("SIGINT");
          throw new Error(`docket serve never said ${pattern}; it said:\n${await stderr.done}`);
        }),
      ]),
    {
      url: async () => (await said(/docket serving .* at http:\/\/127\.0\.0\.1:\d+/)).match(/at (http:\/\/127\.0\.0\.1:\d+)/)![1]!,
      all: () => stderr.done,
    },
  );
  return { child, said };
}

/** js-yaml is ES modules with an `exports` map; debug is CommonJS and requires its own dependency, ms. */
const PACKAGES = ["js-yaml", "argparse", "debug", "ms"];

/** A checkout whose package.json and node_modules hold js-yaml and debug, as `npm install` leaves them. */
function checkoutWithPackages(): string {
  const checkout = tempCheckout();
  for (const name of PACKAGES) cpSync(join(REPO, "node_modules", name), join(checkout, "node_modules", name), { recursive: true });
  writeFiles(checkout, {
    "package.json": JSON.stringify({ name: "team-automation", private: true, dependencies: { "js-yaml": "^4", debug: "^4" } }),
    "package-lock.json": "{}\n",
    "capabilities/config.summary.ts": `import { capability } from "docket";
import * as v from "valibot";
import { load } from "js-yaml";
import createDebug from "debug";

const debug = createDebug("config");

export default capability({
  id: "config.summary",
  title: "Summarize a YAML config",
  description: "Parses YAML with the checkout's js-yaml and counts its top-level keys.",
  effect: "read",
  input: v.object({ text: v.string() }),
  output: v.object({ keys: v.array(v.string()), debug: v.string() }),
  handler(input) {
    const parsed = load(input.text) as Record<string, unknown>;
    return { keys: Object.keys(parsed), debug: typeof debug };
  },
});
`,
  });
  return checkout;
}

describe("tsconfig.json compile options in capability files (compiled binary)", () => {
  test("legacy decorators (experimentalDecorators) and a JSX import source (jsxImportSource, classic jsx) from the nearest tsconfig.json run as under bun run: the binary's runtime applied none (hostile tester, session 38)", async () => {
    const checkout = tempCheckout();
    cpSync(join(REPO, "node_modules", "hono"), join(checkout, "node_modules", "hono"), { recursive: true });
    writeFiles(checkout, {
      "tsconfig.json": JSON.stringify({ compilerOptions: { experimentalDecorators: true } }),
      // A decorator TypeScript's legacy way calls with (target, key, descriptor); the standard way passes (method, context).
      "lib/_service.ts": 'function logged(target: object, key: string, desc: PropertyDescriptor) {\n  const original = desc.value;\n  desc.value = function (...args: unknown[]) { return "logged:" + original.apply(this, args); };\n}\nexport class Service {\n  @logged greet(name: string) { return "hi " + name; }\n}\n',
      "ui/tsconfig.json": JSON.stringify({ compilerOptions: { jsx: "react-jsx", jsxImportSource: "hono/jsx" } }),
      // An address holding "@jsx" is no pragma of its own (second checking tester).
      "ui/_card.tsx": "// questions: ui@jsxworks.dev\nexport const card = (title: string) => String(<div class=\"card\">{title}</div>);\n",
      // A #! line stays the first (checking tester); legacy decorators in a .tsx, with its JSX (checking tester).
      "ui/_bang.tsx": "#!/usr/bin/env bun\nexport const bang = () => String(<i>bang</i>);\n",
      "ui/tsx-decorated/tsconfig.json": JSON.stringify({ compilerOptions: { experimentalDecorators: true, jsx: "react-jsx", jsxImportSource: "hono/jsx" } }),
      "ui/tsx-decorated/_tagged.tsx": 'function tag(value: string) { return (target: { tag?: string }) => { target.tag = value; }; }\n@tag("from-tsx") export class Tagged { static tag?: string; }\nexport const tagged = () => `${Tagged.tag}:${String(<><b key="k">x</b>{1}</>)}`;\n',
      "classic/tsconfig.json": JSON.stringify({ compilerOptions: { jsx: "react", jsxFactory: "h", jsxFragmentFactory: "Fragment" } }),
      "classic/_tag.tsx": "const Fragment = \"\";\nconst h = (tag: string, _props: unknown, ...children: string[]) => `<${tag}>${children.join(\"\")}</${tag}>`;\nexport const tag = () => <b>{\"x\"}</b>;\n",
      "capabilities/team.compiled.ts": `import { capability } from "docket";
import * as v from "valibot";
import { Service } from "../lib/_service.ts";
import { card } from "../ui/_card.tsx";
import { tag } from "../classic/_tag.tsx";
import { bang } from "../ui/_bang.tsx";
import { tagged } from "../ui/tsx-decorated/_tagged.tsx";

export default capability({
  id: "team.compiled",
  title: "Compiled as the tsconfig says",
  description: "Uses a legacy decorator, hono's JSX and a classic JSX factory.",
  effect: "read",
  input: v.object({}),
  output: v.object({ greeting: v.string(), card: v.string(), tag: v.string(), bang: v.string(), tagged: v.string() }),
  handler: () => ({ greeting: new Service().greet("x"), card: card("T"), tag: tag(), bang: bang(), tagged: tagged() }),
});
`,
    });
    const result = await docket(binary, ["run", "team.compiled", "--format", "json"], { cwd: checkout });
    expect(result.stderr).toContain("✔ succeeded");
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).output).toEqual({ greeting: "logged:hi x", card: '<div class="card">T</div>', tag: "<b>x</b>", bang: "<i>bang</i>", tagged: "from-tsx:<b>x</b>1" });
  });
});

describe("npm packages in capability files (compiled binary)", () => {
  test("a capability importing packages from the checkout's node_modules runs with docket run", async () => {
    const checkout = checkoutWithPackages();
    const result = await docket(binary, ["run", "config.summary", "--input", JSON.stringify({ text: "name: docket\nport: 4700\n" }), "--format", "json"], { cwd: checkout });
    expect(result.stderr).not.toContain("did not load");
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).output).toEqual({ keys: ["name", "port"], debug: "function" });
  });

  test("the same capability runs on docket serve's workers: a direct call and an execution", async () => {
    const checkout = checkoutWithPackages();
    const child = spawnDocket(binary, ["serve", "--port", "0", "--store", "memory"], { cwd: checkout });
    const stderr = watchStream(child.stderr);
    try {
      const banner = await stderr.until(/docket serving .* at http:\/\/127\.0\.0\.1:\d+/);
      const url = banner.match(/at (http:\/\/127\.0\.0\.1:\d+)/)![1]!;
      const post = (path: string, body: unknown) => fetch(`${url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

      const direct = await post("/api/v1/config/summary", { text: "a: 1\nb: 2\nc: 3\n" });
      expect(direct.status).toBe(200);
      expect(await direct.json()).toEqual({ keys: ["a", "b", "c"], debug: "function" });

      const started = await post("/api/v1/executions/start", { capability: "config.summary", input: { text: "only: true\n" } });
      expect(started.status).toBe(200);
      const { execution } = (await started.json()) as { execution: { id: string } };
      // `executions events --follow` ends when the execution completes (it follows the live channel).
      const followed = await docket(binary, ["executions", "events", execution.id, "--follow"], { cwd: checkout });
      expect(followed.code).toBe(0);
      const snapshot = await (await fetch(`${url}/api/v1/executions/get?id=${execution.id}`)).json();
      expect(snapshot).toMatchObject({ state: "succeeded", output: { keys: ["only"], debug: "function" } });
    } finally {
      child.kill("SIGINT");
      await child.exited;
    }
    expect(await stderr.done).not.toContain("did not load");
  });

  test("scoped packages installed while serving a checkout that had no node_modules load with no restart: named first after the install, or before it; a dependency of theirs from a dist/ folder too (authoring tester, session 49)", async () => {
    const checkout = tempCheckout();
    const file = (id: string, pkg: string) => `import { capability } from "docket";
import * as v from "valibot";
import { hi } from "${pkg}";
export default capability({ id: "${id}", title: "t", description: "d", effect: "read", input: v.object({}), output: v.object({ hi: v.number() }), handler: () => ({ hi }) });
`;
    const { child, said } = serving(checkout, []);
    try {
      const url = await said.url();
      // Named before the install: a load error saying to install it.
      writeFiles(checkout, { "capabilities/early.pkg.ts": file("early.pkg", "@acme/early") });
      await said(/could not load .*early\.pkg\.ts.*"@acme\/early" is not installed/);
      // Installed as npm leaves them, after the process started: @acme/x's entry in dist/ imports @acme/y.
      writeFiles(checkout, {
        "node_modules/@acme/y/package.json": JSON.stringify({ name: "@acme/y", version: "1.0.0", type: "module", main: "index.js" }),
        "node_modules/@acme/y/index.js": "export const y = 41;\n",
        "node_modules/@acme/x/package.json": JSON.stringify({ name: "@acme/x", version: "1.0.0", type: "module", main: "dist/index.js", dependencies: { "@acme/y": "1.0.0" } }),
        "node_modules/@acme/x/dist/index.js": 'import { y } from "@acme/y";\nexport const hi = 1 + y;\n',
        "node_modules/@acme/early/package.json": JSON.stringify({ name: "@acme/early", version: "1.0.0", type: "module", main: "index.js" }),
        "node_modules/@acme/early/index.js": "export const hi = 7;\n",
        // Written last, as npm does: the top level of node_modules changes once the install is whole.
        "node_modules/.package-lock.json": "{}\n",
      });
      await said(/added early\.pkg/);
      // Named first after the install: it was "installed after docket started… Restart".
      writeFiles(checkout, { "capabilities/scoped.pkg.ts": file("scoped.pkg", "@acme/x") });
      await said(/added scoped\.pkg/);
      for (const [path, hi] of [["scoped/pkg", 42], ["early/pkg", 7]] as const) {
        const answer = await fetch(`${url}/api/v1/${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
        expect(await answer.json()).toEqual({ hi });
      }
    } finally {
      child.kill("SIGINT");
      await child.exited;
    }
    expect(await said.all()).not.toContain("Restart");
  }, 60_000);

  test("an install where the load error says to run it — a workspace's own folder, not the checkout's root — is picked up while serving, with no edit (authoring checking tester, session 49)", async () => {
    const checkout = tempCheckout();
    writeFiles(checkout, {
      "packages/tools/package.json": JSON.stringify({ name: "tools", private: true, dependencies: { "@acme/w": "1.0.0" } }),
      "packages/tools/caps/ws.pkg.ts": `import { capability } from "docket";
import * as v from "valibot";
import { hi } from "@acme/w";
export default capability({ id: "ws.pkg", title: "t", description: "d", effect: "read", input: v.object({}), output: v.object({ hi: v.number() }), handler: () => ({ hi }) });
`,
    });
    const { child, said } = serving(checkout, ["--capabilities", "packages/tools/caps"]);
    try {
      const url = await said.url();
      await said(/ws\.pkg\.ts.*"@acme\/w" is not installed\. Install it with `npm install @acme\/w` in .*packages\/tools/);
      // As `npm ci` there leaves it: package.json untouched, node_modules made, its .package-lock.json last.
      writeFiles(checkout, {
        "packages/tools/node_modules/@acme/w/package.json": JSON.stringify({ name: "@acme/w", version: "1.0.0", type: "module", main: "index.js" }),
        "packages/tools/node_modules/@acme/w/index.js": "export const hi = 5;\n",
        "packages/tools/node_modules/.package-lock.json": "{}\n",
      });
      await said(/added ws\.pkg/);
      const answer = await fetch(`${url}/api/v1/ws/pkg`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
      expect(await answer.json()).toEqual({ hi: 5 });
    } finally {
      child.kill("SIGINT");
      await child.exited;
    }
  }, 60_000);

  test("a package that is not installed is a load error naming it and the command that installs it", async () => {
    const checkout = tempCheckout();
    writeFiles(checkout, {
      "package.json": JSON.stringify({ name: "team-automation", private: true }),
      "bun.lock": "{}\n",
      "capabilities/report.weekly.ts": `import { capability } from "docket";
import * as v from "valibot";
import { Octokit } from "@octokit/rest";

export default capability({
  id: "report.weekly",
  title: "Weekly report",
  description: "Needs @octokit/rest, which this checkout has not installed.",
  effect: "read",
  input: v.object({}),
  output: v.object({ ok: v.boolean() }),
  handler: () => ({ ok: typeof Octokit === "function" }),
});
`,
    });
    const listed = await docket(binary, ["capabilities", "list"], { cwd: checkout });
    expect(listed.stdout + listed.stderr).toContain(
      `capabilities/report.weekly.ts:3:25 cannot resolve import "@octokit/rest": the package "@octokit/rest" is not installed. Install it with \`bun add @octokit/rest\` in ${checkout}.`,
    );
    // Run by id, its file's load error is the refusal, not a note that the run goes on without it
    // followed by not_found.
    const ran = await docket(binary, ["run", "report.weekly", "--format", "json"], { cwd: checkout });
    expect(ran.code).toBe(2);
    expect(JSON.parse(ran.stdout).failure).toMatchObject({ error_code: "invalid_input", retryability: "never" });
    expect(ran.stderr).toContain(`error invalid_input: Cannot run report.weekly: capabilities/report.weekly.ts:3:25 cannot resolve import "@octokit/rest": the package "@octokit/rest" is not installed. Install it with \`bun add @octokit/rest\` in ${checkout}.\n`);
    expect(ran.stderr).not.toContain("did not load (the run goes on without it)");
    expect(ran.stderr).not.toContain("not_found");
    // Run by its path, the refusal is one sentence that ends with one period, not two.
    const byPath = await docket(binary, ["run", "./capabilities/report.weekly.ts"], { cwd: checkout });
    expect(byPath.code).toBe(2);
    expect(byPath.stderr).toContain(`Install it with \`bun add @octokit/rest\` in ${checkout}.\n`);
    expect(byPath.stderr).not.toContain("..");
  });

  test('"docket" and "valibot" are docket\'s own even when the checkout installs other copies', async () => {
    const checkout = tempCheckout();
    writeFiles(checkout, {
      "node_modules/valibot/package.json": JSON.stringify({ name: "valibot", version: "0.0.1", type: "module", exports: "./index.js" }),
      "node_modules/valibot/index.js": 'throw new Error("the checkout\'s valibot was loaded");\n',
      "node_modules/docket/package.json": JSON.stringify({ name: "docket", version: "0.0.1", type: "module", exports: "./index.js" }),
      "node_modules/docket/index.js": 'throw new Error("the checkout\'s docket was loaded");\n',
      "capabilities/hello.plain.ts": `import { capability } from "docket";
import * as v from "valibot";
export default capability({
  id: "hello.plain", title: "Hello", description: "Uses docket's own modules.", effect: "read",
  input: v.object({}), output: v.object({ ok: v.boolean() }),
  handler: () => ({ ok: true }),
});
`,
    });
    const ran = await docket(binary, ["run", "hello.plain", "--format", "json"], { cwd: checkout });
    expect(ran.stderr).not.toContain("was loaded");
    expect(JSON.parse(ran.stdout).output).toEqual({ ok: true });
  });
});
