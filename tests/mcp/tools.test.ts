import { describe, expect, test } from "bun:test";
import * as v from "valibot";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import type { LoadError, RegisteredCapability } from "../../runtime/capability/registered.ts";
import { buildFailure } from "../../runtime/execution/failure.ts";
import type { EdgeInfo, ExecutionPlane } from "../../runtime/execution/plane.ts";
import { failureJsonSchema, toolInputSchema, toolOutputSchema } from "../../runtime/mcp/_schemas.ts";
import { callTool, type ToolCallContext } from "../../runtime/mcp/call-tool.ts";
import { listTools, toolTargets } from "../../runtime/mcp/tools.ts";
import { registered } from "../_support/registered.ts";

const EDGE: EdgeInfo = { actor: { kind: "mcp", client: "unit" }, request_id: "7", trace_id: "1".repeat(32) };

/** A plane that only has a registry and records direct calls: enough for the tool projection. */
function stubPlane(capabilities: RegisteredCapability[], answer: (id: string, input: unknown) => unknown = () => ({}), loadErrors: LoadError[] = []) {
  const calls: Array<{ id: string; input: unknown }> = [];
  const plane = {
    capabilities: () => capabilities,
    loadErrors: () => loadErrors,
    capability: (id: string) => capabilities.find((c) => c.id === id) ?? null,
    call: async (id: string, input: unknown) => {
      calls.push({ id, input });
      return answer(id, input);
    },
  } as unknown as ExecutionPlane;
  return { plane, calls };
}

function context(): ToolCallContext {
  return { edge: EDGE, signal: new AbortController().signal, sendProgress: async () => undefined, connectionClosed: () => false, log: () => undefined };
}

const work = (id: string, input: v.GenericSchema = v.object({}), output: v.GenericSchema = v.object({ ok: v.boolean() }), extra: Record<string, unknown> = {}) =>
  registered({ id, title: id, description: `The ${id} capability.`, effect: "read", input, output, handler: () => ({ ok: true }), ...extra } as never);

describe("tool schemas", () => {
  test("toolOutputSchema admits both the output and a failure descriptor, as the SDK client validates either", () => {
    const schema = toolOutputSchema(work("a.b").output_schema, failureJsonSchema())!;
    const validate = new AjvJsonSchemaValidator().getValidator(schema);
    expect(validate({ ok: true }).valid).toBe(true);
    const failure = buildFailure({ error_code: "invalid_input", stage: "validate", message: "no", request_id: "1", trace_id: "2" });
    expect(validate(failure).valid).toBe(true);
    expect(validate({ ok: "yes" }).valid).toBe(false);
  });

  test("toolOutputSchema keeps $defs at the root, where the output's references point", () => {
    const schema = toolOutputSchema(
      { $schema: "https://json-schema.org/draft/2020-12/schema", $defs: { Name: { type: "string" } }, type: "object", properties: { name: { $ref: "#/$defs/Name" } }, required: ["name"] },
      failureJsonSchema(),
    )!;
    expect(Object.keys(schema)).toEqual(["$schema", "$defs", "type", "anyOf"]);
    const validate = new AjvJsonSchemaValidator().getValidator(schema);
    expect(validate({ name: "x" }).valid).toBe(true);
    expect(validate({ name: 3 }).valid).toBe(false);
  });

  test("toolInputSchema asks for a value that is not an object as { input }, and toolOutputSchema leaves a non-object output unpublished", () => {
    expect(toolInputSchema({ type: "string" })).toEqual({ type: "object", properties: { input: { type: "string" } }, required: ["input"] });
    expect(toolOutputSchema({ type: "array", items: {} }, failureJsonSchema())).toBeUndefined();
  });
});

describe("tool projection", () => {
  test("toolTargets lists plane tools only for the plane capabilities present, and the first of two ids that map to one name", () => {
    const { plane } = stubPlane([work("a_b.c"), work("a.b_c"), work("team.greet")]);
    const targets = toolTargets(plane);
    expect([...targets.keys()]).toEqual(["a_b_c", "team_greet"]);
    expect(targets.get("a_b_c")!.capability.id).toBe("a.b_c");
  });

  test("a capability that never runs as an execution is still a direct-call tool, without a pointer to docket_execution_start", () => {
    const { plane } = stubPlane([work("team.lookup", v.object({}), v.object({ ok: v.boolean() }), { execution: "never" })]);
    const [tool] = listTools(plane, failureJsonSchema());
    expect(tool!.name).toBe("team_lookup");
    expect(tool!.description).not.toContain("docket_execution_start");
    const { plane: other } = stubPlane([work("team.digest")]);
    expect(listTools(other, failureJsonSchema())[0]!.description).toContain('docket_execution_start {"capability":"team.digest"}');
  });

  test("a direct-call tool of a capability whose input is not an object unwraps { input }, and answers text without structured content for a non-object output", async () => {
    const { plane, calls } = stubPlane([work("text.upper", v.string(), v.string())], (_id, input) => String(input).toUpperCase());
    const result = await callTool(plane, "text_upper", { input: "shout" }, context());
    expect(calls).toEqual([{ id: "text.upper", input: "shout" }]);
    expect(result.structuredContent).toBeUndefined();
    expect(result.content).toEqual([{ type: "text", text: '"SHOUT"' }]);
  });

  test("a tool of a capability whose input is not an object refuses any argument beside input, and a missing input, calling nothing (MCP tester, session 41)", async () => {
    const { plane, calls } = stubPlane([work("files.wipe", v.array(v.string()), v.object({ deleted: v.number() }), { effect: "write" })], () => ({ deleted: 1 }));
    const extra = await callTool(plane, "files_wipe", { input: ["a"], dry_run: true }, context());
    expect(extra.isError).toBe(true);
    expect(extra.structuredContent).toMatchObject({ error_code: "invalid_input", stage: "validate", context: { problems: [{ path: "arguments.dry_run" }] } });
    expect((extra.structuredContent as { message: string }).message).toContain('Unknown argument "dry_run": the tool takes one argument, input, which holds the whole input of files.wipe.');
    const misspelt = await callTool(plane, "files_wipe", { inptu: ["a"] }, context());
    expect((misspelt.structuredContent as { message: string }).message).toBe(
      'Cannot call files.wipe: arguments.input: Missing argument "input": the input of files.wipe goes in it, as its schema (the tool\'s inputSchema) says.; arguments.inptu: Unknown argument "inptu": the tool takes one argument, input, which holds the whole input of files.wipe.',
    );
    expect((await callTool(plane, "files_wipe", {}, context())).isError).toBe(true);
    expect(calls).toEqual([]);
    expect((await callTool(plane, "files_wipe", { input: ["a"] }, context())).structuredContent).toEqual({ deleted: 1 });
    expect(calls).toEqual([{ id: "files.wipe", input: ["a"] }]);
  });

  test("a tool whose input is no object but has a default takes no argument at all, as the capability does (checking tester, session 41)", async () => {
    const capability = work("text.greet", v.optional(v.string(), "world"), v.string());
    expect(toolInputSchema(capability.input_schema).required).toBeUndefined();
    const { plane, calls } = stubPlane([capability], (_id, input) => `hello ${String(input)}`);
    expect((await callTool(plane, "text_greet", {}, context())).isError).toBeUndefined();
    expect(calls).toEqual([{ id: "text.greet", input: undefined }]);
    expect((await callTool(plane, "text_greet", { inptu: "x" }, context())).isError).toBe(true);
  });

  test("calling a tool whose file no longer loads names the file, its line and why, as HTTP does, not a bare \"No tool\" (MCP tester, session 41)", async () => {
    const broken: LoadError = { file: "/repo/capabilities/temp.cap.ts", line: 1, column: 16, reason: "syntax error: Unexpected {" } as LoadError;
    const { plane } = stubPlane([work("temp.other")], undefined, [broken]);
    const refused = await callTool(plane, "temp_cap", {}, context()).catch((error: Error) => error.message);
    expect(refused).toBe('No tool "temp_cap". /repo/capabilities/temp.cap.ts:1 did not load: syntax error: Unexpected { tools/list names the tools of this server.');
  });

  test("calling the tool of an id no file can declare (repo_test) says what to name it instead (authoring checking tester, session 49)", async () => {
    const { plane } = stubPlane([work("temp.other")]);
    const refused = await callTool(plane, "repo_test", {}, context()).catch((error: Error) => error.message);
    expect(refused).toBe('No tool "repo_test". A capability\'s id cannot end in .test: its file would be repo.test.ts, and docket skips *.test.ts files (tests beside the capabilities, which a test runner imports); choose another last part, like repo.tests or repo.run-tests. tools/list names the tools of this server.');
  });

  test("a tool call that throws something unexpected answers internal with a correlation id, its stack only in the log", async () => {
    const lines: string[] = [];
    const { plane } = stubPlane([work("team.boom")], () => {
      throw new Error("kaboom at /secret/path.ts:1");
    });
    const result = await callTool(plane, "team_boom", {}, { ...context(), log: (line) => void lines.push(line) });
    expect(result.isError).toBe(true);
    const failure = result.structuredContent as { error_code: string; message: string; correlation_id: string; request_id: string };
    expect(failure.error_code).toBe("internal");
    expect(failure.request_id).toBe("7");
    expect(JSON.stringify(result)).not.toContain("/secret/path.ts");
    expect(lines.join("\n")).toContain(failure.correlation_id);
    expect(lines.join("\n")).toContain("kaboom");
  });
});
