// docket's other commands from source: help, version, capabilities, new, and command-line mistakes.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { obeyedCommands } from "../_support/workflow-commands.ts";
import { ECHO } from "./_fixtures.ts";
import { docket, fromSource, REPO, removeTempDirs, tempCheckout, writeFiles } from "./_harness.ts";

afterAll(removeTempDirs);

let checkout = "";
beforeAll(() => {
  checkout = tempCheckout();
  writeFiles(checkout, { "capabilities/demo.echo.ts": ECHO, "capabilities/broken.one.ts": "export default 5;\n" });
});
const cli = (args: string[], cwd = checkout) => docket(fromSource, args, { cwd });

describe("docket --help and --version", () => {
  test("docket --version prints package.json's version and says it runs from source", async () => {
    const platform = `${process.platform === "win32" ? "windows" : process.platform}-${process.arch}`;
    expect(await cli(["--version"])).toMatchObject({ code: 0, stdout: `docket ${pkg.version} (from source, ${platform}, bun ${Bun.version})\n` });
    // -v and -V (as Python and GNU tools spell it) say the same; it said "docket needs a command".
    for (const flag of ["-v", "-V"]) expect(await cli([flag])).toMatchObject({ code: 0, stdout: `docket ${pkg.version} (from source, ${platform}, bun ${Bun.version})\n` });
  });

  test("docket --version --format json is one JSON document of the same facts; --format text the line; another format is named", async () => {
    const platform = `${process.platform === "win32" ? "windows" : process.platform}-${process.arch}`;
    const document = { version: pkg.version, commit: null, target: platform, runtime: `bun ${Bun.version}` };
    // A script passing --format json to every command got "docket needs a command." (session 48's note).
    for (const line of [["--version", "--format", "json"], ["--format", "json", "-V"], ["-v", "--format=json"]]) {
      const result = await cli(line);
      expect(result.code).toBe(0);
      expect(JSON.parse(result.stdout)).toEqual(document);
    }
    expect(await cli(["--version", "--format", "text"])).toMatchObject({ code: 0, stdout: `docket ${pkg.version} (from source, ${platform}, bun ${Bun.version})\n` });
    expect(await cli(["--version", "--format", "xml"])).toMatchObject({ code: 2, stdout: "", stderr: '--format must be text or json, got "xml".\nSee docket --help.\n' });
    expect(await cli(["--version", "--format", "json", "--format", "text"])).toMatchObject({ code: 2, stdout: "", stderr: "Option --format of docket is given more than once. Give it once.\nSee docket --help.\n" });
  });

  for (const [command, example] of [
    [[], "docket run health.report"],
    [["run"], `docket run files.digest --input '{"path":"src"}'`],
    [["capabilities"], "docket capabilities show health.report"],
    [["capabilities", "list"], "docket capabilities list --format json"],
    [["capabilities", "show"], "docket capabilities show files.digest --format json"],
    [["serve"], "docket serve --port 8080 --open"],
    [["new"], "docket new hello.greet"],
  ] as Array<[string[], string]>) {
    test(`docket ${command.join(" ")} --help names the command and shows an example`, async () => {
      const result = await cli([...command, "--help"]);
      expect(result.code).toBe(0);
      expect(result.stdout).toContain(`USAGE docket${command.length ? ` ${command.join(" ")}` : ""}`);
      expect(result.stdout).toMatch(/^EXAMPLES?$/m);
      expect(result.stdout).toContain(example);
      // NO_COLOR is set by the harness: no escapes in help.
      expect(result.stdout).not.toContain("\u001b[");
    });
  }

  test("docket help [command] is docket [command] --help", async () => {
    expect(await cli(["help"])).toEqual(await cli(["--help"]));
    // Help about help is the top-level help (tester R1: "Unknown command help", exit 2).
    expect(await cli(["help", "help"])).toEqual(await cli(["--help"]));
    const run = await cli(["help", "run"]);
    expect(run).toEqual(await cli(["run", "--help"]));
    expect(run.stdout).toContain("USAGE docket run");
  });

  test("docket help <unknown command> answers as the mistyped command does: a \"did you mean\", exit 2", async () => {
    const typo = await cli(["help", "exectuions"]);
    expect(typo).toEqual(await cli(["exectuions"]));
    expect(typo.code).toBe(2);
    expect(typo.stdout).toBe("");
    expect(typo.stderr).toContain('Unknown command "exectuions" for docket. Did you mean docket executions?');
    const nested = await cli(["help", "capabilities", "lst"]);
    expect(nested.code).toBe(2);
    expect(nested.stderr).toContain('Unknown command "lst" for docket capabilities. Did you mean docket capabilities list?');
    const nope = await cli(["help", "nope"]);
    expect(nope.code).toBe(2);
    expect(nope.stderr).toContain('Unknown command "nope" for docket.');
  });

  test("an unknown command or a mistyped flag of a group gets its refusal alone, pointing to the help; a group named alone prints its help, then says it needs a command (MCP/CLI tester, session 44)", async () => {
    const frob = await cli(["capabilities", "frob"]);
    expect(frob).toMatchObject({ code: 2, stdout: "", stderr: 'Unknown command "frob" for docket capabilities.\nSee docket capabilities --help.\n' });
    const flag = await cli(["--versoin"]);
    expect(flag).toMatchObject({ code: 2, stdout: "", stderr: 'Unknown option --versoin for docket. Did you mean "--version"?\nSee docket --help.\n' });
    const group = await cli(["capabilities"]);
    expect(group.stderr).toContain("USAGE docket capabilities list|show");
    expect(group.stderr.trimEnd().split("\n").slice(-2)).toEqual(["docket capabilities needs a command.", "See docket capabilities --help."]);
  });

  test("docket run --help lists every flag and the exit codes", async () => {
    const { stdout } = await cli(["run", "--help"]);
    for (const flag of ["--input", "--format", "--run-id", "--deadline-ms", "--capabilities"]) expect(stdout).toContain(flag);
    expect(stdout).toContain("Exit codes: 0 succeeded, 1 failed, 2 usage or invalid input, 130 cancelled.");
  });

  test("docket serve --help lists one flag per limit", async () => {
    const { stdout } = await cli(["serve", "--help"]);
    for (const flag of ["--max-concurrent", "--heartbeat-ms", "--grace-ms", "--allow-host", "--token", "--store"]) expect(stdout).toContain(flag);
  });
});

describe("docket command-line mistakes exit 2", () => {
  test("an unknown command", async () => {
    const result = await cli(["launch"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('Unknown command "launch" for docket.');
  });

  test("an unknown flag names itself and points at --help", async () => {
    const result = await cli(["run", "demo.echo", "--inptu", "{}"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('Unknown option --inptu for docket run. Did you mean "--input"?');
    expect(result.stderr).toContain("See docket run --help.");
  });

  test("a mistyped flag of the root names the one meant, not 'needs a command'", async () => {
    const result = await cli(["--versoin"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('Unknown option --versoin for docket. Did you mean "--version"?');
    expect(result.stderr).not.toContain("needs a command");
  });

  test("a missing positional", async () => {
    const result = await cli(["run"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/Missing required positional argument: TARGET/);
  });

  test("a --format outside text|json", async () => {
    const result = await cli(["run", "demo.echo", "--format", "yaml"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--format");
  });

  test("a single-value flag given twice is refused naming it, before anything runs; a repeatable flag repeats", async () => {
    const retryKey = await cli(["run", "demo.echo", "--input", '{"message":"hi"}', "--run-id", "r1", "--run-id", "r2"]);
    expect(retryKey.code).toBe(2);
    expect(retryKey.stderr).toContain("Option --run-id of docket run is given more than once; it takes one value (of its options only --input-env and --capabilities repeat). Give it once.");
    expect(retryKey.stdout).toBe("");
    const input = await cli(["run", "demo.echo", "--input", '{"message":"A"}', "--input", '{"message":"B"}']);
    expect(input.code).toBe(2);
    // Not the values: an --input may hold a secret.
    expect(input.stderr).not.toContain("message");
    expect((await cli(["capabilities", "list", "--format", "json", "--format", "text"])).stderr).toContain("Option --format of docket capabilities list is given more than once");
    const dirs = tempCheckout();
    writeFiles(dirs, { "a/more.one.ts": ECHO.replace('"demo.echo"', '"more.one"'), "b/more.two.ts": ECHO.replace('"demo.echo"', '"more.two"') });
    const both = await cli(["capabilities", "list", "--capabilities", join(dirs, "a"), "--capabilities", join(dirs, "b")]);
    expect(both.code).toBe(0);
    expect(both.stdout).toContain("more.one");
    expect(both.stdout).toContain("more.two");
    // A mistyped folder is a usage error, not a listing of the built-ins alone that exits 0.
    for (const command of [["capabilities", "list"], ["capabilities", "show", "files.digest"]]) {
      const missing = await cli([...command, "--capabilities", join(dirs, "nope")]);
      expect(missing.code).toBe(2);
      expect(missing.stderr).toContain(`--capabilities ${join(dirs, "nope")} is not a folder. Give an existing folder of capability files.`);
      expect(missing.stdout).toBe("");
    }
  });

  test("a command line refused with --format json prints one JSON document, {error}, as a refusal by the server does; without it stdout stays empty (hostile tester, session 39)", async () => {
    for (const line of [
      ["executions", "show", "nope", "--format", "json"],
      ["executions", "events", "x-20260908T010203Z-0a1b2c3d", "--after", "1e1", "--format=json"],
      ["capabilities", "list", "--format", "json", "--bogus"],
      // Refused inside the command, after it claimed stdout for its document (walkthrough tester, session 40).
      ["capabilities", "show", "nope.nope", "--format", "json"],
      ["capabilities", "list", "--capabilities", "nodir", "--format", "json"],
      // A group's command that names none of them, or none (MCP/CLI tester, session 48: stdout was empty).
      ["executions", "bogus", "--format", "json"],
      ["bogus", "--format", "json"],
      ["executions", "--format", "json"],
    ]) {
      const refused = await cli(line);
      expect(refused.code).toBe(2);
      const document = JSON.parse(refused.stdout);
      expect(document.error).toMatchObject({ error_code: "invalid_input", context: { reason: "usage" } });
      expect(refused.stderr).toContain(document.error.message);
    }
    const text = await cli(["capabilities", "list", "--bogus"]);
    expect(text.code).toBe(2);
    expect(text.stdout).toBe("");
    // The value of --format is no command: docket --format json needs one.
    const bare = await cli(["--format", "json"]);
    expect(JSON.parse(bare.stdout).error.message).toBe("docket needs a command.");
    // Given before the command's words, it is the command's (checking tester, session 48: "Unknown command \"executions\"").
    const before = await cli(["--format", "json", "capabilities", "list"]);
    expect(before.code).toBe(0);
    expect(JSON.parse(before.stdout).capabilities.some((c: { id: string }) => c.id === "health.report")).toBe(true);
    const between = await cli(["capabilities", "--format=json", "list"]);
    expect(JSON.parse(between.stdout).capabilities.length).toBeGreaterThan(0);
  });

  test("a group without its command", async () => {
    const result = await cli(["capabilities"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("docket capabilities needs a command.");
  });
});

describe("docket capabilities", () => {
  test("list prints id, effect and title, then the files that did not load", async () => {
    const result = await cli(["capabilities", "list"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^ID +EFFECT +TITLE$/m);
    expect(result.stdout).toMatch(/^demo\.echo +read +Echo$/m);
    expect(result.stdout).toMatch(/^health\.report +read +/m);
    expect(result.stdout).toContain("1 capability file did not load:");
    expect(result.stdout).toMatch(/capabilities\/broken\.one\.ts .*not a capability/);
  });

  test("list names the files that look like capability files and are not loaded as ones, with why (authoring tester, session 46: x.cap.mts was ignored without a word)", async () => {
    const checkout = tempCheckout();
    const file = 'import { capability } from "docket";\nimport * as v from "valibot";\nexport default capability({ id: "x.cap", title: "X", description: "d", effect: "read", input: v.object({}), output: v.object({}), handler: () => ({}) });\n';
    writeFiles(checkout, { "capabilities/x.cap.mts": file, "capabilities/more/y.cap.ts": file.replace('"x.cap"', '"y.cap"') });
    const result = await cli(["capabilities", "list"], checkout);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("2 files look like a capability file but are not loaded:");
    expect(result.stdout).toContain("capabilities/x.cap.mts docket loads capability files named .ts or .js, not .mts; rename it to x.cap.ts");
    expect(result.stdout).toContain("capabilities/more/y.cap.ts it is in the subfolder more/");
  });

  test("list counts the files that did not load, not their problems: one file with two problems is one file", async () => {
    const twice = tempCheckout();
    writeFiles(twice, { "capabilities/bad.twice.ts": 'import { capability } from "docket";\nexport default capability({ id: "bad.twice", title: "", description: "Two problems.", effect: "delete", input: 1, output: 2, handler: () => ({}) } as never);\n' });
    const result = await cli(["capabilities", "list"], twice);
    expect(result.stdout).toContain("1 capability file did not load:");
    expect(result.stdout.match(/capabilities\/bad\.twice\.ts/g)!.length).toBeGreaterThan(1);
  });

  test("list and show print a declaration's title and description, a file's thrown reason and its very name without escape sequences or bidi overrides (no window title set, no screen cleared)", async () => {
    const hostile = tempCheckout();
    writeFiles(hostile, {
      "capabilities/esc.titled.ts": 'import { capability } from "docket";\nimport * as v from "valibot";\nexport default capability({ id: "esc.titled", title: "T \\u001b[31mred\\u001b[0m \\u001b]0;pwn\\u0007", description: "d \\u001b[2J \\u202eRTL", effect: "read", input: v.object({}), output: v.object({}), handler: () => ({}) });\n',
      "capabilities/esc.\u001b]0;FN\u0007name.ts": 'throw new Error("load \\u001b[31mfailed\\u001b[0m \\u202eRTL");\n',
    });
    const list = await cli(["capabilities", "list"], hostile);
    const show = await cli(["capabilities", "show", "esc.titled"], hostile);
    for (const text of [list.stdout, show.stdout]) expect(text).not.toMatch(/[\u001b\u0007\u202e]/);
    expect(list.stdout).toMatch(/^esc\.titled +read +T red $/m);
    // What the file threw is not listed (docs/security.md): `docket run` of the file prints it, as plain text too.
    expect(list.stdout).toContain("capabilities/esc.name.ts:1:11 it threw while loading: Error (what it said is not shown");
    const ran = await cli(["run", "./capabilities/esc.\u001b]0;FN\u0007name.ts"], hostile);
    expect(ran.stderr).toContain("capabilities/esc.name.ts:1:11: it threw while loading: load failed RTL");
    expect(ran.stderr).not.toMatch(/[\u001b\u0007\u202e]/);
    // The refusal says where that is: this run's log, not a server's (checking tester, session 34).
    expect(ran.stderr).toContain("it threw while loading: Error (what it said is in this run's log above, on stderr, and not in this document or summary, as it may hold a secret).");
    expect(ran.stderr).not.toContain("docket serve's log");
    expect(show.stdout).toContain("d  RTL");
    // A field's description and example, printed as JSON: a bidi override as its escape, the same value (tester H).
    writeFiles(hostile, { "capabilities/esc.fields.ts": 'import { capability } from "docket";\nimport * as v from "valibot";\nexport default capability({ id: "esc.fields", title: "F", description: "F.", effect: "read", input: v.object({ name: v.pipe(v.string(), v.description("who \\u202eRTL")) }), output: v.object({}), examples: [{ name: "x\\u202ey" }], handler: () => ({}) });\n' });
    const fields = await cli(["capabilities", "show", "esc.fields"], hostile);
    expect(fields.stdout).not.toMatch(/[\u202e]/);
    expect(fields.stdout).toContain('"description": "who \\u202eRTL"');
    expect(fields.stdout).toContain('--input \'{"name":"x\\u202ey"}\'');
  });

  test("list --format json is one document: capabilities with schemas, and load errors", async () => {
    const result = await cli(["capabilities", "list", "--format", "json"]);
    expect(result.code).toBe(0);
    const document = JSON.parse(result.stdout);
    const echo = document.capabilities.find((c: { id: string }) => c.id === "demo.echo");
    expect(echo).toMatchObject({ effect: "read", title: "Echo", output_schema: { type: "string" } });
    expect(document.load_errors).toHaveLength(1);
    expect(document.load_errors[0].file).toBe(join(checkout, "capabilities", "broken.one.ts"));
  });

  test("show prints the description, facts, schemas and runnable examples", async () => {
    const result = await cli(["capabilities", "show", "executions.demonstrate"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("executions.demonstrate — Demonstrate an execution");
    expect(result.stdout).toContain("cancellable: yes");
    expect(result.stdout).toContain("effect: read");
    expect(result.stdout).toContain("input schema");
    expect(result.stdout).toContain('"delay_ms"');
    expect(result.stdout).toContain(`docket run executions.demonstrate --input '{"steps":5,"delay_ms":500}'`);
  });

  test("show --format json is the capability's public description", async () => {
    const result = await cli(["capabilities", "show", "demo.echo", "--format", "json"]);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ id: "demo.echo", cancellable: false, input_schema: { type: "object" }, source: { kind: "file" } });
  });

  test("list and show in GitHub Actions print a description holding workflow commands as it is, and the runner obeys none of it", async () => {
    const hostile = tempCheckout();
    writeFiles(hostile, { "capabilities/demo.forges.ts": ECHO.replace('id: "demo.echo"', 'id: "demo.forges"').replace('"Returns its message."', '"Returns its message.\\n::error title=forged::from a description"') });
    for (const args of [["capabilities", "show", "demo.forges"], ["capabilities", "list"]]) {
      const plain = await cli(args, hostile);
      expect(obeyedCommands(plain.stdout).length).toBe(args[1] === "show" ? 1 : 0);
      const inCi = await docket(fromSource, args, { cwd: hostile, env: { GITHUB_ACTIONS: "true" } });
      expect(inCi.code).toBe(0);
      expect(obeyedCommands(inCi.stdout)).toEqual([]);
      if (args[1] === "show") expect(inCi.stdout).toContain("\n::error title=forged::from a description\n");
    }
  });

  test("show of an unknown id exits 2", async () => {
    const result = await cli(["capabilities", "show", "demo.nothing"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('No capability "demo.nothing" is loaded. Loaded in the same namespace: demo.echo.');
  });
});

describe("docket new", () => {
  test("names `npx docket` in its hint when the npm package's launcher ran it, and only that word (distribution tester, session 44)", async () => {
    const repo = tempCheckout();
    const created = await docket(fromSource, ["new", "team.npx"], { cwd: repo, env: { DOCKET_COMMAND: "npx docket" } });
    // No tsconfig.json governs the file yet: the hint names `docket init` too (authoring tester, session 46).
    expect(created.stdout).toBe(`Created capabilities/team.npx.ts\nRun it:  npx docket run team.npx --input '{"name":"Ada"}'\nTypes:   npx docket init   (once: a tsconfig.json and .docket/types/, so an editor knows "docket" and "valibot")\n`);
    // The file's first line says the same (it said `docket run`: MCP/CLI tester, session 44).
    expect(readFileSync(join(repo, "capabilities", "team.npx.ts"), "utf8").split("\n")[0]).toBe(`// team.npx: scaffolded by \`docket new\`. Run it: npx docket run team.npx --input '{"name":"Ada"}'`);
    const elsewhere = await docket(fromSource, ["new", "team.there", "--capabilities", "tools/caps"], { cwd: repo, env: { DOCKET_COMMAND: "npx docket" } });
    expect(readFileSync(join(repo, "tools", "caps", "team.there.ts"), "utf8").split("\n")[0]).toBe(`// team.there: scaffolded by \`docket new\`. Run it: npx docket run team.there --capabilities tools/caps --input '{"name":"Ada"}'`);
    expect(elsewhere.stdout).toContain("Run it:  npx docket run team.there --capabilities tools/caps --input");
    expect(elsewhere.stdout).toContain("Types:   npx docket init --capabilities tools/caps   (once:");
    // A tsconfig.json that maps no "docket" is no setup either (checking tester, session 46).
    writeFiles(repo, { "tsconfig.json": '{"compilerOptions":{"strict":true}}\n' });
    expect((await docket(fromSource, ["new", "team.plain"], { cwd: repo })).stdout).toContain("Types:   docket init   (once:");
    // The npm package installed in the project types it by itself (distribution tester, session 47).
    const project = tempCheckout();
    writeFiles(project, { "tsconfig.json": '{"compilerOptions":{"strict":true,"moduleResolution":"bundler","module":"esnext"}}\n', "node_modules/docket/package.json": JSON.stringify({ name: "docket", version: "0.1.0", types: "./types/public.d.ts" }) });
    expect((await docket(fromSource, ["new", "team.npm"], { cwd: project, env: { DOCKET_COMMAND: "npx docket" } })).stdout).toBe(`Created capabilities/team.npm.ts\nRun it:  npx docket run team.npm --input '{"name":"Ada"}'\n`);
    // Once init wrote capabilities/tsconfig.json, the hint is not given again.
    expect((await docket(fromSource, ["init"], { cwd: repo })).code).toBe(0);
    const other = await docket(fromSource, ["new", "team.other"], { cwd: repo, env: { DOCKET_COMMAND: "rm -rf ~;" } });
    expect(other.stdout).toBe(`Created capabilities/team.other.ts\nRun it:  docket run team.other --input '{"name":"Ada"}'\n`);
  });

  test("names a letter of the id that only looks like an ASCII one (foundation tester, session 44)", async () => {
    const result = await cli(["new", "h\u0435llo.greet"], tempCheckout());
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('It holds "\u0435" (U+0435), which is not an ASCII character, though it may look like one: type that letter again.');
  });

  test("scaffolds capabilities/<id>.ts that then runs", async () => {
    const repo = tempCheckout();
    const created = await cli(["new", "team.hello"], join(repo));
    expect(created.code).toBe(0);
    const file = join(repo, "capabilities", "team.hello.ts");
    expect(created.stdout).toStartWith(`Created capabilities/team.hello.ts\nRun it:  docket run team.hello --input '{"name":"Ada"}'\nTypes:   docket init   (once:`);
    const source = readFileSync(file, "utf8");
    expect(source).toContain('import { capability, CapabilityError } from "docket";');
    expect(source).toContain('import * as v from "valibot";');
    expect(source).toContain('id: "team.hello"');

    const ran = await cli(["run", "team.hello", "--input", '{"name":"Grace"}'], repo);
    expect(ran.code).toBe(0);
    expect(JSON.parse(ran.stdout)).toEqual({ greeting: "Hello, Grace!", letters: 5 });
    const failed = await cli(["run", "team.hello", "--input", '{"name":"  "}'], repo);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain("error empty_name:");
  });

  test("refuses an id of the wrong shape", async () => {
    const repo = tempCheckout();
    const result = await cli(["new", "Hello"], repo);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('"Hello" is not a capability id');
    expect(existsSync(join(repo, "capabilities"))).toBe(false);
    // Longer than an MCP tool's name may be: refused before a file that would not load is made.
    const long = await cli(["new", `a.${"b".repeat(63)}`], repo);
    expect(long.code).toBe(2);
    expect(long.stderr).toContain("is 65 characters: a capability id is at most 64 (its MCP tool is named after it); give a shorter one.");
    expect(existsSync(join(repo, "capabilities"))).toBe(false);
    // A file name where the id goes (tester S: it made capabilities/dup.one.js.ts).
    const named = await cli(["new", "dup.one.js"], repo);
    expect(named.code).toBe(2);
    expect(named.stderr).toContain('"dup.one.js" looks like a file name; docket new takes the capability\'s id, and writes the file: docket new dup.one makes capabilities/dup.one.ts.');
    expect(existsSync(join(repo, "capabilities"))).toBe(false);
  });

  test("refuses an id whose file discovery skips (.test, .spec, .d), naming another; such an id declared is a load error, and asking for it says why (authoring tester, session 49)", async () => {
    const repo = tempCheckout();
    // It wrote capabilities/repo.test.ts, printed "Run it: docket run repo.test", which then said only "not loaded".
    for (const [id, instead] of [["repo.test", "repo.tests or repo.run-tests"], ["api.spec", "api.specs or api.run-tests"], ["repo.d", "repo.data"]] as const) {
      const result = await cli(["new", id], repo);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(`"${id}" cannot be used: a capability's id cannot end in .${id.split(".")[1]}: its file would be ${id}.ts, and docket skips *.${id.split(".")[1]}.ts files`);
      expect(result.stderr).toContain(`choose another last part, like ${instead}.`);
    }
    expect(existsSync(join(repo, "capabilities"))).toBe(false);
    // Declared in a file of another name, the id is refused as such (renaming the file to match would not load it either).
    writeFiles(repo, { "capabilities/repo-test.ts": 'export default { id: "repo.test", title: "t", description: "d", effect: "read", handler: () => ({}) };\n' });
    const listed = await cli(["capabilities", "list"], repo);
    expect(listed.stdout).toContain('capabilities/repo-test.ts:1:18 id "repo.test": a capability\'s id cannot end in .test');
    const ran = await cli(["run", "repo.test"], repo);
    expect(ran.code).toBe(2);
    expect(ran.stderr).toContain("A capability's id cannot end in .test: its file would be repo.test.ts, and docket skips *.test.ts files (tests beside the capabilities, which a test runner imports); choose another last part, like repo.tests or repo.run-tests.");
  });

  test("refuses an id too long for a file name as a usage error naming it, not a crash", async () => {
    const repo = tempCheckout();
    const id = `a.${"b".repeat(300)}`;
    const result = await cli(["new", id], repo);
    expect(result.code).toBe(2);
    // Past the 64 characters an id may have, before any file is tried.
    expect(result.stderr).toContain("is 302 characters: a capability id is at most 64 (its MCP tool is named after it); give a shorter one.");
    expect(result.stderr).not.toContain("unexpected");
  });

  test("a folder it cannot make or write is said in words, never a stack trace (distribution tester, session 47)", async () => {
    const repo = tempCheckout();
    writeFiles(repo, { "afile": "" });
    const underFile = await cli(["new", "team.one", "--capabilities", "afile/sub"], repo);
    expect(underFile.code).toBe(1);
    expect(underFile.stderr).toContain("docket: cannot make the folder afile/sub for afile/sub/team.one.ts:");
    const isFile = await cli(["new", "team.two", "--capabilities", "afile"], repo);
    expect(isFile.code).toBe(1);
    expect(isFile.stderr).toContain("docket: cannot make the folder afile for afile/team.two.ts:");
    for (const result of [underFile, isFile]) expect(result.stderr).not.toMatch(/unexpected|\bat \//);
  });

  test("refuses an id the registry would refuse: a built-in's id, a tool name held already, docket's own tool names", async () => {
    const repo = tempCheckout();
    writeFiles(repo, { "capabilities/team_a.hello.ts": ECHO.replace('"demo.echo"', '"team_a.hello"') });
    const builtin = await cli(["new", "files.digest"], repo);
    expect(builtin.code).toBe(2);
    expect(builtin.stderr).toContain('Cannot create capabilities/files.digest.ts: id "files.digest" is already declared by the built-in files.digest.ts, so the file would never load. Choose another id.');
    const tool = await cli(["new", "team.a_hello"], repo);
    expect(tool.code).toBe(2);
    expect(tool.stderr).toContain(
      'Cannot create capabilities/team.a_hello.ts: id "team.a_hello" has the MCP tool name team_a_hello, which team_a.hello (capabilities/team_a.hello.ts) has already, so one of the two files would not load. Choose another id.',
    );
    const own = await cli(["new", "docket.hello"], repo);
    expect(own.code).toBe(2);
    expect(own.stderr).toContain("names beginning docket_ are docket's own tools, so the file would never load. Choose another id.");
    for (const id of ["files.digest", "team.a_hello", "docket.hello"]) expect(existsSync(join(repo, "capabilities", `${id}.ts`))).toBe(false);
    // A --capabilities folder loads beside capabilities/: an id held there is taken too.
    const beside = await cli(["new", "team_a.hello", "--capabilities", "tools/caps"], repo);
    expect(beside.code).toBe(2);
    expect(beside.stderr).toContain('Cannot create tools/caps/team_a.hello.ts: id "team_a.hello" is already declared by capabilities/team_a.hello.ts, so one of the two files would not load. Choose another id.');
  });

  test("refuses to overwrite an existing file", async () => {
    const result = await cli(["new", "demo.echo"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("capabilities/demo.echo.ts already exists");
    expect(readFileSync(join(checkout, "capabilities", "demo.echo.ts"), "utf8")).toBe(ECHO);
  });
});

describe("docket init", () => {
  /** The team's own check of the checkout, `tsc --noEmit -p .`, with this repository's TypeScript. */
  const rootCheck = (checkout: string) => {
    const run = Bun.spawnSync([join(REPO, "node_modules", ".bin", "tsc"), "--noEmit", "-p", "."], { cwd: checkout, stdout: "pipe", stderr: "pipe" });
    return { code: run.exitCode, output: run.stdout.toString() + run.stderr.toString() };
  };

  test("docket init where .docket is a symbolic link is refused before anything is written: no capabilities/, nothing through the link", async () => {
    const repo = tempCheckout();
    const outside = tempCheckout();
    symlinkSync(outside, join(repo, ".docket"));
    const before = readdirSync(outside).sort();
    const result = await cli(["init"], repo);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`${join(repo, ".docket")} is a symbolic link (to ${outside}), not a folder`);
    expect(result.stderr).not.toContain("Created");
    expect(existsSync(join(repo, "capabilities"))).toBe(false);
    expect(readdirSync(outside).sort()).toEqual(before);
  });

  test("docket init under a root tsconfig.json that checks capabilities/ says on stderr which line to add, and leaves the file as it was", async () => {
    const repo = tempCheckout();
    const tsconfig = '{"compilerOptions":{"strict":true}}\n';
    writeFiles(repo, { "tsconfig.json": tsconfig, "src/index.ts": "export const answer: number = 42;\n" });
    const init = await cli(["init"], repo);
    expect(init.code).toBe(0);
    expect(init.stdout).toContain("Created capabilities/hello.greet.ts");
    // The types are private like the rest of .docket/: folders 0700, files 0600.
    expect(statSync(join(repo, ".docket", "types")).mode & 0o777).toBe(0o700);
    expect(statSync(join(repo, ".docket", "types", "docket", "public.d.ts")).mode & 0o777).toBe(0o600);
    expect(init.stderr).toBe(
      `Note: tsconfig.json type-checks capabilities/ too, with its own settings, where "docket" and "valibot" have no types: tsc -p . will fail with "Cannot find module 'docket'". docket does not edit it; add this line to it (docs/editor-types.md):\n  "exclude": ["capabilities"]\n`,
    );
    expect(readFileSync(join(repo, "tsconfig.json"), "utf8")).toBe(tsconfig);
    expect(rootCheck(repo).output).toContain("Cannot find module 'docket'");

    // The line it names is the fix: the team's check passes again, and init says nothing more.
    writeFileSync(join(repo, "tsconfig.json"), '{"compilerOptions":{"strict":true},\n  "exclude": ["capabilities"]\n}\n');
    expect(rootCheck(repo)).toEqual({ code: 0, output: "" });
    expect(await cli(["init"], repo)).toMatchObject({ code: 0, stderr: "" });
  }, 30_000);

  test("docket init copies the root tsconfig.json's paths aliases into capabilities/tsconfig.json, rebased: a capability importing \"@/…\" runs and type-checks", async () => {
    const repo = tempCheckout();
    writeFiles(repo, {
      "tsconfig.json": '{"compilerOptions":{"strict":true,"paths":{"@/*":["./src/*"],"docket":["./elsewhere.ts"]}},"exclude":["capabilities"]}\n',
      "src/fmt/index.ts": "export const fmt = (name: string): string => `[${name}]`;\n",
      "capabilities/team.fmt.ts": `import { capability } from "docket";
import * as v from "valibot";
import { fmt } from "@/fmt/index.ts";

export default capability({
  id: "team.fmt",
  title: "Format",
  description: "Formats a name with the team's helper.",
  effect: "read",
  input: v.object({ name: v.string() }),
  output: v.object({ text: v.string() }),
  handler: (input) => ({ text: fmt(input.name) }),
});
`,
    });
    const init = await cli(["init"], repo);
    expect(init.code).toBe(0);
    expect(init.stdout).toContain("Created capabilities/tsconfig.json with the paths aliases and the JSX and decorator options of tsconfig.json (@/*)");
    const paths = JSON.parse(readFileSync(join(repo, "capabilities", "tsconfig.json"), "utf8")).compilerOptions.paths;
    // docket's own two stay docket's: the root's "docket" alias is not copied over them.
    expect(paths).toEqual({ "@/*": ["../src/*"], docket: ["../.docket/types/docket/public.d.ts"], valibot: ["../.docket/types/valibot/index.d.ts"] });
    const ran = await cli(["run", "team.fmt", "--input", '{"name":"Ada"}'], repo);
    expect(ran.stderr).not.toContain("cannot resolve");
    expect(ran.code).toBe(0);
    expect(JSON.parse(ran.stdout)).toEqual({ text: "[Ada]" });
    const check = Bun.spawnSync([join(REPO, "node_modules", ".bin", "tsc"), "--noEmit", "-p", "capabilities"], { cwd: repo, stdout: "pipe", stderr: "pipe" });
    expect(check.stdout.toString() + check.stderr.toString()).toBe("");
  }, 30_000);

  test("docket init copies the root tsconfig.json's JSX and decorator options (through extends), which docket runs capability files by, and takes .tsx in then (hostile tester, session 38)", async () => {
    const repo = tempCheckout();
    writeFiles(repo, {
      "tsconfig.base.json": '{"compilerOptions":{"experimentalDecorators":true,"emitDecoratorMetadata":true}}\n',
      "tsconfig.json": '{"extends":"./tsconfig.base.json","compilerOptions":{"jsx":"react-jsx","jsxImportSource":"hono/jsx","strict":true}}\n',
    });
    const init = await cli(["init"], repo);
    expect(init.code).toBe(0);
    expect(init.stdout).toContain("with the paths aliases and the JSX and decorator options of tsconfig.json (experimentalDecorators, emitDecoratorMetadata, jsx, jsxImportSource)");
    const config = JSON.parse(readFileSync(join(repo, "capabilities", "tsconfig.json"), "utf8"));
    expect(config.compilerOptions).toMatchObject({ experimentalDecorators: true, emitDecoratorMetadata: true, jsx: "react-jsx", jsxImportSource: "hono/jsx", strict: true });
    expect(config.include).toEqual(["**/*.ts", "**/*.tsx"]);
    // Without any, nothing is added and .tsx stays out.
    const plain = tempCheckout();
    writeFiles(plain, { "tsconfig.json": '{"compilerOptions":{"strict":true}}\n' });
    expect((await cli(["init"], plain)).code).toBe(0);
    const written = JSON.parse(readFileSync(join(plain, "capabilities", "tsconfig.json"), "utf8"));
    expect(written.compilerOptions.experimentalDecorators).toBeUndefined();
    expect(written.include).toEqual(["**/*.ts"]);
  }, 30_000);

  test("docket init copies the aliases the root tsconfig.json inherits through extends (an Nx tsconfig.base.json), from the base's baseUrl (tester, session 33)", async () => {
    const repo = tempCheckout();
    writeFiles(repo, {
      "tsconfig.base.json": '{"compilerOptions":{"baseUrl":".","paths":{"@acme/shared":["libs/shared/index.ts"]}}}\n',
      "tsconfig.json": '{"extends":"./tsconfig.base.json","include":["libs"]}\n',
      "libs/shared/index.ts": 'export const S = "shared";\n',
    });
    const init = await cli(["init"], repo);
    expect(init.code).toBe(0);
    const paths = JSON.parse(readFileSync(join(repo, "capabilities", "tsconfig.json"), "utf8")).compilerOptions.paths;
    expect(paths["@acme/shared"]).toEqual(["../libs/shared/index.ts"]);
  }, 30_000);

  test("a folder whose path is not valid UTF-8 is refused, exit 2, before anything is written there or in the folder its name would be taken for (tester, session 34)", () => {
    const parent = tempCheckout();
    // The folder `bad\xffname`, made and entered by the shell: JavaScript cannot hold its name.
    const made = Bun.spawnSync(["sh", "-c", 'd="$(printf "bad\\377name")"; mkdir "$d" && cd "$d" && git init -q && exec "$@"', "sh", ...fromSource.argv(), "init"], { cwd: parent, stdout: "pipe", stderr: "pipe" });
    expect(made.stderr.toString()).toContain(`docket cannot work in ${parent}/bad\uFFFDname: the folder's path is not valid UTF-8`);
    expect(made.exitCode).toBe(2);
    expect(made.stdout.toString()).toBe("");
    // Only the folder the shell made, holding only its .git: no capabilities/, no sibling made for the other name.
    const inParent = readdirSync(parent).filter((name) => name !== ".git");
    expect(inParent).toHaveLength(1);
    expect(Bun.spawnSync(["sh", "-c", 'ls -A "$(printf "bad\\377name")"'], { cwd: parent }).stdout.toString()).toBe(".git\n");
    // --version still answers there (install.sh runs it wherever it is).
    const version = Bun.spawnSync(["sh", "-c", 'cd "$(printf "bad\\377name")" && exec "$@"', "sh", ...fromSource.argv(), "--version"], { cwd: parent, stdout: "pipe", stderr: "pipe" });
    expect(version.exitCode).toBe(0);
  });

  test("a path argument that is not valid UTF-8 (--result-file, --capabilities, --input @file) is refused, exit 2, before anything is written at the path it would be taken for; one really named with U+FFFD is used (checking tester, session 34)", () => {
    const checkout = tempCheckout();
    const sh = (script: string, ...args: string[]) => Bun.spawnSync(["sh", "-c", script, "sh", ...fromSource.argv(), ...args], { cwd: checkout, stdout: "pipe", stderr: "pipe" });
    for (const [flag, value] of [["--result-file", "res\\377.json"], ["--capabilities", "caps\\377"], ["--input", "@in\\377.json"]]) {
      const refused = sh(`exec "$@" ${flag} "$(printf '${value}')"`, "run", "executions.demonstrate");
      expect(refused.stderr.toString()).toContain(`given to ${flag}: it is not valid UTF-8`);
      expect(refused.exitCode).toBe(2);
    }
    expect(readdirSync(checkout).filter((name) => name !== ".git")).toEqual([]);
    // A file whose name really holds U+FFFD (valid UTF-8) is no lost byte: read, or written new.
    writeFileSync(join(checkout, "in\uFFFD.json"), '{"steps":0,"delay_ms":0}');
    const named = sh('exec "$@"', "run", "executions.demonstrate", "--input", "@in\uFFFD.json", "--result-file", "res\uFFFD.json");
    expect(named.exitCode).toBe(0);
    expect(JSON.parse(readFileSync(join(checkout, "res\uFFFD.json"), "utf8")).execution.state).toBe("succeeded");
    // Beside it, the name with the bad byte is still refused: it is not that file.
    const twin = sh(`exec "$@" --input "@$(printf 'in\\377.json')"`, "run", "executions.demonstrate");
    expect(twin.stderr.toString()).toContain("given to --input: it is not valid UTF-8");
    expect(twin.exitCode).toBe(2);
  });

  test("docket init reads ${configDir} in an inherited alias as the folder of the config that extends it (TypeScript 5.5); the capability runs and tsc passes (tester, session 34)", async () => {
    const repo = tempCheckout();
    writeFiles(repo, {
      "configs/base.json": '{"compilerOptions":{"paths":{"@/*":["${configDir}/src/*"]}}}\n',
      "tsconfig.json": '{"extends":"./configs/base.json","exclude":["capabilities"]}\n',
      "src/x.ts": "export const q = 41;\n",
    });
    expect((await cli(["init"], repo)).code).toBe(0);
    const paths = JSON.parse(readFileSync(join(repo, "capabilities", "tsconfig.json"), "utf8")).compilerOptions.paths;
    expect(paths["@/*"]).toEqual(["../src/*"]);
    writeFiles(repo, {
      "capabilities/team.q.ts": `import { capability } from "docket";
import * as v from "valibot";
import { q } from "@/x";

export default capability({
  id: "team.q",
  title: "Q",
  description: "Reads a constant through an alias.",
  effect: "read",
  input: v.object({}),
  output: v.object({ q: v.number() }),
  handler: () => ({ q: q + 1 }),
});
`,
    });
    const ran = await cli(["run", "team.q"], repo);
    expect(ran.stderr).not.toContain("${configDir}");
    expect(JSON.parse(ran.stdout)).toEqual({ q: 42 });
    const check = Bun.spawnSync([join(REPO, "node_modules", ".bin", "tsc"), "--noEmit", "-p", "capabilities"], { cwd: repo, stdout: "pipe", stderr: "pipe" });
    expect(check.stdout.toString() + check.stderr.toString()).toBe("");
  }, 30_000);

  test("docket init follows an extends naming a package's config (a shared @acme/tsconfig), as TypeScript does, with its ${configDir} (checking tester, session 34)", async () => {
    for (const [extendsName, files] of [
      ["@acme/tsc/base.json", { "node_modules/@acme/tsc/base.json": '{"compilerOptions":{"paths":{"@/*":["${configDir}/src/*"]}}}\n' }],
      ["@acme/tsc", { "node_modules/@acme/tsc/package.json": '{"name":"@acme/tsc","tsconfig":"shared.json"}\n', "node_modules/@acme/tsc/shared.json": '{"compilerOptions":{"paths":{"@/*":["${configDir}/src/*"]}}}\n' }],
    ] as const) {
      const repo = tempCheckout();
      writeFiles(repo, { ...files, "tsconfig.json": `{"extends":${JSON.stringify(extendsName)},"exclude":["capabilities"]}\n`, "src/x.ts": "export const q = 41;\n" });
      expect((await cli(["init"], repo)).code).toBe(0);
      expect(JSON.parse(readFileSync(join(repo, "capabilities", "tsconfig.json"), "utf8")).compilerOptions.paths["@/*"]).toEqual(["../src/*"]);
    }
  }, 30_000);

  test("docket init --capabilities DIR sets up a package's capability folder: its tsconfig.json maps the checkout's types from where it sits, and tsc passes there", async () => {
    const repo = tempCheckout();
    writeFiles(repo, { "tsconfig.json": '{"compilerOptions":{"paths":{"@shared/*":["./shared/*"]}},"exclude":["packages"]}\n', "shared/sum.ts": "export const sum = (a: number, b: number): number => a + b;\n" });
    const init = await cli(["init", "--capabilities", "packages/tools/caps"], repo);
    expect(init.code).toBe(0);
    expect(init.stdout).toContain("Created packages/tools/caps/tsconfig.json with the paths aliases and the JSX and decorator options of tsconfig.json (@shared/*)");
    // No first capability and no capabilities/ folder: the folder given is the one set up.
    expect(existsSync(join(repo, "capabilities"))).toBe(false);
    const config = JSON.parse(readFileSync(join(repo, "packages", "tools", "caps", "tsconfig.json"), "utf8"));
    expect(config.compilerOptions.paths).toEqual({ "@shared/*": ["../../../shared/*"], docket: ["../../../.docket/types/docket/public.d.ts"], valibot: ["../../../.docket/types/valibot/index.d.ts"] });
    writeFiles(repo, {
      "packages/tools/caps/tools.sum.ts": `import { capability } from "docket";
import * as v from "valibot";
import { sum } from "@shared/sum.ts";

export default capability({
  id: "tools.sum",
  title: "Sum",
  description: "Adds two numbers.",
  effect: "read",
  input: v.object({ a: v.number(), b: v.number() }),
  output: v.object({ total: v.number() }),
  handler: (input) => ({ total: sum(input.a, input.b) }),
});
`,
    });
    // The next steps init names work in the folder it set up: docket new writes there, and its run finds it.
    expect(init.stdout).toContain("Next:    docket capabilities list --capabilities packages/tools/caps   ·   docket new <namespace.verb> --capabilities packages/tools/caps   ·");
    const scaffolded = await cli(["new", "tools.hello", "--capabilities", "packages/tools/caps"], repo);
    expect(scaffolded.code).toBe(0);
    expect(scaffolded.stdout).toBe(`Created packages/tools/caps/tools.hello.ts\nRun it:  docket run tools.hello --capabilities packages/tools/caps --input '{"name":"Ada"}'\n`);
    expect(existsSync(join(repo, "capabilities"))).toBe(false);
    const hello = await cli(["run", "tools.hello", "--capabilities", "packages/tools/caps", "--input", '{"name":"Ada"}'], repo);
    expect(hello.code).toBe(0);
    expect(JSON.parse(hello.stdout)).toEqual({ greeting: "Hello, Ada!", letters: 3 });
    // An id the folder holds already is taken there too.
    const again = await cli(["new", "tools.sum", "--capabilities", "packages/tools/caps"], repo);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain("packages/tools/caps/tools.sum.ts already exists; edit it, or choose another id.");
    const check = Bun.spawnSync([join(REPO, "node_modules", ".bin", "tsc"), "--noEmit", "-p", "packages/tools/caps"], { cwd: repo, stdout: "pipe", stderr: "pipe" });
    expect(check.stdout.toString() + check.stderr.toString()).toBe("");
    const ran = await cli(["run", "tools.sum", "--capabilities", "packages/tools/caps", "--input", '{"a":2,"b":3}'], repo);
    expect(ran.code).toBe(0);
    expect(JSON.parse(ran.stdout)).toEqual({ total: 5 });
  }, 30_000);

  // Each case is a `docket init` from source (~0.75 s on a 2-core machine): the cases are spread
  // over four tests so that none comes near its timeout on a loaded machine.
  test("docket init keeps an exclude the root tsconfig.json has in the line it names, and says nothing when the root check leaves capabilities/ out", async () => {
    const repo = tempCheckout();
    writeFiles(repo, { "tsconfig.json": '{"exclude":["dist"]}\n' });
    expect((await cli(["init"], repo)).stderr).toContain('make its exclude this (docs/editor-types.md):\n  "exclude": ["dist", "capabilities"]\n');
    for (const quiet of ['{"include":["src"]}', '{"files":[]}', '{"exclude":["./capabilities/**/*"]}', '{\n  // JSON with comments\n  "exclude": ["capabilities"],\n}', '{"include":["*"]}', '{"include":["src*/**/*"]}', '{"include":["**/*.mts"]}', '{"include":["capabilities/**/*.tsx"]}']) {
      writeFileSync(join(repo, "tsconfig.json"), quiet);
      expect(await cli(["init"], repo)).toMatchObject({ code: 0, stderr: "" });
    }
  }, 60_000);

  test("docket init reads what a base config of the root tsconfig.json sets, from the base's folder", async () => {
    const repo = tempCheckout();
    // What a base config sets is the root's, read from the base's folder: quiet when the base leaves capabilities/ out.
    writeFiles(repo, { "config/base.json": '{"include":["../src"]}', "base.json": '{"exclude":["capabilities"]}' });
    for (const quiet of ['{"extends":"./config/base.json"}', '{"extends":"./base"}', '{"extends":["./base.json"]}']) {
      writeFileSync(join(repo, "tsconfig.json"), quiet);
      expect(await cli(["init"], repo)).toMatchObject({ code: 0, stderr: "" });
    }
    writeFiles(repo, { "loud.json": '{"include":["**/*"]}', "tsconfig.json": '{"extends":"./loud.json"}' });
    expect((await cli(["init"], repo)).stderr).toContain('add this line to it (docs/editor-types.md):\n  "exclude": ["capabilities"]\n');
    const bare = tempCheckout();
    expect(await cli(["init"], bare)).toMatchObject({ code: 0, stderr: "" });
  }, 60_000);

  test("docket init --capabilities names the folder it sets up in the root tsconfig.json's note, and is quiet for a folder the root leaves out", async () => {
    // A --capabilities folder is the one named, and a folder excluded above it (packages) is quiet.
    const mono = tempCheckout();
    writeFiles(mono, { "tsconfig.json": '{"compilerOptions":{"strict":true}}\n', "src/index.ts": "export const answer: number = 42;\n" });
    const named = await cli(["init", "--capabilities", "packages/tools/caps"], mono);
    expect(named.stderr).toContain('Note: tsconfig.json type-checks packages/tools/caps/ too');
    expect(named.stderr).toContain('add this line to it (docs/editor-types.md):\n  "exclude": ["packages/tools/caps"]\n');
    for (const quiet of ['{"exclude":["packages"]}', '{"exclude":["packages/**/caps"]}', '{"include":["src", "capabilities"]}']) {
      writeFileSync(join(mono, "tsconfig.json"), quiet);
      expect(await cli(["init", "--capabilities", "packages/tools/caps"], mono)).toMatchObject({ code: 0, stderr: "" });
    }
    // Wildcards pass over dot-folders, and nothing above the checkout is its tsconfig's (tester Z2); one folder named twice is named once.
    writeFileSync(join(mono, "tsconfig.json"), '{"include":["**/*"]}');
    const outside = `../outside-caps-${mono.split("-").at(-1)}`;
    try {
      for (const quietFolder of [".tools/caps", outside, "."]) {
        expect(await cli(["init", "--capabilities", quietFolder], mono)).toMatchObject({ code: 0, stderr: "" });
      }
    } finally {
      rmSync(join(mono, outside), { recursive: true, force: true });
    }
    const twice = await cli(["init", "--capabilities", "tools/caps", "--capabilities", "tools/caps/"], mono);
    expect(twice.stderr).toContain("type-checks tools/caps/ too");
    expect(twice.stderr).not.toContain("tools/caps/ and tools/caps/");
    // capabilities/ set up by an earlier init is named too: following the note does not drop it (walkthrough tester, session 40).
    const both = tempCheckout();
    writeFiles(both, { "tsconfig.json": '{"compilerOptions":{"strict":true}}\n' });
    expect((await cli(["init"], both)).stderr).toContain('"exclude": ["capabilities"]\n');
    const second = await cli(["init", "--capabilities", "packages/tools/caps"], both);
    expect(second.stderr).toContain("type-checks capabilities/ and packages/tools/caps/ too");
    expect(second.stderr).toContain('"exclude": ["capabilities", "packages/tools/caps"]\n');
  }, 60_000);

  test("docket init keeps the excludes of what tsc --init writes (comments, trailing commas) in the line it names", async () => {
    // What tsc --init writes (comments, trailing commas): the line named keeps its excludes.
    const jsonc = tempCheckout();
    writeFiles(jsonc, { "tsconfig.json": '{\n  // Visit https://aka.ms/tsconfig\n  "compilerOptions": { "strict": true, },\n  "exclude": ["node_modules", "dist",],\n}\n' });
    expect((await cli(["init"], jsonc)).stderr).toContain('make its exclude this (docs/editor-types.md):\n  "exclude": ["node_modules", "dist", "capabilities"]\n');
  }, 60_000);
});
