import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { compileErrors, validate } from "@readme/openapi-parser";
import type { StartFn, StartedServer } from "./_support/servers.ts";
import { client, rawRequest } from "./_support/http.ts";

const isDescriptor = (body: any) => typeof body?.error?.error_code === "string" && typeof body.error.correlation_id === "string" && typeof body.error.request_id === "string";

/** The HTTP API: every route form, coercion, refusals with their statuses, ids on every response. */
export function apiContract(name: string, start: StartFn): void {
  describe(`${name}: HTTP API`, () => {
    let server: StartedServer;
    let http: ReturnType<typeof client>;
    beforeAll(async () => {
      server = await start({ limits: { input_bytes: 4096 } });
      http = client(server);
    }, 30_000);
    afterAll(() => server?.stop(), 15_000);

    test("/healthz answers liveness without checkout details", async () => {
      const response = await fetch(`${server.url}/healthz`);
      expect(response.status).toBe(200);
      const text = await response.text();
      expect(JSON.parse(text)).toEqual({ ok: true });
      expect(text).not.toContain(server.root);
      expect(response.headers.get("x-request-id")).toMatch(/^[A-Za-z0-9._:-]{1,128}$/);
    });

    test("a route with a trailing slash is a 404 naming the route without it, not an unknown capability `executions.`", async () => {
      for (const [path, meant] of [["/api/v1/executions/", "/api/v1/executions"], ["/api/v1/capabilities/list/", "/api/v1/capabilities/list"], ["/api/v1/capabilities/get/?id=files.digest", "/api/v1/capabilities/get?id=files.digest"]]) {
        const response = await http.get(path!);
        expect(response.status).toBe(404);
        const { error } = (await response.json()) as any;
        expect(error).toMatchObject({ error_code: "not_found", suggestion: `Call ${meant} instead.`, context: { reason: "trailing_slash" } });
      }
      // No route there without the slash either: an unknown capability, named without its slash (tester H).
      const nowhere = (await (await http.get("/api/v1/no/such/")).json()) as any;
      expect(nowhere.error.message).toContain('No capability "no.such" is loaded');
      const bare = (await (await http.get("/api/v1/")).json()) as any;
      expect(bare.error.message).toBe("/api/v1/ names no capability.");
    });

    test("an id holding a control character is quoted with it escaped, never shown as the loaded id it is not (hostile tester, session 39)", async () => {
      const started = await http.post("/api/v1/executions/start", { capability: "executions.demonstrate\u0000", input: {} });
      const { error } = (await started.json()) as any;
      expect(error.error_code).toBe("not_found");
      expect(error.message).toBe('No capability "executions.demonstrate\\u0000" is loaded.');
      const got = (await (await http.get("/api/v1/capabilities/get?id=executions.demonstrate%01")).json()) as any;
      expect(got.error.message).toBe('No capability "executions.demonstrate\\u0001" is loaded.');
      // What JSON leaves as it is and a message's sanitizing removes (DEL, C1, bidirectional overrides) is escaped too (checking tester).
      for (const [sent, shown] of [["%7F", "\\u007f"], ["%C2%85", "\\u0085"], ["%E2%80%AE", "\\u202e"]]) {
        const odd = (await (await http.get(`/api/v1/capabilities/get?id=executions.demonstrate${sent}`)).json()) as any;
        expect(odd.error.message).toBe(`No capability "executions.demonstrate${shown}" is loaded.`);
      }
      const route = (await (await http.get("/api/v1/x%00/y%1b")).json()) as any;
      expect(route.error.message).toBe('No capability "x\\u0000.y\\u001b" is loaded, so "/api/v1/x\\u0000/y\\u001b" does not exist.');
    });

    test("read capability answers GET with query and POST with a JSON body", async () => {
      const list = (await (await http.get("/api/v1/capabilities/list")).json()) as any;
      expect(list.capabilities.map((c: any) => c.id)).toContain("executions.demonstrate");
      const viaGet = await http.get("/api/v1/capabilities/get?id=executions.demonstrate");
      const viaPost = await http.post("/api/v1/capabilities/get", { id: "executions.demonstrate" });
      expect(viaGet.status).toBe(200);
      expect(viaPost.status).toBe(200);
      expect(await viaGet.json()).toEqual(await viaPost.json());
    });

    test("query parameters are coerced by the input schema: integers, booleans", async () => {
      const response = await http.get("/api/v1/executions/demonstrate?steps=2&delay_ms=0&events=3&fail=false");
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject({ steps: 2, events: 3 });
      const bad = await http.get("/api/v1/executions/demonstrate?steps=two");
      expect(bad.status).toBe(400);
      const body = (await bad.json()) as any;
      expect(body.error.error_code).toBe("invalid_input");
      expect(body.error.message).toContain("steps");
    });

    test("query parameters are coerced by the input schema: repeated keys become arrays, one element each, commas kept", async () => {
      for (const file of ["a.txt", "b.txt", "c.txt"]) writeFileSync(join(server.root, file), file);
      // A glob's braces hold commas: one element, not two halves (hostile tester).
      const braces = (await (await http.get("/api/v1/files/digest?include=%7Ba,b%7D.txt")).json()) as any;
      expect(braces.files).toBe(2);
      const repeated = (await (await http.get("/api/v1/files/digest?include=a.txt&include=b.txt&include=c.txt")).json()) as any;
      expect(repeated.files).toBe(3);
    });

    test("a handler's CapabilityError is 422 with its own code", async () => {
      const response = await http.get("/api/v1/executions/demonstrate?steps=0&delay_ms=0&fail=true");
      expect(response.status).toBe(422);
      expect(((await response.json()) as any).error.error_code).toBe("demonstration_failed");
    });

    test("write capability: POST works, GET is 405 with Allow and a descriptor", async () => {
      const response = await http.get("/api/v1/executions/start?capability=executions.demonstrate");
      expect(response.status).toBe(405);
      expect(response.headers.get("allow")).toBe("POST");
      const body = await response.json();
      expect(isDescriptor(body)).toBe(true);
      expect(response.headers.get("x-request-id")).toBe((body as any).error.request_id);
      const id = await http.start("executions.demonstrate", { steps: 1, delay_ms: 0 });
      expect(id).toMatch(/^x-\d{8}T\d{6}Z-[0-9a-f]{8}$/);
    });

    test("execution routes: start, get, events with a cursor, cancel, list alias, protocol", async () => {
      const id = await http.start("executions.demonstrate", { steps: 2, delay_ms: 0 });
      await http.completed(id);
      const snapshot = (await (await http.get(`/api/v1/executions/get?id=${id}`)).json()) as any;
      expect(snapshot).toMatchObject({ id, state: "succeeded", output: { steps: 2 } });
      const page = (await (await http.get(`/api/v1/executions/events?id=${id}&after=1&limit=2`)).json()) as any;
      expect(page.events.map((e: any) => e.sequence)).toEqual([2, 3]);
      const receipt = (await (await http.post("/api/v1/executions/cancel", { id })).json()) as any;
      expect(receipt).toMatchObject({ id, state: "succeeded", requested: false });
      const listed = (await (await http.get("/api/v1/executions?state=succeeded&limit=50")).json()) as any;
      expect(listed.items.map((e: any) => e.id)).toContain(id);
      const protocol = (await (await http.get("/api/v1/executions/protocol")).json()) as any;
      expect(protocol.event_schema).toBeDefined();
      expect(protocol.control_schema).toBeDefined();
    });

    test("a misspelt member of executions.start (runId, deadline) is 400 naming it and the one meant; nothing is started", async () => {
      const before = ((await (await http.get("/api/v1/executions?limit=200")).json()) as any).items.length;
      for (const [member, meant] of [["runId", "run_id"], ["deadline", "deadline_ms"], ["sessionKey", "session_key"]] as const) {
        const response = await http.post("/api/v1/executions/start", { capability: "executions.demonstrate", input: { steps: 1, delay_ms: 0 }, [member]: "order-42" });
        expect(response.status).toBe(400);
        const { error } = (await response.json()) as any;
        expect(error.error_code).toBe("invalid_input");
        expect(error.message).toContain(`Unknown member "${member}": Did you mean "${meant}"?`);
      }
      expect(((await (await http.get("/api/v1/executions?limit=200")).json()) as any).items.length).toBe(before);
    });

    test("a session_key holding an escape sequence, a line break or a bidirectional override is 400 naming it; nothing is started (tester, session 33)", async () => {
      const before = ((await (await http.get("/api/v1/executions?limit=200")).json()) as any).items.length;
      for (const key of ["k\u001b]0;PWNED\u0007", "two\nlines", "a\u202eRTL", "bell\u0007", "c1\u009b2J", "deploy\u2028FAKE: state succeeded", "para\u2029x"]) {
        const response = await http.post("/api/v1/executions/start", { capability: "executions.demonstrate", input: { steps: 1, delay_ms: 0 }, session_key: key });
        expect(response.status).toBe(400);
        const { error } = (await response.json()) as any;
        expect(error.error_code).toBe("invalid_input");
        expect(error.message).toContain("input.session_key: must hold no control characters (escapes, line breaks, tabs) or bidirectional overrides");
      }
      expect(((await (await http.get("/api/v1/executions?limit=200")).json()) as any).items.length).toBe(before);
      // Right-to-left text and its marks are no override: kept.
      const started = await http.post("/api/v1/executions/start", { capability: "executions.demonstrate", input: { steps: 1, delay_ms: 0 }, session_key: "שלום\u200f-queue" });
      expect(started.status).toBe(200);
      const id = ((await started.json()) as any).execution.id;
      expect(((await (await http.get(`/api/v1/executions/get?id=${id}`)).json()) as any).session_key).toBe("שלום\u200f-queue");
    });

    test("a misspelt parameter of docket's own reads (afterr, limt) is 400 naming it and the one meant, as /events refuses one, never answered as if absent (tester T1)", async () => {
      const id = await http.start("executions.demonstrate", { steps: 1, delay_ms: 0 });
      await http.completed(id);
      for (const [path, field, meant] of [
        [`/api/v1/executions/events?id=${id}&afterr=2`, "afterr", "after"],
        [`/api/v1/executions/events?id=${id}&after=1&limt=1`, "limt", "limit"],
        ["/api/v1/executions?stat=failed", "stat", "state"],
        // Set as an own member, as a JSON body's: it vanished as the object's prototype (API tester, session 41).
        [`/api/v1/executions/events?id=${id}&__proto__=x`, "__proto__", "rename it"],
        ["/api/v1/executions?__proto__=1", "__proto__", "rename it"],
      ] as const) {
        const response = await http.get(path);
        expect(`${path}: ${response.status}`).toBe(`${path}: 400`);
        const { error } = (await response.json()) as any;
        expect(error).toMatchObject({ error_code: "invalid_input", context: { reason: "unknown_fields", fields: [field] } });
        expect(error.message).toContain(`no field "${field}"`);
        expect(error.message).toContain(meant);
      }
      // A capability file's read still runs with what it knows (docket run notes what was dropped).
      expect((await http.get("/api/v1/files/digest?path=.&extra=1")).status).toBe(200);
    });

    test("an id of the wrong shape is 400 before any look-up", async () => {
      // A date no id has (month 13, hour 25, the 30th of February) is no id either (executions tester, session 47: 404).
      const impossible = ["x-20261306T150621Z-d36daac4", "x-20261206T256621Z-d36daac4", "x-20260230T000000Z-0a1b2c3d"];
      for (const path of ["/api/v1/executions/get?id=nope", "/api/v1/executions/artifact?id=nope&name=x", ...impossible.map((id) => `/api/v1/executions/get?id=${id}`), `/api/v1/executions/events?id=${impossible[2]}`]) {
        const response = await http.get(path);
        expect(response.status).toBe(400);
        expect(isDescriptor(await response.json())).toBe(true);
      }
      // Said once, with what of the date names no moment (MCP/CLI tester, session 48: the same sentence twice, no reason).
      const said = async (id: string) => ((await (await http.get(`/api/v1/executions/get?id=${id}`)).json()) as any).error.message as string;
      expect(await said(impossible[0]!)).toBe("Cannot call executions.get: input.id: must be an execution id like x-20260908T010203Z-0a1b2c3d (its UTC date and time, yyyymmddThhmmss, name no moment: there is no month 13)");
      expect(await said(impossible[2]!)).toContain("name no moment: 2026-02 has no day 30)");
      expect(await said("x-bad")).toBe("Cannot call executions.get: input.id: must be an execution id like x-20260908T010203Z-0a1b2c3d");
    });

    test("client mistakes are 4xx naming the field: a list cursor this server never gave out, files.digest of a missing path", async () => {
      for (const path of ["/api/v1/executions?cursor=not-a-cursor", "/api/v1/executions/list?cursor=bm90LW91cnM"]) {
        const response = await http.get(path);
        expect(response.status).toBe(400);
        const { error } = (await response.json()) as any;
        expect(error).toMatchObject({ error_code: "invalid_input", context: { field: "cursor" } });
      }
      const missing = await http.get("/api/v1/files/digest?path=no-such-folder");
      expect(missing.status).toBe(404);
      const { error } = (await missing.json()) as any;
      expect(error).toMatchObject({ error_code: "not_found", context: { field: "path" } });
      expect(error.message).not.toContain("bug");
    });

    test("an X-Docket-Actor header claims nothing: the execution's actor is what the edge established", async () => {
      const response = await http.send("/api/v1/executions/start", {
        method: "POST",
        headers: { "Content-Type": "application/json", "X-Docket-Actor": "cockpit" },
        body: JSON.stringify({ capability: "executions.demonstrate", input: { steps: 1, delay_ms: 0 } }),
      });
      expect(response.status).toBe(200);
      expect(((await response.json()) as any).execution.actor).toEqual({ kind: "http" });
    });

    test("malformed JSON is answered without quoting the text it stumbled on (it may be a secret)", async () => {
      const response = await http.post("/api/v1/executions/start", '{"capability": "x", "input": {"token": tok-unquoted-s3cr3t}}');
      expect(response.status).toBe(400);
      const text = await response.text();
      expect(text).toContain("not valid JSON");
      expect(text).not.toContain("s3cr3t");
    });

    test("malformed JSON is 400 naming the parse problem, never 500", async () => {
      const response = await http.post("/api/v1/executions/start", '{"capability": ');
      expect(response.status).toBe(400);
      expect(((await response.json()) as any).error.message).toContain("not valid JSON");
      // The parser's reason whole, with the grammar it quotes, not cut at its first quote mark
      // (Bun: "Expected '}'"; Node: "Expected property name or '}' in JSON at position 1").
      const unquoted = await http.post("/api/v1/executions/start", '{capability:"x"}');
      expect(((await unquoted.json()) as any).error.message).toMatch(/^The request body is not valid JSON: Expected [^.]*'}'[^.]* at line 1, column 2\. Check quotes/);
    });

    test("a body of whitespace JSON does not know (a no-break space, U+3000, U+2028) is malformed JSON, never an empty input that runs with its defaults (serve tester, session 48)", async () => {
      for (const blank of ["\u00a0", "\u3000", " \u2028\n"]) {
        // The fast path (a capability's own route with a declared length) and the app's.
        for (const path of ["/api/v1/health/report", "/api/v1/executions/start"]) {
          const response = await http.post(path, blank);
          expect(response.status).toBe(400);
          expect(((await response.json()) as any).error).toMatchObject({ error_code: "invalid_input", context: { reason: "malformed_json" } });
        }
      }
      // JSON's own whitespace alone is still no body: an empty input.
      expect((await http.post("/api/v1/health/report", " \r\n\t")).status).toBe(200);
    });

    test("a body that is not JSON is 415", async () => {
      const response = await http.send("/api/v1/executions/start", { method: "POST", headers: { "Content-Type": "text/plain" }, body: "capability=x" });
      expect(response.status).toBe(415);
      expect(((await response.json()) as any).error.error_code).toBe("invalid_input");
    });

    test("a JSON body whose Content-Type names a charset other than UTF-8 is 415 naming it, never read as UTF-8 all the same", async () => {
      const body = JSON.stringify({ capability: "executions.demonstrate", input: { steps: 0, delay_ms: 0 } });
      for (const type of ["application/json; charset=latin1", 'application/json;charset="ISO-8859-1"']) {
        const response = await http.send("/api/v1/executions/start", { method: "POST", headers: { "Content-Type": type }, body });
        expect(response.status).toBe(415);
        const { error } = (await response.json()) as any;
        expect(error.message).toStartWith("The request body must be JSON in UTF-8, but its Content-Type says charset=");
        expect(error.context.reason).toBe("unsupported_media_type");
      }
      for (const type of ["application/json; charset=utf-8", "application/json; charset=UTF8", "application/json; charset=us-ascii", 'application/json; profile="a;charset=x"']) {
        expect((await http.send("/api/v1/executions/start", { method: "POST", headers: { "Content-Type": type }, body })).status).toBe(200);
      }
    });

    test("a body sent with a Content-Encoding is 415 naming it and saying to send it uncompressed; nothing is started", async () => {
      const body = JSON.stringify({ capability: "executions.demonstrate", input: { steps: 0, delay_ms: 0 } });
      const before = ((await (await http.get("/api/v1/executions")).json()) as any).items.length;
      for (const coding of ["gzip", "br", "deflate, identity"]) {
        const compressed = coding === "gzip" ? gzipSync(body) : Buffer.from(body);
        const response = await http.send("/api/v1/executions/start", { method: "POST", headers: { "Content-Type": "application/json", "Content-Encoding": coding }, body: compressed });
        expect(response.status).toBe(415);
        expect(response.headers.get("accept-encoding")).toBe("identity");
        const refused = ((await response.json()) as any).error;
        expect(isDescriptor({ error: refused })).toBe(true);
        expect(refused.error_code).toBe("invalid_input");
        expect(refused.message).toContain(`Content-Encoding ${JSON.stringify(coding)}`);
        expect(refused.suggestion).toContain("uncompressed");
        expect(refused.context).toEqual({ reason: "unsupported_content_encoding", content_encoding: coding });
      }
      expect(((await (await http.get("/api/v1/executions")).json()) as any).items.length).toBe(before);
      const identity = await http.send("/api/v1/capabilities/get", { method: "POST", headers: { "Content-Type": "application/json", "Content-Encoding": "identity" }, body: JSON.stringify({ id: "executions.demonstrate" }) });
      expect(identity.status).toBe(200);
    });

    test("HEAD answers the headers GET answers, Content-Length included, and no body", async () => {
      for (const path of ["/api/v1/capabilities/list", "/healthz", "/api/v1/openapi.json", "/api/v1/executions", "/api/v1/no/such"]) {
        const get = await http.get(path);
        const length = (await get.arrayBuffer()).byteLength;
        const head = await rawRequest(server.url, "HEAD", path, server.token ? { Authorization: `Bearer ${server.token}` } : {});
        expect([path, head.status]).toEqual([path, get.status]);
        expect([path, head.headers["content-length"]]).toEqual([path, String(length)]);
        expect(head.headers["content-type"]).toBe(get.headers.get("content-type")!);
        expect(head.body).toBe("");
      }
    });

    test("after is one rule on /events and the HTTP API: decimal digits; 1e1, 1.0, +5, a space, -1 and 0x5 are 400 naming it alike", async () => {
      const id = await http.start("executions.demonstrate", { steps: 1, delay_ms: 0 });
      await http.completed(id);
      const token = server.token ? `&token=${server.token}` : "";
      for (const after of ["1e1", "1.0", "+5", " 5", "-1", "0x5", "", "99999999999999999999"]) {
        const query = encodeURIComponent(after);
        const viaHttp = await http.get(`/api/v1/executions/events?id=${id}&after=${query}`);
        const viaLive = await fetch(`${server.url}/events?execution=${id}&after=${query}${token}`);
        const [httpError, liveError] = [((await viaHttp.json()) as any).error, ((await viaLive.json()) as any).error];
        expect([after, viaHttp.status, viaLive.status]).toEqual([after, 400, 400]);
        expect(httpError.message).toBe(liveError.message);
        expect(httpError.message).toStartWith("after must be");
        expect(httpError.message).toContain(JSON.stringify(after));
        expect(httpError.context).toEqual({ parameter: "after" });
        expect(liveError.context).toEqual({ parameter: "after" });
      }
      for (const after of ["0", "1", "02"]) {
        const viaHttp = await http.get(`/api/v1/executions/events?id=${id}&after=${after}`);
        expect([after, viaHttp.status]).toEqual([after, 200]);
        expect(((await viaHttp.json()) as any).events[0].sequence).toBe(Number(after) + 1);
        // Taken by /events too: a plain GET gets past the target's checks to the 426 of the upgrade.
        expect([after, (await fetch(`${server.url}/events?execution=${id}&after=${after}${token}`)).status]).toEqual([after, 426]);
      }
    });

    test("a bounded whole-number query parameter is refused in one sentence stating its range, whether its text is no number or one out of range", async () => {
      const id = await http.start("executions.demonstrate", { steps: 1, delay_ms: 0 });
      await http.completed(id);
      const cases: Array<[string, string, string[]]> = [
        [`/api/v1/executions/events?id=${id}&limit=`, "limit must be a whole number from 1 to 1000 written in decimal digits", ["-1", "0", "1001", "1e1"]],
        ["/api/v1/executions/list?limit=", "limit must be a whole number from 1 to 500 written in decimal digits", ["-1", "0", "501"]],
        ["/api/v1/executions/demonstrate?steps=", "steps must be a whole number from 0 to 100 written in decimal digits", ["-1", "101"]],
      ];
      for (const [path, rule, values] of cases) {
        for (const value of values) {
          const answer = await http.get(path + encodeURIComponent(value));
          const error = ((await answer.json()) as any).error;
          // limit=0 was refused "Expected >=1" while limit=-1 named the parameter and its rule.
          expect([value, answer.status, error.message]).toEqual([value, 400, `${rule}, got ${JSON.stringify(value)}.`]);
          expect(error.context).toEqual({ parameter: rule.split(" ")[0] });
        }
      }
      expect((await http.get(`/api/v1/executions/events?id=${id}&limit=1`)).status).toBe(200);
      expect((await http.get(`/api/v1/executions/events?id=${id}&limit=1000`)).status).toBe(200);
    });

    test("a body over input_bytes is 413, by Content-Length and while reading a chunked body", async () => {
      const big = JSON.stringify({ capability: "executions.demonstrate", input: { pad: "x".repeat(5000) } });
      const declared = await http.post("/api/v1/executions/start", big);
      expect(declared.status).toBe(413);
      expect(((await declared.json()) as any).error.message).toMatch(/^The request body is \d+ bytes, over the input limit of \d+ bytes\.$/);
      const stream = new ReadableStream({
        start(controller) {
          for (let i = 0; i < 5; i++) controller.enqueue(new TextEncoder().encode("x".repeat(1000)));
          controller.close();
        },
      });
      const streamed = await http.send("/api/v1/executions/start", { method: "POST", headers: { "Content-Type": "application/json" }, body: stream, duplex: "half" } as RequestInit & { headers: Record<string, string> });
      expect(streamed.status).toBe(413);
      const refused = ((await streamed.json()) as any).error;
      expect(refused.error_code).toBe("invalid_input");
      expect(refused.message).toMatch(/^The request body is over the input limit of \d+ bytes\.$/);
    });

    test("an unknown capability is 404 naming it and pointing at capabilities/list", async () => {
      const response = await http.get("/api/v1/nothing/here");
      expect(response.status).toBe(404);
      const body = (await response.json()) as any;
      expect(body.error.error_code).toBe("not_found");
      expect(body.error.message).toContain("nothing.here");
      expect(body.error.suggestion).toContain("/api/v1/capabilities/list");
    });

    test("X-Request-Id is echoed when well-formed and created otherwise, on successes and errors", async () => {
      for (const path of ["/healthz", "/api/v1/capabilities/list", "/api/v1/nothing/here", "/api/v1/executions/start", "/nowhere"]) {
        const echoed = await http.get(path, { "X-Request-Id": "req-42.a:b" });
        expect(echoed.headers.get("x-request-id")).toBe("req-42.a:b");
        const created = await http.get(path, { "X-Request-Id": "bad id with spaces" });
        expect(created.headers.get("x-request-id")).toMatch(/^[A-Za-z0-9._:-]{1,128}$/);
        expect(created.headers.get("x-request-id")).not.toBe("bad id with spaces");
      }
    });

    test("traceparent's trace id and the request id land in the execution snapshot", async () => {
      const trace = "4bf92f3577b34da6a3ce929d0e0e4736";
      const id = await http.start("executions.demonstrate", { steps: 0, delay_ms: 0 }, { traceparent: `00-${trace}-00f067aa0ba902b7-01`, "X-Request-Id": "trace-test-1" });
      const snapshot = (await (await http.get(`/api/v1/executions/get?id=${id}`)).json()) as any;
      expect(snapshot.trace_id).toBe(trace);
      expect(snapshot.request_id).toBe("trace-test-1");
      const fresh = await http.start("executions.demonstrate", { steps: 0, delay_ms: 0 }, { traceparent: `00-${"0".repeat(32)}-00f067aa0ba902b7-01` });
      const other = (await (await http.get(`/api/v1/executions/get?id=${fresh}`)).json()) as any;
      expect(other.trace_id).toMatch(/^[0-9a-f]{32}$/);
      expect(other.trace_id).not.toBe("0".repeat(32));
    });

    test("a number too large for JSON (1e309 parses as Infinity) is a 400 naming where it is, never run with Infinity and recorded as null", async () => {
      const response = await http.post("/api/v1/executions/start", '{"capability":"executions.demonstrate","input":{"steps":1e309,"delay_ms":0}}');
      expect(response.status).toBe(400);
      const { error } = (await response.json()) as any;
      expect(error).toMatchObject({ error_code: "invalid_input", context: { reason: "not_finite", path: "input.steps" } });
      expect(error.message).toContain("input.steps is a number too large for JSON to hold (it reads as Infinity)");
      const direct = await http.post("/api/v1/executions/demonstrate", '{"steps":-1e400,"delay_ms":0}');
      expect(direct.status).toBe(400);
      expect(((await direct.json()) as any).error.context).toEqual({ reason: "not_finite", path: "steps" });
    });

    test("a method a GET-only path does not take is a 405 with Allow: GET, not a 404 saying the path does not exist", async () => {
      for (const path of ["/api/v1/executions", "/api/v1/executions/artifact?id=x&name=y", "/events", "/healthz", "/api/v1/openapi.json", "/api/v1/plane"]) {
        for (const method of ["POST", "PUT", "DELETE", "PATCH"]) {
          const response = await http.send(path, { method, headers: { "Content-Type": "application/json" }, body: "{}" });
          expect({ path, method, status: response.status, allow: response.headers.get("allow") }).toEqual({ path, method, status: 405, allow: "GET" });
          expect(((await response.json()) as any).error).toMatchObject({ error_code: "invalid_input", context: { reason: "method_not_allowed", allow: ["GET"] } });
        }
      }
    });

    test("executions/artifact downloads a file; absent is 404, a folder name is 400, no stack or path leaks", async () => {
      const id = await http.start("files.digest", { path: "." });
      await http.completed(id);
      const listed = (await (await http.get(`/api/v1/executions/artifacts?id=${id}`)).json()) as any;
      const manifest = listed.artifacts.find((a: any) => a.name === "manifest.sha256");
      expect(manifest).toBeDefined();
      const file = await http.get(`/api/v1/executions/artifact?id=${id}&name=manifest.sha256`);
      expect(file.status).toBe(200);
      expect(file.headers.get("content-type")).toBe("application/octet-stream");
      expect(file.headers.get("content-disposition")).toContain("attachment");
      const bytes = new Uint8Array(await file.arrayBuffer());
      expect(new Bun.CryptoHasher("sha256").update(bytes).digest("hex")).toBe(manifest.sha256);
      const absent = await http.get(`/api/v1/executions/artifact?id=${id}&name=nothing.txt`);
      expect(absent.status).toBe(404);
      // A parameter given twice is refused in either order, never the first one taken (tester T1).
      for (const query of [`id=${id}&name=manifest.sha256&name=nothing.txt`, `id=${id}&name=nothing.txt&name=manifest.sha256`, `id=${id}&id=${id}&name=manifest.sha256`]) {
        const twice = await http.get(`/api/v1/executions/artifact?${query}`);
        expect(twice.status).toBe(400);
        expect(((await twice.json()) as any).error.message).toMatch(/^(id|name) is given 2 times; give it once\.$/);
      }
      // A parameter it does not take is named, with the one meant (tester R2).
      const misspelt = await http.get(`/api/v1/executions/artifact?id=${id}&name=manifest.sha256&nmae=x`);
      expect(misspelt.status).toBe(400);
      expect(((await misspelt.json()) as any).error.message).toBe('The artifact download takes id and name, and no parameter "nmae". Did you mean "name"?');
      const traversal = await http.get(`/api/v1/executions/artifact?id=${id}&name=${encodeURIComponent("../lease.json")}`);
      expect(traversal.status).toBe(400);
      expect(await traversal.text()).not.toContain(server.root);
      // What a write cut short by a crash left is no artifact: neither listed nor served.
      writeFileSync(join(server.root, ".docket", "artifacts", id, ".docket-partial-0123"), "torn");
      expect((await http.get(`/api/v1/executions/artifact?id=${id}&name=.docket-partial-0123`)).status).toBe(404);
      expect(((await (await http.get(`/api/v1/executions/artifacts?id=${id}`)).json()) as any).artifacts.map((a: any) => a.name)).not.toContain(".docket-partial-0123");
      symlinkSync(join(server.root, "a.txt"), join(server.root, ".docket", "artifacts", id, "link.txt"));
      const link = await http.get(`/api/v1/executions/artifact?id=${id}&name=link.txt`);
      expect(link.status).toBe(400);
      expect(((await link.json()) as any).error.message).toContain("symbolic link");
      // A name outside Latin-1 (and with characters RFC 5987 must escape): served, its name in filename*.
      const unicode = "état 😀 (v2)'s.txt";
      writeFileSync(join(server.root, ".docket", "artifacts", id, unicode), "hi");
      const named = await http.get(`/api/v1/executions/artifact?id=${id}&name=${encodeURIComponent(unicode)}`);
      expect(named.status).toBe(200);
      expect(await named.text()).toBe("hi");
      const disposition = named.headers.get("content-disposition")!;
      expect(disposition).toStartWith('attachment; filename="_tat _ (v2)\'s.txt"; filename*=UTF-8\'\'');
      expect(decodeURIComponent(disposition.split("filename*=UTF-8''")[1]!)).toBe(unicode);
      expect(disposition.split("filename*=UTF-8''")[1]).toMatch(/^[A-Za-z0-9%._~-]+$/);
    });

    test("executions/artifact never waits on a FIFO planted in the folder, and a file larger than artifact_bytes is listed unhashed and sent as it is read", async () => {
      const id = await http.start("files.digest", { path: "." });
      await http.completed(id);
      const folder = join(server.root, ".docket", "artifacts", id);
      const { execFileSync } = await import("node:child_process");
      execFileSync("mkfifo", [join(folder, "pipe")]);
      // Each used to hold one of the runtime's I/O threads until a writer came; two held them all.
      for (let i = 0; i < 4; i++) {
        const pipe = await http.send(`/api/v1/executions/artifact?id=${id}&name=pipe`, { signal: AbortSignal.timeout(5000) });
        expect(pipe.status).toBe(404);
        await pipe.arrayBuffer();
      }
      const listed = (await (await http.get(`/api/v1/executions/artifacts?id=${id}`)).json()) as any;
      expect(listed.artifacts.map((a: any) => a.name)).not.toContain("pipe");
      const manifest = listed.artifacts.find((a: any) => a.name === "manifest.sha256");
      const file = await http.send(`/api/v1/executions/artifact?id=${id}&name=manifest.sha256`, { signal: AbortSignal.timeout(5000) });
      expect(file.headers.get("content-length")).toBe(String(manifest.bytes));
      expect(new Bun.CryptoHasher("sha256").update(new Uint8Array(await file.arrayBuffer())).digest("hex")).toBe(manifest.sha256);
      // 9 MiB, sparse: over artifact_bytes (8 MiB), so not written by ctx.artifacts.write.
      const big = 9 * 1024 * 1024;
      const { truncateSync } = await import("node:fs");
      writeFileSync(join(folder, "big.bin"), "");
      truncateSync(join(folder, "big.bin"), big);
      const again = (await (await http.get(`/api/v1/executions/artifacts?id=${id}`)).json()) as any;
      expect(again.artifacts.find((a: any) => a.name === "big.bin")).toEqual({ name: "big.bin", bytes: big, sha256: null });
      expect(again.artifacts.find((a: any) => a.name === "manifest.sha256")).toEqual(manifest);
      const download = await http.get(`/api/v1/executions/artifact?id=${id}&name=big.bin`);
      // Sent as it is read: Bun frames such a body chunked, Node with the length given.
      expect([null, String(big)]).toContain(download.headers.get("content-length"));
      const body = new Uint8Array(await download.arrayBuffer());
      expect(body.byteLength).toBe(big);
      expect(body.every((b) => b === 0)).toBe(true);
      // A client that leaves after the first chunk: the file is closed, the server goes on.
      const partial = await http.get(`/api/v1/executions/artifact?id=${id}&name=big.bin`);
      const reader = partial.body!.getReader();
      expect((await reader.read()).done).toBe(false);
      await reader.cancel();
      expect((await http.get(`/api/v1/executions/artifact?id=${id}&name=manifest.sha256`)).status).toBe(200);
    });

    test("executions/artifacts never lists through a link planted where an execution's folder is, and release removes the link, not what it leads to (tester T)", async () => {
      const id = await http.start("files.digest", { path: "." });
      await http.completed(id);
      const { mkdirSync, renameSync, existsSync } = await import("node:fs");
      const folder = join(server.root, ".docket", "artifacts", id);
      const elsewhere = join(server.root, "elsewhere");
      mkdirSync(elsewhere);
      writeFileSync(join(elsewhere, "secret.txt"), "not an artifact");
      renameSync(folder, join(server.root, "moved"));
      symlinkSync(elsewhere, folder);
      const listed = (await (await http.get(`/api/v1/executions/artifacts?id=${id}`)).json()) as any;
      expect(listed.artifacts).toEqual([]);
      expect((await http.get(`/api/v1/executions/artifact?id=${id}&name=secret.txt`)).status).toBe(404);
      const released = (await (await http.post("/api/v1/executions/release", { id })).json()) as any;
      expect(released).toMatchObject({ id, released: 0 });
      expect(existsSync(join(elsewhere, "secret.txt"))).toBe(true);
      expect(existsSync(folder)).toBe(false);
    });

    test("OpenAPI 3.1 document is valid and lists every capability route with its methods", async () => {
      const doc = (await (await http.get("/api/v1/openapi.json")).json()) as any;
      expect(doc.openapi).toBe("3.1.0");
      expect(Object.keys(doc.paths["/api/v1/executions/start"])).toEqual(["post"]);
      expect(Object.keys(doc.paths["/api/v1/capabilities/list"]).sort()).toEqual(["get", "post"]);
      expect(doc.paths["/api/v1/executions/demonstrate"].get.parameters.map((p: any) => p.name)).toContain("steps");
      const result = await validate(structuredClone(doc));
      expect(result.valid ? "" : compileErrors(result)).toBe("");
    }, 20_000);
  });
}
