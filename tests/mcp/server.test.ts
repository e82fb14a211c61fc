import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { ErrorCode, LATEST_PROTOCOL_VERSION, McpError, type JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { BootedPlane } from "../../runtime/boot.ts";
import { PLANE_TOOLS, toolName } from "../../runtime/mcp/tools.ts";
import { EVENT_META_KEY } from "../../runtime/mcp/progress-relay.ts";
import { RESOURCE_NOT_FOUND } from "../../runtime/mcp/failure-result.ts";
import { createDocketMcpServer } from "../../runtime/mcp/server.ts";
import { bootTestPlane, capabilityFile, connectInProcess, removeCheckout, structured, tempCheckout, terminalOf, type SeenProgress } from "./_support.ts";

let root: string;
let plane: BootedPlane;
let client: Client;

beforeAll(async () => {
  root = tempCheckout({ "capabilities/team.greet.ts": capabilityFile("team.greet") });
  plane = await bootTestPlane(root);
  client = await connectInProcess(plane, "test-agent");
});

afterAll(async () => {
  await client.close();
  await plane.close();
  removeCheckout(root);
});

/** Starts executions.demonstrate as an execution through MCP and answers its id. */
async function startDemonstration(input: Record<string, unknown>): Promise<string> {
  const result = await client.callTool({ name: "docket_execution_start", arguments: { capability: "executions.demonstrate", input } });
  return structured(result).execution.id;
}

describe("a method the server does not answer", () => {
  test("is -32601 naming it and the methods it answers, not a bare 'Method not found' (MCP/CLI tester, session 48)", async () => {
    for (const method of ["prompts/list", "logging/setLevel", "completion/complete", "bogus/method"]) {
      const error = await client.request({ method, params: {} } as never, {} as never).catch((e) => e);
      expect(error).toBeInstanceOf(McpError);
      expect(error.code).toBe(ErrorCode.MethodNotFound);
      expect(error.message).toContain(`docket's MCP server does not answer "${method}"; it answers initialize, ping, tools/list, tools/call, resources/list, resources/templates/list, resources/read`);
    }
  });
});

describe("notes of dropped arguments (checking tester, session 48)", () => {
  let own: { root: string; plane: BootedPlane; client: Client };
  const LOOSE = capabilityFile("t.loose", {
    input: "v.object({ opts: v.optional(v.looseObject({ a: v.optional(v.string()) })), rec: v.optional(v.record(v.string(), v.object({ n: v.number() }))), tok: v.optional(sensitive(v.string())), nested: v.optional(v.object({ inner: v.optional(v.string()) })), mode: v.optional(v.string(), \"safe\") })",
    output: "v.any()",
    body: 'if (input.mode === "safe") throw new CapabilityError("unsafe", "mode safe fails"); return { got: input };',
  })
    .replace('import { capability } from "docket";', 'import { capability, CapabilityError, sensitive } from "docket";')
    .replace('effect: "read",', 'effect: "read", errors: ["unsafe"],');
  beforeAll(async () => {
    const checkout = tempCheckout({ "capabilities/t.loose.ts": LOOSE });
    const booted = await bootTestPlane(checkout);
    own = { root: checkout, plane: booted, client: await connectInProcess(booted, "notes-agent") };
  });
  afterAll(async () => {
    await own.client.close();
    await own.plane.close();
    removeCheckout(own.root);
  });
  const notesOf = (result: Record<string, unknown>) => (result.content as Array<{ text: string }>).map((c) => c.text).filter((t) => t.startsWith("note: "));

  test("a field a loose object keeps is no dropped field; one a record's value drops is; a read that fails on a default says what it dropped; a secret is never written in one", async () => {
    const loose = await own.client.callTool({ name: "t_loose", arguments: { mode: "fast", opts: { a: "x", extra: 1 } } });
    expect(JSON.parse((loose.content as Array<{ text: string }>)[0]!.text).got.opts).toEqual({ a: "x", extra: 1 });
    expect(notesOf(loose)).toEqual([]);
    const record = await own.client.callTool({ name: "t_loose", arguments: { mode: "fast", rec: { k1: { n: 1, m: 2 } } } });
    expect(notesOf(record)).toEqual(['note: t.loose has no input field "rec.k1.m"; it was ignored']);
    const failed = await own.client.callTool({ name: "t_loose", arguments: { mdoe: "fast" } });
    expect(failed.isError).toBe(true);
    expect(notesOf(failed)).toEqual(['note: t.loose has no input field "mdoe" (did you mean "mode"?); it was ignored']);
    const secret = await own.client.callTool({ name: "t_loose", arguments: { mode: "fast", tok: "sk-live-SEKRET123", nested: { "sk-live-SEKRET123": 1 } } });
    expect(JSON.stringify(secret)).not.toContain("SEKRET123");
    expect(notesOf(secret)).toEqual(['note: t.loose has no input field "nested.[redacted]"; it was ignored']);
  });

  test("docket_execution_start of a read notes what its check dropped from the input it kept", async () => {
    const started = await own.client.callTool({ name: "docket_execution_start", arguments: { capability: "t.loose", input: { mode: "fast", typo: 1, nested: { innr: 1 } }, wait: true } });
    expect(notesOf(started)).toEqual(['note: t.loose has no input field "typo"; it was ignored', 'note: t.loose has no input field "nested.innr" (did you mean "inner"?); it was ignored']);
  });
});

describe("tools/list", () => {
  test("tools/list is the registry: the six plane tools, then every capability that is not a plane capability", async () => {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    const work = plane.registry.list().filter((c) => !c.plane).map((c) => toolName(c.id)).sort();
    expect(names).toEqual([...Object.keys(PLANE_TOOLS), ...work]);
    expect(names).toContain("team_greet");
    expect(names).toContain("files_digest");
    // executions.report is what `docket run` sends; capabilities.* are what tools/list already says.
    expect(names.some((n) => n.includes("report") && n !== "health_report")).toBe(false);
    expect(names).not.toContain("capabilities_list");
  });

  test("a listing answers whole, with no nextCursor, and a cursor sent to it is -32602, not the first page again (tester M6)", async () => {
    expect((await client.listTools()).nextCursor).toBeUndefined();
    for (const list of [() => client.listTools({ cursor: "zzz" }), () => client.listResources({ cursor: "zzz" }), () => client.listResourceTemplates({ cursor: "zzz" })]) {
      const error = await list().catch((e) => e);
      expect(error).toBeInstanceOf(McpError);
      expect(error.code).toBe(ErrorCode.InvalidParams);
      expect(error.message).toContain("params.cursor is no cursor docket gave. Send no params: docket answers a listing whole, with no nextCursor.");
    }
  });

  test("tools/list gives each work capability its own input JSON Schema, and its output or a failure descriptor as output schema", async () => {
    const { tools } = await client.listTools();
    const greet = tools.find((t) => t.name === "team_greet")!;
    const registered = plane.registry.get("team.greet")!;
    expect(greet.inputSchema).toEqual(registered.input_schema as never);
    const { $schema: _, ...output } = registered.output_schema;
    const anyOf = (greet.outputSchema as unknown as { anyOf: any[] }).anyOf;
    expect(anyOf[0]).toEqual(output);
    expect(anyOf[1].required).toContain("error_code");
    expect(greet.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false, openWorldHint: false });
    expect(greet.description).toContain("Says hello to a name.");
  });

  test("tools/list describes the effect of the plane tools in their hints", async () => {
    const { tools } = await client.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    expect(byName.get("docket_execution_start")!.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true });
    expect(byName.get("docket_execution_cancel")!.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false, idempotentHint: true });
    for (const name of ["docket_executions", "docket_execution", "docket_execution_events", "docket_execution_protocol"]) {
      expect(byName.get(name)!.annotations!.readOnlyHint).toBe(true);
    }
    const start = byName.get("docket_execution_start")!;
    expect(Object.keys(start.inputSchema.properties!)).toEqual(["capability", "input", "run_id", "session_key", "deadline_ms", "wait"]);
    // The registry's own schema is shared with every projection and must not have grown a `wait`.
    expect(Object.keys(plane.registry.get("executions.start")!.input_schema.properties as object)).not.toContain("wait");
  });
});

describe("direct-call tools", () => {
  test("a capability file of the checkout answers as a tool of its own", async () => {
    const result = await client.callTool({ name: "team_greet", arguments: { name: "Ada" } });
    expect(result.isError).toBeUndefined();
    expect(structured(result)).toEqual({ greeting: "Hello, Ada" });
    expect(JSON.parse((result.content as Array<{ text: string }>)[0]!.text)).toEqual({ greeting: "Hello, Ada" });
    expect(result.content).toHaveLength(1);
  });

  test("a read's argument its schema does not declare is ignored, and said in a note beside the output (MCP/CLI tester, session 48: dropped without a word)", async () => {
    const result = await client.callTool({ name: "team_greet", arguments: { name: "Ada", nmae: "typo" } });
    expect(structured(result)).toEqual({ greeting: "Hello, Ada" });
    const texts = (result.content as Array<{ text: string }>).map((c) => c.text);
    expect(JSON.parse(texts[0]!)).toEqual({ greeting: "Hello, Ada" });
    expect(texts.slice(1)).toEqual(['note: team.greet has no input field "nmae" (did you mean "name"?); it was ignored']);
  });

  test("a direct-call tool with bad input answers isError with the invalid_input descriptor naming the path", async () => {
    const result = await client.callTool({ name: "executions_demonstrate", arguments: { steps: "ten" } });
    expect(result.isError).toBe(true);
    const failure = structured(result);
    expect(failure).toMatchObject({ error_code: "invalid_input", stage: "validate", retryability: "never", outcome_certainty: "not_applied" });
    expect(failure.message).toContain("input.steps");
    expect(failure.context.problems[0].path).toBe("input.steps");
    expect(failure.correlation_id).toMatch(/^c-/);
    expect((result.content as Array<{ text: string }>)[0]!.text).toStartWith("invalid_input: ");
  });

  test("an unknown tool is a protocol error, not a tool result", async () => {
    const error = await client.callTool({ name: "nothing_here", arguments: {} }).catch((e) => e);
    expect(error).toBeInstanceOf(McpError);
    expect(error.code).toBe(ErrorCode.InvalidParams);
    // The client puts "MCP error -32602: " before the message once; the server does not add its own.
    expect(error.message).toStartWith('MCP error -32602: No tool "nothing_here".');
  });
});

describe("plane tools", () => {
  test("docket_execution_start answers at once with the queued execution, started by actor mcp with the client's name", async () => {
    const result = await client.callTool({ name: "docket_execution_start", arguments: { capability: "executions.demonstrate", input: { steps: 1, delay_ms: 0 } } });
    const { execution, deduplicated } = structured(result);
    expect(deduplicated).toBe(false);
    expect(execution.state).toBe("queued");
    expect(execution.actor).toEqual({ kind: "mcp", client: "test-agent" });
    expect(execution.request_id).toMatch(/^[A-Za-z0-9._:-]+$/);
    expect((await terminalOf(plane, execution.id)).state).toBe("succeeded");
  });

  test("docket_execution_start refuses a plane capability (not_runnable) and an unknown one (not_found)", async () => {
    const planeOne = await client.callTool({ name: "docket_execution_start", arguments: { capability: "executions.list" } });
    expect(planeOne.isError).toBe(true);
    expect(structured(planeOne).error_code).toBe("not_runnable");
    const unknown = await client.callTool({ name: "docket_execution_start", arguments: { capability: "no.such" } });
    expect(structured(unknown).error_code).toBe("not_found");
    const badWait = await client.callTool({ name: "docket_execution_start", arguments: { capability: "executions.demonstrate", wait: "yes" } });
    expect(structured(badWait)).toMatchObject({ error_code: "invalid_input" });
    expect(structured(badWait).context.problems[0].path).toBe("input.wait");
  });

  test("the client's name is the actor's without escape sequences, controls or bidirectional overrides, on one line (tester, session 33)", async () => {
    const hostile = await connectInProcess(plane, "<img src=x>\u001b]0;MCPTITLE\u0007\u202eevil\u2028agent\u0000");
    try {
      const id = structured(await hostile.callTool({ name: "docket_execution_start", arguments: { capability: "executions.demonstrate", input: { steps: 1, delay_ms: 0 } } })).execution.id;
      expect(plane.store.current(id)!.actor).toEqual({ kind: "mcp", client: "<img src=x>evil agent" });
    } finally {
      await hostile.close();
    }
  });

  test("docket_execution_start names wait among its members when it refuses one it does not take, and starts nothing", async () => {
    const before = plane.store.list({ limit: 1000 }).items.length;
    const typo = await client.callTool({ name: "docket_execution_start", arguments: { capability: "executions.demonstrate", input: {}, wiat: true, "odd key": 1 } });
    expect(typo.isError).toBe(true);
    const failure = structured(typo);
    expect(failure).toMatchObject({ error_code: "invalid_input", stage: "validate", outcome_certainty: "not_applied" });
    expect(failure.context.problems.map((p: { path: string }) => p.path)).toEqual(["input.wiat", 'input["odd key"]']);
    expect(failure.message).toContain('input.wiat: Unknown member "wiat": Did you mean "wait"? The members are capability, input, run_id, session_key, deadline_ms, wait.');
    expect(plane.store.list({ limit: 1000 }).items.length).toBe(before);
  });

  test("docket_execution_start with a run_id returns the original execution for the same input", async () => {
    const args = { capability: "executions.demonstrate", input: { steps: 0, delay_ms: 0 }, run_id: "mcp-run-1" };
    const first = structured(await client.callTool({ name: "docket_execution_start", arguments: args }));
    const second = structured(await client.callTool({ name: "docket_execution_start", arguments: args }));
    expect(second.deduplicated).toBe(true);
    expect(second.execution.id).toBe(first.execution.id);
    const conflict = await client.callTool({ name: "docket_execution_start", arguments: { ...args, input: { steps: 1 } } });
    expect(structured(conflict).error_code).toBe("run_id_conflict");
  });

  test("docket_execution, docket_executions and docket_execution_events read an execution back from the store", async () => {
    const id = await startDemonstration({ steps: 2, delay_ms: 0 });
    await terminalOf(plane, id);
    const snapshot = structured(await client.callTool({ name: "docket_execution", arguments: { id } }));
    expect(snapshot).toMatchObject({ id, state: "succeeded", capability: "executions.demonstrate" });
    expect(snapshot.output.steps).toBe(2);

    const list = structured(await client.callTool({ name: "docket_executions", arguments: { capability: "executions.demonstrate", state: "succeeded" } }));
    expect(list.items.map((i: { id: string }) => i.id)).toContain(id);
    expect(list.counts.succeeded).toBeGreaterThanOrEqual(1);

    const all = structured(await client.callTool({ name: "docket_execution_events", arguments: { id } }));
    expect(all.events[0]).toMatchObject({ sequence: 1, type: "execution.created" });
    expect(all.events.at(-1).type).toBe("execution.completed");
    expect(all.events.map((e: { sequence: number }) => e.sequence)).toEqual(all.events.map((_: unknown, i: number) => i + 1));
    const after = structured(await client.callTool({ name: "docket_execution_events", arguments: { id, after: all.last_sequence - 1, limit: 10 } }));
    expect(after.events).toHaveLength(1);
    expect(after.events[0].sequence).toBe(all.last_sequence);

    const missing = await client.callTool({ name: "docket_execution", arguments: { id: "x-20260101T000000Z-00000000" } });
    expect(missing.isError).toBe(true);
    expect(structured(missing).error_code).toBe("not_found");
    const malformed = await client.callTool({ name: "docket_execution_events", arguments: { id: "nope" } });
    expect(structured(malformed).error_code).toBe("invalid_input");
  });

  test("docket_execution_cancel answers a receipt and the execution ends cancelled", async () => {
    const id = await startDemonstration({ steps: 100, delay_ms: 1000 });
    const receipt = structured(await client.callTool({ name: "docket_execution_cancel", arguments: { id } }));
    expect(receipt).toMatchObject({ id, cancellable: true, requested: true });
    const end = await terminalOf(plane, id);
    expect(end.state).toBe("cancelled");
    const again = structured(await client.callTool({ name: "docket_execution_cancel", arguments: { id } }));
    expect(again).toMatchObject({ state: "cancelled", requested: false });
  });

  test("docket_execution_protocol is the whole event contract", async () => {
    const protocol = structured(await client.callTool({ name: "docket_execution_protocol", arguments: {} }));
    expect(protocol.schema_version).toBe("1");
    expect(protocol.event_schema).toBeDefined();
    expect(protocol.limits.max_concurrent).toBe(plane.engine.limits.max_concurrent);
  });
});

describe("docket_execution_start with wait", () => {
  test("docket_execution_start with wait sends progress notifications in order, then answers with the terminal snapshot", async () => {
    const seen: SeenProgress[] = [];
    const result = await client.callTool(
      { name: "docket_execution_start", arguments: { capability: "executions.demonstrate", input: { steps: 3, delay_ms: 5 }, wait: true } },
      undefined,
      { onprogress: (p) => void seen.push(p as SeenProgress) },
    );
    // Everything seen here arrived before the answer.
    const { execution } = structured(result);
    expect(execution.state).toBe("succeeded");
    expect(execution.output).toMatchObject({ steps: 3 });
    expect(seen.length).toBeGreaterThanOrEqual(1);
    expect(seen.at(-1)).toMatchObject({ progress: 3, total: 3, message: "step 3 done" });
    for (let i = 1; i < seen.length; i++) expect(seen[i]!.progress).toBeGreaterThan(seen[i - 1]!.progress);
    for (const p of seen) {
      expect(p.message).toBe(`step ${p.progress} done`);
      expect(p._meta![EVENT_META_KEY].execution_id).toBe(execution.id);
    }
    // The sequence in _meta is a cursor into the execution's own events.
    const events = plane.store.events(execution.id, 0, 1000)!.events;
    const last = seen.at(-1)!._meta![EVENT_META_KEY].sequence;
    expect(events.find((e) => e.sequence === last)).toMatchObject({ type: "execution.progress", data: { current: 3, total: 3 } });
  });

  test("docket_execution_start with wait keeps progress increasing across a counter that restarts", async () => {
    const seen: SeenProgress[] = [];
    const result = await client.callTool(
      { name: "docket_execution_start", arguments: { capability: "executions.demonstrate", input: { steps: 2, delay_ms: 0, events: 5000 }, wait: true } },
      undefined,
      { onprogress: (p) => void seen.push(p as SeenProgress) },
    );
    expect(structured(result).execution.state).toBe("succeeded");
    for (let i = 1; i < seen.length; i++) expect(seen[i]!.progress).toBeGreaterThan(seen[i - 1]!.progress);
    // Steps count 1..2, then the events phase counts 1..5000 again: the relay continues from 2.
    expect(seen.at(-1)).toMatchObject({ progress: 5002, total: 5002 });
  });

  test("docket_execution_start with wait answers a failed execution with isError and its descriptor; the snapshot rides as text", async () => {
    const result = await client.callTool({ name: "docket_execution_start", arguments: { capability: "executions.demonstrate", input: { steps: 1, delay_ms: 0, fail: true }, wait: true } });
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ error_code: "demonstration_failed", stage: "run", correlation_id: expect.stringMatching(/^c-/) });
    const texts = (result.content as Array<{ type: string; text: string }>).map((c) => c.text);
    const { execution } = JSON.parse(texts.at(-1)!);
    expect(execution.state).toBe("failed");
    expect(execution.failure.error_code).toBe("demonstration_failed");
  });

  test("docket_execution_start with wait answers a cancelled execution with isError too", async () => {
    const result = await client.callTool(
      { name: "docket_execution_start", arguments: { capability: "executions.demonstrate", input: { steps: 100, delay_ms: 20 }, wait: true } },
      undefined,
      {
        onprogress: (p) => {
          const id = (p as SeenProgress)._meta![EVENT_META_KEY].execution_id;
          if (plane.store.get(id)!.state === "running") plane.engine.cancel(id, { actor: { kind: "http" }, request_id: "test", trace_id: "0".repeat(31) + "1" });
        },
      },
    );
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ error_code: "cancelled" });
  });

  test("cancelling a waiting docket_execution_start (notifications/cancelled) cancels the execution", async () => {
    const abort = new AbortController();
    let id: string | null = null;
    const call = client.callTool(
      { name: "docket_execution_start", arguments: { capability: "executions.demonstrate", input: { steps: 100, delay_ms: 20 }, wait: true } },
      undefined,
      {
        signal: abort.signal,
        onprogress: (p) => {
          id ??= (p as SeenProgress)._meta![EVENT_META_KEY].execution_id;
          abort.abort("the agent changed its mind");
        },
      },
    );
    await expect(call).rejects.toThrow();
    expect(id).not.toBeNull();
    const end = await terminalOf(plane, id!);
    expect(end.state).toBe("cancelled");
    const events = plane.store.events(id!, 0, 1000)!.events;
    expect(events.find((e) => e.type === "execution.cancel_requested")!.data).toEqual({ actor: { kind: "mcp", client: "test-agent" } });
  });

  test("a cancel sent at once after a start (the same write) cancels the execution, waited on or not", async () => {
    for (const wait of [true, false]) {
      const agent = await rawAgent(plane);
      const started = firstStartedExecution(plane);
      // Both messages are handed to the server before it has run a line of the start.
      void agent.send({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "docket_execution_start", arguments: { capability: "executions.demonstrate", input: { steps: 100, delay_ms: 20 }, wait } } });
      void agent.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 2, reason: "the agent changed its mind" } });
      const end = await terminalOf(plane, await started);
      expect(end.state).toBe("cancelled");
      const events = plane.store.events(end.id, 0, 1000)!.events;
      expect(events.find((e) => e.type === "execution.cancel_requested")!.data).toEqual({ actor: { kind: "mcp", client: "raw-agent" } });
      // MCP: a cancelled request is not answered.
      expect(agent.received.filter((m) => m.id === 2)).toEqual([]);
      await agent.close();
    }
  });

  test("a client that goes away while waiting does not cancel the execution: only notifications/cancelled does", async () => {
    const other = await connectInProcess(plane, "leaving-agent");
    let id: string | null = null;
    let seenFirst!: () => void;
    const first = new Promise<void>((resolve) => (seenFirst = resolve));
    const call = other.callTool(
      { name: "docket_execution_start", arguments: { capability: "executions.demonstrate", input: { steps: 100, delay_ms: 20 }, wait: true } },
      undefined,
      {
        onprogress: (p) => {
          id ??= (p as SeenProgress)._meta![EVENT_META_KEY].execution_id;
          seenFirst();
        },
      },
    );
    await first;
    await other.close();
    await expect(call).rejects.toThrow();
    // One macrotask: the server's decision is taken a microtask after the connection closed.
    await new Promise((resolve) => setImmediate(resolve));
    expect(plane.store.get(id!)!.state).toBe("running");
    plane.engine.cancel(id!, { actor: { kind: "http" }, request_id: "test", trace_id: "0".repeat(31) + "1" });
    expect((await terminalOf(plane, id!)).state).toBe("cancelled");
  });
});

describe("resources", () => {
  test("resources/list and resources/templates/list name the executions, the protocol and one execution by id", async () => {
    const { resources } = await client.listResources();
    expect(resources.map((r) => r.uri)).toEqual(["docket://executions", "docket://executions/protocol"]);
    const { resourceTemplates } = await client.listResourceTemplates();
    expect(resourceTemplates.map((t) => t.uriTemplate)).toEqual(["docket://executions/{id}"]);
  });

  test("resources/read answers the list, the protocol and one execution as JSON", async () => {
    const id = await startDemonstration({ steps: 0, delay_ms: 0 });
    await terminalOf(plane, id);
    const read = async (uri: string) => {
      const { contents } = await client.readResource({ uri });
      expect(contents[0]).toMatchObject({ uri, mimeType: "application/json" });
      return JSON.parse((contents[0] as { text: string }).text);
    };
    expect((await read("docket://executions")).items.map((i: { id: string }) => i.id)).toContain(id);
    expect((await read("docket://executions/protocol")).schema_version).toBe("1");
    expect(await read(`docket://executions/${id}`)).toMatchObject({ id, state: "succeeded" });
  });

  test("resources/read of an unknown execution, a malformed id or another URI is an error carrying the descriptor", async () => {
    const unknown = await client.readResource({ uri: "docket://executions/x-20260101T000000Z-00000000" }).catch((e) => e);
    expect(unknown).toBeInstanceOf(McpError);
    expect(unknown.code).toBe(RESOURCE_NOT_FOUND);
    expect(unknown.data.error.error_code).toBe("not_found");
    const malformed = await client.readResource({ uri: "docket://executions/nope" }).catch((e) => e);
    expect(malformed.code).toBe(ErrorCode.InvalidParams);
    expect(malformed.data.error.error_code).toBe("invalid_input");
    const elsewhere = await client.readResource({ uri: "file:///etc/passwd" }).catch((e) => e);
    expect(elsewhere.code).toBe(RESOURCE_NOT_FOUND);
  });
});

/** An initialized MCP connection to a docket server over `plane` with no SDK client: each message sent as written, in the same turn when sent so. */
async function rawAgent(plane: BootedPlane): Promise<{ send(message: JSONRPCMessage): Promise<void>; received: any[]; close(): Promise<void> }> {
  const [serverSide, agentSide] = InMemoryTransport.createLinkedPair();
  const server = createDocketMcpServer(plane.engine, { log: () => undefined });
  const received: any[] = [];
  let initialized!: () => void;
  const answered = new Promise<void>((resolve) => (initialized = resolve));
  agentSide.onmessage = (message) => {
    received.push(message);
    if ((message as { id?: unknown }).id === 1) initialized();
  };
  await server.connect(serverSide);
  await agentSide.start();
  await agentSide.send({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "raw-agent", version: "1.0.0" } } });
  await answered;
  await agentSide.send({ jsonrpc: "2.0", method: "notifications/initialized" });
  return { send: (message) => agentSide.send(message), received, close: () => agentSide.close() };
}

/** The id of the next execution the plane creates. */
function firstStartedExecution(plane: BootedPlane): Promise<string> {
  return new Promise((resolve) => {
    const subscription = plane.store.subscribe({ executions: "all" }, (event) => {
      if (event.type !== "execution.created") return;
      queueMicrotask(() => subscription.unsubscribe());
      resolve(event.execution_id);
    });
  });
}
