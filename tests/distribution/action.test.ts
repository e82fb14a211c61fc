// action.yml's steps run as GitHub's runner runs a composite action, against a release served on
// 127.0.0.1: install (checked, cached per version), then `docket run` with its log, summary and outputs.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, linkSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { GREET } from "../cli/_fixtures.ts";
import { REPO, cleanEnv, removeTempDirs, tempCheckout, tempDir, writeFiles } from "../cli/_harness.ts";
import { parseOutputs, runComposite, type CompositeOptions } from "./_composite-runner.ts";
import { testRelease, serveRelease, type BuiltRelease, type ReleaseServer } from "./_release.ts";

const SLOW = 90_000;
const ID = /^x-\d{8}T\d{6}Z-[0-9a-f]{8}$/;
let release: BuiltRelease;
let server: ReleaseServer;
let workspace: string;

beforeAll(async () => {
  release = await testRelease();
  server = serveRelease(release.releaseDir);
  workspace = tempCheckout();
  writeFiles(workspace, { "capabilities/demo.greet.ts": GREET, "sub/.keep": "" });
}, 180_000);

afterAll(() => {
  server?.stop();
  removeTempDirs();
});

function job(inputs: Record<string, string>, runnerDir = tempDir("runner"), env: Record<string, string> = {}): CompositeOptions {
  return { actionDir: REPO, inputs, workspace, runnerDir, env: cleanEnv({ HOME: tempDir("home"), DOCKET_DOWNLOAD_URL: server.url, ...env }) };
}

describe("action.yml", () => {
  test("action.yml installs docket, runs the capability with groups, annotations and a summary, and sets its outputs", async () => {
    const run = await runComposite(job({ capability: "demo.greet", input: '{"name":"Ada"}', "working-directory": "sub" }));
    expect(run.code).toBe(0);
    expect(run.skipped).toEqual([]);
    expect(run.log).toContain(`Installed `);
    // The action puts the folder on PATH itself ($GITHUB_PATH): no advice to do it by hand.
    expect(run.log).not.toContain("not on");
    expect(run.log).not.toContain(".bashrc");
    expect(run.log).not.toContain(".profile");
    expect(run.log).toContain("::group::Composing the greeting (compose)");
    expect(run.log).toContain("::endgroup::");
    expect(run.log).toContain("::error file=src/a%2Cb.ts,line=3,col=7,title=demo_finding::a finding, with a comma: and 100%25");
    expect(run.log).toContain('"greeting": "Hello, Ada!"');
    expect(run.summary).toContain("### ✅ docket run `demo.greet` — succeeded");
    expect(run.outputs["execution-id"]).toMatch(ID);
    expect(run.outputs.state).toBe("succeeded");
    const document = JSON.parse(readFileSync(run.outputs["result-file"]!, "utf8"));
    expect(document.execution.id).toBe(run.outputs["execution-id"]!);
    expect(document.output).toEqual({ greeting: "Hello, Ada!" });
    expect(server.requests).toContain(release.manifest.artifacts[0]!.file);
  }, SLOW);

  test("action.yml reuses the cached binary of a version: the second job downloads no binary", async () => {
    const runner = tempDir("runner");
    const first = await runComposite(job({ capability: "demo.greet", input: '{"name":"Ada"}' }, runner));
    expect(first.code).toBe(0);
    const asked = server.requests.length;
    const second = await runComposite(job({ capability: "demo.greet", input: '{"name":"Bo"}' }, runner));
    expect(second.code).toBe(0);
    expect(second.skipped).toHaveLength(1);
    expect(second.log).toContain('"greeting": "Hello, Bo!"');
    // "latest" is resolved from SHA256SUMS; the binary itself comes from the cache.
    expect(server.requests.slice(asked)).toEqual(["SHA256SUMS"]);
    // A pinned version asks the release page nothing at all.
    const pinned = await runComposite(job({ capability: "demo.greet", input: '{"name":"Cy"}', version: release.manifest.version }, runner));
    expect(pinned.code).toBe(0);
    expect(server.requests.slice(asked)).toEqual(["SHA256SUMS"]);
  }, SLOW);

  test("action.yml leaves docket's exit code: a failing capability fails the step, with its outputs and a failure summary", async () => {
    const run = await runComposite(job({ capability: "demo.greet", input: '{"name":"typed"}', format: "json" }));
    expect(run.code).toBe(1);
    expect(run.outputs.state).toBe("failed");
    expect(run.outputs["execution-id"]).toMatch(ID);
    expect(run.summary).toContain("**no_such_person**: Nobody is called typed.");
    const document = JSON.parse(readFileSync(run.outputs["result-file"]!, "utf8"));
    expect(document.failure.error_code).toBe("no_such_person");
    // --format json: the log holds the same document on stdout.
    expect(run.log).toContain('"error_code": "no_such_person"');
  }, SLOW);

  test("action.yml: input that fails the schema exits 2 with state refused; an input cannot run shell code", async () => {
    const marker = join(tempDir("marker"), "pwned");
    const run = await runComposite(job({ capability: "demo.greet", input: `{"name": ""}$(touch ${marker})` }));
    expect(run.code).toBe(2);
    expect(run.outputs.state).toBe("refused");
    expect(run.outputs["execution-id"]).toBe("");
    expect(existsSync(marker)).toBe(false);
    const named = await runComposite(job({ capability: "demo.greet", input: '{"name":""}' }));
    expect(named.code).toBe(2);
    expect(named.summary).toContain("invalid_input");
  }, SLOW);

  test("action.yml refuses a tampered release: the install step fails and nothing is cached", async () => {
    const tampered = tempDir("tampered");
    linkSync(join(release.releaseDir, "SHA256SUMS"), join(tampered, "SHA256SUMS"));
    writeFileSync(join(tampered, release.manifest.artifacts[0]!.file), "#!/bin/sh\necho pwned\n");
    const evil = serveRelease(tampered);
    const runner = tempDir("runner");
    try {
      const run = await runComposite({ ...job({ capability: "demo.greet" }, runner), env: cleanEnv({ HOME: tempDir("home"), DOCKET_DOWNLOAD_URL: evil.url }) });
      expect(run.code).toBe(1);
      expect(run.log).toContain("checksum mismatch");
      expect(run.ran).not.toContain("run");
      expect(existsSync(join(runner, "actions-cache"))).toBe(true);
      expect(Bun.spawnSync(["ls", "-A", join(runner, "actions-cache")]).stdout.toString()).toBe("");
    } finally {
      evil.stop();
    }
  }, SLOW);

  test("action.yml refuses a version that is not one before any download", async () => {
    const asked = server.requests.length;
    const run = await runComposite(job({ capability: "demo.greet", version: "1.0; curl evil" }));
    expect(run.code).toBe(1);
    expect(run.log).toContain('"1.0; curl evil" is not a docket version');
    expect(server.requests.length).toBe(asked);
    // A newline in it is escaped: it cannot end the annotation and start a workflow command (distribution tester, session 44).
    const forged = await runComposite(job({ capability: "demo.greet", version: "1.0\n::add-mask::x" }));
    expect(forged.code).toBe(1);
    expect(forged.log).toContain('::error title=docket::"1.0%0A::add-mask::x" is not a docket version');
    expect(forged.log).not.toMatch(/^::add-mask::/m);
  }, SLOW);

  test("action.yml: the version input alone decides; a DOCKET_VERSION or DOCKET_INSTALL_DIR in the job's env changes nothing (hostile tester)", async () => {
    const run = await runComposite(job({ capability: "demo.greet", input: '{"name":"Ada"}' }, tempDir("runner"), { DOCKET_VERSION: "9.9.9", DOCKET_INSTALL_DIR: "~nobody/bin" }));
    expect(run.log).not.toContain("9.9.9");
    expect(run.code).toBe(0);
    expect(run.outputs.state).toBe("succeeded");
    expect(run.log).toContain(`Installed `);
  }, SLOW);

  test("action.yml refuses a capability input that begins with -, which docket run would take for an option: exit 2, state refused, the document and a summary (hostile tester)", async () => {
    const runner = tempDir("runner");
    for (const capability of ["--help", "-h", "--version", "--format=json"]) {
      const run = await runComposite(job({ capability }, runner));
      expect(run.code).toBe(2);
      expect(run.ran).toContain("run");
      expect(run.outputs.state).toBe("refused");
      expect(run.outputs["execution-id"]).toBe("");
      expect(run.log).toContain(`::error title=docket::capability ${capability}: The capability input begins with \`-\``);
      expect(run.log).not.toContain("USAGE");
      expect(run.summary).toContain("### ❌ docket run — refused");
      expect(run.summary).toContain("**invalid_input**: The capability input begins with `-`");
      const document = JSON.parse(readFileSync(run.outputs["result-file"]!, "utf8"));
      expect(document.execution).toBeNull();
      expect(document.failure).toMatchObject({ error_code: "invalid_input", context: { reason: "usage" } });
      expect(document.failure.correlation_id).toMatch(/^c-[0-9a-f]{16}$/);
    }
    // --format json: the one document on stdout too; a line break in the input is no workflow command.
    const json = await runComposite(job({ capability: "-x\n::warning::injected", format: "json" }, runner));
    expect(json.code).toBe(2);
    expect(json.log).toContain('"error_code": "invalid_input"');
    expect(json.log).toContain("::error title=docket::capability -x%0A::warning::injected:");
    expect(json.log).not.toContain("\n::warning::injected");
  }, SLOW);
});

describe("docket run in GitHub Actions", () => {
  test("parseOutputs reads both forms GitHub accepts", () => {
    expect(parseOutputs("a=1\nb<<EOF_X\nline 1\nline 2\nEOF_X\nc=\n")).toEqual({ a: "1", b: "line 1\nline 2", c: "" });
  });
});
