import { afterAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import * as v from "valibot";
import { toCapabilityJsonSchema } from "../../runtime/capability/json-schema.ts";
import { applyInputEnv, INPUT_ENV_SUGGESTION, inputEnvProblem, readInput, type InputSources } from "../../runtime/cli/_input.ts";
import { removeTempDirs, tempDir, writeFiles } from "./_harness.ts";

afterAll(removeTempDirs);

/** What readInput reads from: `stdin` the text a test pipes in; none means stdin must not be read. */
function from(cwd: string, stdin?: string, more: Partial<InputSources> = {}): InputSources {
  return {
    cwd,
    stdin: () => (stdin === undefined ? failing() : (async function* () { yield stdin; })()),
    maxBytes: 8 * 1024 * 1024,
    say: () => {},
    ...more,
  };
}

async function* failing(): AsyncIterable<string> {
  throw new Error("stdin must not be read");
}

describe("readInput", () => {
  test("absent --input is undefined, so the capability's defaults apply", async () => {
    expect(await readInput(undefined, from("/"))).toEqual({ ok: true, value: undefined });
  });

  test("inline JSON, @file relative to cwd, and - for stdin", async () => {
    const dir = tempDir("input");
    writeFiles(dir, { "in.json": '{"a":1}' });
    expect(await readInput('{"path":"src"}', from(dir))).toEqual({ ok: true, value: { path: "src" } });
    expect(await readInput("@in.json", from(dir))).toEqual({ ok: true, value: { a: 1 } });
    expect(await readInput(`@${join(dir, "in.json")}`, from("/"))).toEqual({ ok: true, value: { a: 1 } });
    expect(await readInput("-", from(dir, "[1,2]"))).toEqual({ ok: true, value: [1, 2] });
  });

  test("bad JSON, an empty value and a missing file say what is wrong and how to give input", async () => {
    const bad = await readInput('{"limit": ten}', from("/"));
    expect(bad.ok).toBe(false);
    expect(!bad.ok && bad.message).toMatch(/^--input is not valid JSON \(Unexpected identifier\) at line 1, column 12; the text is not repeated here, as it may hold a secret\. Give a JSON value, e\.g\. --input '\{"path":"src"\}'/);
    // The reason keeps the grammar the parser names, not cut at its first quote mark.
    const unquoted = await readInput('{name:"x"}', from("/"));
    expect(!unquoted.ok && unquoted.message).toStartWith("--input is not valid JSON (Expected '}') at line 1, column 2;");
    const singleQuoted = await readInput("{'name':'x'}", from("/"));
    expect(!singleQuoted.ok && singleQuoted.message).toStartWith("--input is not valid JSON (Single quotes (') are not allowed in JSON) at line 1, column 2;");
    // Not a word of the text, whatever the parser quotes: it may hold a secret (a CI log keeps it).
    for (const text of ['{"mode":"log","token":"hunter2SECRETvalue",}', '{"token":hunter2SECRETvalue}', '{"token":"hunter2SECRETvalue" "x":1}', '{"token":"hunter2SECRETvalue']) {
      for (const flag of [text, "-"]) {
        const refused = await readInput(flag, from("/", text));
        expect(!refused.ok && refused.message).toContain("is not valid JSON");
        expect(!refused.ok && refused.message).not.toContain("hunter2");
      }
    }
    const empty = await readInput("-", from("/", "  \n"));
    expect(!empty.ok && empty.message).toStartWith("--input - (stdin) is empty;");
    const missing = await readInput("@nope.json", from(tempDir("input")));
    expect(!missing.ok && missing.message).toStartWith("Cannot read --input @nope.json: the file does not exist");
  });
});

describe("readInput of a file or stdin with a byte-order mark", () => {
  test("a UTF-8 byte-order mark at the start of a file or stdin is skipped (Windows PowerShell 5 writes one)", async () => {
    const dir = tempDir("input");
    writeFileSync(join(dir, "bom.json"), Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"name":"Ada"}')]));
    expect(await readInput("@bom.json", from(dir))).toEqual({ ok: true, value: { name: "Ada" } });
    expect(await readInput("-", from(dir, '\uFEFF{"name":"Ada"}'))).toEqual({ ok: true, value: { name: "Ada" } });
    // The mark is not counted as a column: a mistake after it is where an editor shows it.
    const bad = await readInput("-", from(dir, "\uFEFF{,}"));
    expect(!bad.ok && bad.message).toContain("at line 1, column 2;");
  });

  test("a file in UTF-16 with its byte-order mark (PowerShell 5's `>` and Out-File) is read as UTF-16", async () => {
    const dir = tempDir("input");
    const text = '{"name":"Ada Lovelace, née Byron"}';
    writeFileSync(join(dir, "le.json"), Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, "utf16le")]));
    writeFileSync(join(dir, "be.json"), Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from(text, "utf16le").swap16()]));
    for (const file of ["le.json", "be.json"]) expect(await readInput(`@${file}`, from(dir))).toEqual({ ok: true, value: { name: "Ada Lovelace, née Byron" } });
  });

  test("bytes that are no text in the input's encoding are refused, never replaced with U+FFFD and run (tester R1)", async () => {
    const dir = tempDir("input");
    // UTF-8 with FF FE inside a string; UTF-16LE (by its mark) with an unpaired surrogate.
    writeFileSync(join(dir, "bad8.json"), Buffer.concat([Buffer.from('{"s":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]));
    writeFileSync(join(dir, "bad16.json"), Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('{"s":"', "utf16le"), Buffer.from([0x00, 0xd8]), Buffer.from('"}', "utf16le")]));
    const bad8 = await readInput("@bad8.json", from(dir));
    expect(bad8).toEqual({ ok: false, message: "--input @bad8.json is not valid UTF-8: some bytes are no text in it. Save the input as UTF-8 JSON." });
    const bad16 = await readInput("@bad16.json", from(dir));
    expect(!bad16.ok && bad16.message).toBe("--input @bad16.json is not valid UTF-16 (its byte-order mark says so): some bytes are no text in it. Save the input as UTF-8 JSON.");
  });
});

describe("readInput of a file or stdin, bounded", () => {
  const limitMessage = /^--input - \(stdin\) is larger than the input limit of 1 KiB \(input_bytes, 1024 bytes\); it was not read past that\. Give a smaller input, or raise the limit with DOCKET_INPUT_BYTES \(at most 128 MiB, 134217728\)\.$/;

  test("an endless stdin is refused once one byte past maxBytes has come, naming the limit and how to raise it, and is read no further", async () => {
    let given = 0;
    let closed = false;
    async function* endless() {
      try {
        for (;;) {
          given += 100;
          yield " ".repeat(100);
        }
      } finally {
        closed = true;
      }
    }
    const refused = await readInput("-", { ...from("/"), stdin: endless, maxBytes: 1024 });
    expect(!refused.ok && refused.message).toMatch(limitMessage);
    expect(given).toBe(1100);
    expect(closed).toBe(true);
  });

  test("an input of exactly maxBytes is read; one byte more is refused", async () => {
    const exact = `"${"a".repeat(1022)}"`;
    expect(await readInput("-", from("/", exact, { maxBytes: 1024 }))).toEqual({ ok: true, value: "a".repeat(1022) });
    const over = await readInput("-", from("/", `${exact} `, { maxBytes: 1024 }));
    expect(!over.ok && over.message).toMatch(limitMessage);
  });

  test.if(process.platform !== "win32")("--input @/dev/zero (a file that never ends) is refused at the limit", async () => {
    const refused = await readInput("@/dev/zero", from("/", undefined, { maxBytes: 4096 }));
    expect(!refused.ok && refused.message).toStartWith("--input @/dev/zero is larger than the input limit of 4 KiB (input_bytes, 4096 bytes)");
  });

  test.if(process.platform !== "win32")("--input @fifo with no writer says on stderr that it waits, and reads what a writer then gives", async () => {
    const fifo = join(tempDir("input"), "in.fifo");
    expect(Bun.spawnSync(["mkfifo", fifo]).exitCode).toBe(0);
    let said!: (line: string) => void;
    const waiting = new Promise<string>((resolve) => (said = resolve));
    const reading = readInput(`@${fifo}`, from("/", undefined, { say: (line) => said(line), waitNoticeMs: 0 }));
    expect(await waiting).toBe(`docket: waiting for --input @${fifo}: nothing has come yet (a pipe, a FIFO or a terminal gives its input once written and closed; Ctrl-C stops).`);
    await writeFile(fifo, '{"from":"the writer"}');
    expect(await reading).toEqual({ ok: true, value: { from: "the writer" } });
  });
});

describe("applyInputEnv", () => {
  const env = { SLACK_TOKEN: "xoxb-secret-value", EMPTY: "", BLANK: " \n", NOTE: "a note" };

  test("--input-env field=VAR fills the field from the environment, over --input", () => {
    expect(applyInputEnv({ ok: true, value: { channel: "ops", token: "x" } }, ["token=SLACK_TOKEN"], env)).toEqual({ ok: true, value: { channel: "ops", token: "xoxb-secret-value" }, fromEnv: ["token"] });
    expect(applyInputEnv({ ok: true, value: undefined }, ["token=SLACK_TOKEN", "note=NOTE"], env)).toEqual({ ok: true, value: { token: "xoxb-secret-value", note: "a note" }, fromEnv: ["token", "note"] });
  });

  test("one field named by two --input-env is refused, naming both: neither would win without a word", () => {
    expect(applyInputEnv({ ok: true, value: {} }, ["token=SLACK_TOKEN", "note=NOTE", "token=NOTE"], env)).toEqual({ ok: false, message: "--input-env token=SLACK_TOKEN and --input-env token=NOTE both give token; give it once.", suggestion: INPUT_ENV_SUGGESTION });
    // The same pair twice is the same field twice (MCP/CLI tester, session 48: taken, its note said twice).
    expect(applyInputEnv({ ok: true, value: {} }, ["token=SLACK_TOKEN", "token=SLACK_TOKEN"], env)).toEqual({ ok: false, message: "--input-env token=SLACK_TOKEN and --input-env token=SLACK_TOKEN both give token; give it once.", suggestion: INPUT_ENV_SUGGESTION });
    // A field and one inside it, in either order (tester H: auth.token then auth kept auth alone).
    for (const pairs of [["auth=SLACK_TOKEN", "auth.token=NOTE"], ["auth.token=NOTE", "auth=SLACK_TOKEN"]]) {
      expect(applyInputEnv({ ok: true, value: {} }, pairs, env)).toMatchObject({ ok: false, message: expect.stringContaining("one inside the other; give one of them.") });
    }
  });

  test("a malformed pair or an input that is not an object is refused by name, saying how to correct the flag", () => {
    expect(applyInputEnv({ ok: true, value: {} }, ["token"], env)).toMatchObject({ ok: false, message: expect.stringContaining("field=VARIABLE"), suggestion: INPUT_ENV_SUGGESTION });
    expect(applyInputEnv({ ok: true, value: [1] }, ["token=SLACK_TOKEN"], env)).toMatchObject({ ok: false, message: expect.stringContaining("not a JSON object"), suggestion: INPUT_ENV_SUGGESTION });
    expect(INPUT_ENV_SUGGESTION).not.toContain("Correct the input");
  });

  test("a variable not set (or empty) is named, never with a value, for the run to refuse once the field is checked: a field the capability lacks is said first", () => {
    const missing = applyInputEnv({ ok: true, value: {} }, ["token=NOT_SET_ANYWHERE"], env);
    expect(missing).toEqual({ ok: true, value: {}, fromEnv: ["token"], unsetEnv: "--input-env token=NOT_SET_ANYWHERE: the environment variable NOT_SET_ANYWHERE is not set; set it, or give token another way." });
    // Set but empty is what a CI job's missing secret reads as (tester R): refused, not run without it.
    const empty = applyInputEnv({ ok: true, value: {} }, ["token=SLACK_TOKEN", "key=EMPTY"], env);
    expect(empty).toMatchObject({ ok: true, fromEnv: ["token", "key"], unsetEnv: "--input-env key=EMPTY: the environment variable EMPTY is set but empty (in a CI job, a secret the job was not given reads as empty); set it, or give key another way." });
    expect(applyInputEnv({ ok: true, value: {} }, ["key=BLANK"], env)).toMatchObject({ ok: true, unsetEnv: expect.stringContaining("BLANK is set but blank") });
    for (const result of [missing, empty]) expect((result as { unsetEnv: string }).unsetEnv).not.toContain("xoxb");
  });

  test("a dotted field fills a nested one, beside what --input gave, without changing --input's object", () => {
    const given = { auth: { user: "ci" } };
    expect(applyInputEnv({ ok: true, value: given }, ["auth.token=SLACK_TOKEN", "deep.er.most=NOTE"], env)).toEqual({
      ok: true,
      value: { auth: { user: "ci", token: "xoxb-secret-value" }, deep: { er: { most: "a note" } } },
      fromEnv: ["auth.token", "deep.er.most"],
    });
    expect(given).toEqual({ auth: { user: "ci" } });
    expect(applyInputEnv({ ok: true, value: { auth: "text" } }, ["auth.token=SLACK_TOKEN"], env)).toMatchObject({ ok: false, message: expect.stringContaining("the input's auth is not an object") });
    for (const bad of ["a..b=SLACK_TOKEN", "__proto__.x=SLACK_TOKEN", "a.constructor=SLACK_TOKEN"]) expect(applyInputEnv({ ok: true, value: {} }, [bad], env)).toMatchObject({ ok: false, message: expect.stringContaining("is not a field path") });
  });
});

describe("inputEnvProblem", () => {
  const schema = { type: "object", properties: { token: { type: "string" }, auth: { type: "object", properties: { token: { type: "string" } } }, extra: { type: "object" } } };

  test("a field the input declares, at any depth, or under a schema that names no properties, is fine", () => {
    for (const field of ["token", "auth.token", "extra.anything"]) expect(inputEnvProblem(field, schema)).toBeNull();
  });

  test("a field that takes no text (a number, a flag) is told to come by --input: the variable gives text", () => {
    const typed = { type: "object", properties: { ms: { type: "number" }, on: { type: "boolean" }, either: { anyOf: [{ type: "string" }, { type: "number" }] }, pick: { enum: ["a", "b"] } } };
    expect(inputEnvProblem("ms", typed)).toBe(`--input-env ms: the input's ms takes number, and --input-env gives a field the variable's text; give ms in --input instead (--input '{"ms": …}').`);
    expect(inputEnvProblem("on", typed)).toContain("takes boolean");
    for (const field of ["either", "pick"]) expect(inputEnvProblem(field, typed)).toBeNull();
  });

  test("a field the input does not declare is named, with what is near and what there is (the check would drop it silently)", () => {
    expect(inputEnvProblem("tokn", schema)).toBe('--input-env tokn: the input has no field "tokn" (did you mean "token"?); its fields are token, auth, extra.');
    expect(inputEnvProblem("auth.tok", schema)).toBe(`--input-env auth.tok: the input's auth has no field "tok" (did you mean "token"?); its fields are token.`);
  });

  test("through a $ref (v.lazy), a field is looked for in what it points to", () => {
    const lazy = toCapabilityJsonSchema(v.object({ auth: v.lazy(() => v.object({ token: v.string(), port: v.number() })) }), "input");
    expect(inputEnvProblem("auth.token", lazy)).toBeNull();
    expect(inputEnvProblem("auth.tokn", lazy)).toBe(`--input-env auth.tokn: the input's auth has no field "tokn" (did you mean "token"?); its fields are token, port.`);
    expect(inputEnvProblem("auth.port", lazy)).toContain("takes number");
  });

  test("inside a nullable object or a union, a field is looked for in every object branch", () => {
    const unions = {
      type: "object",
      properties: {
        opt: { anyOf: [{ type: "object", properties: { key: { type: "string" } } }, { type: "null" }] },
        mode: { anyOf: [{ type: "object", properties: { kind: { const: "a" }, secret: { type: "string" } } }, { type: "object", properties: { kind: { const: "b" } } }] },
      },
    };
    expect(inputEnvProblem("opt.key", unions)).toBeNull();
    expect(inputEnvProblem("mode.secret", unions)).toBeNull();
    expect(inputEnvProblem("opt.kye", unions)).toBe('--input-env opt.kye: the input\'s opt has no field "kye" (did you mean "key"?); its fields are key.');
    expect(inputEnvProblem("mode.secrt", unions)).toBe('--input-env mode.secrt: the input\'s mode has no field "secrt" (did you mean "secret"?); its fields are kind, secret.');
  });
});
