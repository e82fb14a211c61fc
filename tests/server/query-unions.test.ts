// GET parameters read as openapi.json publishes them, for unions, variants, lazy and intersected
// fields (checking tester): a field published as one JSON text (`content: application/json`) is
// read as JSON, a string in it quoted; a variant (`oneOf`) and an intersection (`allOf`) are
// published so; a `v.lazy` field is read by the schema its `$ref` points to; a union of scalars is
// published as form text and read by its first member that takes it. A text that cannot be read
// as published is a 400 naming the field, never a value nobody sent.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { compileErrors, validate } from "@readme/openapi-parser";
import type { DocketServer } from "../../runtime/server/serve.ts";
import { serveCapabilityFiles, type ServedCheckout } from "./_support/servers.ts";

const ECHO = `import { capability } from "docket";
import * as v from "valibot";

type Tree = { name: string; kids?: Tree[] };
const tree: v.GenericSchema<Tree> = v.object({ name: v.string(), kids: v.optional(v.array(v.lazy(() => tree))) });

const shape = v.object({
  sa: v.optional(v.union([v.string(), v.array(v.string())])),
  sn: v.optional(v.union([v.string(), v.number()])),
  ns: v.optional(v.union([v.number(), v.string()])),
  lit: v.optional(v.union([v.literal("auto"), v.number()])),
  sno: v.optional(v.nullable(v.string())),
  k: v.optional(v.variant("kind", [v.object({ kind: v.literal("a"), x: v.optional(v.number()) }), v.object({ kind: v.literal("b") })])),
  lnums: v.optional(v.lazy(() => v.array(v.number()))),
  ltree: v.optional(v.lazy(() => tree)),
  trees: v.optional(v.array(tree)),
  inter: v.optional(v.intersect([v.array(v.number()), v.array(v.number())])),
  arrun: v.optional(v.array(v.union([v.string(), v.array(v.string())]))),
  narr: v.optional(v.nullable(v.array(v.string()))),
});

export default capability({
  id: "t.echo",
  title: "Echo",
  description: "Answers its input.",
  effect: "read",
  input: shape,
  output: v.any(),
  handler: (input) => input,
});
`;

/** A query string written as a conforming OpenAPI client writes it from the published parameters. */
function clientQuery(parameters: any[], input: Record<string, unknown>): string {
  const parts: string[] = [];
  for (const [name, value] of Object.entries(input)) {
    const parameter = parameters.find((p) => p.name === name);
    if (!parameter) throw new Error(`openapi.json offers no parameter ${name}`);
    const pair = (text: string) => parts.push(`${encodeURIComponent(name)}=${encodeURIComponent(text)}`);
    if (parameter.content) pair(JSON.stringify(value));
    else {
      expect(parameter).toMatchObject({ style: "form", explode: true });
      // OpenAPI leaves an object inside a form array undefined; docket takes it as a JSON text (README).
      const text = (one: unknown) => (one !== null && typeof one === "object" ? JSON.stringify(one) : String(one));
      if (Array.isArray(value)) for (const element of value) pair(text(element));
      else pair(text(value));
    }
  }
  return parts.join("&");
}

describe("GET union, variant, lazy and intersection parameters", () => {
  let served: ServedCheckout;
  let server: DocketServer;
  let doc: any;
  let parameters: Record<string, any>;
  beforeAll(async () => {
    served = await serveCapabilityFiles({ "t.echo.ts": ECHO });
    ({ server } = served);
    doc = await (await fetch(`${server.url}/api/v1/openapi.json`)).json();
    parameters = Object.fromEntries(doc.paths["/api/v1/t/echo"].get.parameters.map((p: any) => [p.name, p]));
  }, 30_000);
  afterAll(() => served?.stop());

  const echo = async (query: string) => {
    const answer = await fetch(`${server.url}/api/v1/t/echo?${query}`);
    return { status: answer.status, body: (await answer.json()) as any };
  };
  const refused = async (query: string) => {
    const { status, body } = await echo(query);
    expect({ query, status }).toEqual({ query, status: 400 });
    return body.error;
  };

  test("openapi.json is valid and publishes what can hold an object or array as JSON, arrays as form explode, scalar unions as form text", async () => {
    const result = await validate(structuredClone(doc));
    expect(result.valid ? "" : compileErrors(result)).toBe("");
    for (const name of ["sa", "k", "ltree", "inter"]) {
      expect({ name, content: Object.keys(parameters[name].content ?? {}), schema: parameters[name].schema }).toEqual({ name, content: ["application/json"], schema: undefined });
    }
    expect(parameters.k.content["application/json"].schema.oneOf).toHaveLength(2);
    expect(parameters.inter.content["application/json"].schema.allOf).toHaveLength(2);
    for (const name of ["sn", "ns", "lit", "sno", "lnums", "trees"]) expect(parameters[name]).toMatchObject({ style: "form", explode: true, schema: {} });
    expect(parameters.lnums.schema.$ref).toStartWith("#/components/schemas/");
    expect(parameters.trees.schema).toMatchObject({ type: "array", items: { $ref: expect.stringMatching(/^#\/components\/schemas\//) } });
  });

  test("every value a conforming client writes from openapi.json comes back as sent", async () => {
    const inputs: Record<string, unknown>[] = [
      { sa: "a" },
      { sa: "null" },
      { sa: ["a,b", "[c]"] },
      { sa: '["a"]' },
      { sn: "5", ns: 5, lit: "auto", sno: "x" },
      { sn: "x", ns: "x", lit: 7 },
      { k: { kind: "a", x: 1 } },
      { k: { kind: "b" } },
      { lnums: [1, 2.5] },
      { ltree: { name: "r", kids: [{ name: "c" }] } },
      { trees: [{ name: "r" }, { name: "s", kids: [] }] },
      { inter: [1, 2] },
    ];
    for (const input of inputs) expect(await echo(clientQuery(doc.paths["/api/v1/t/echo"].get.parameters, input))).toEqual({ status: 200, body: input });
  });

  test("a union holding a string, published as JSON, is read as JSON: a JSON string is quoted, an unquoted text is refused naming the field (a)", async () => {
    expect(await echo("sa=%22a%22")).toEqual({ status: 200, body: { sa: "a" } });
    expect(await echo("sa=%5B%22a%22%5D")).toEqual({ status: 200, body: { sa: ["a"] } });
    expect((await refused("sa=null")).message).toContain("input.sa");
    const error = await refused("sa=a");
    expect(error).toMatchObject({ error_code: "invalid_input", context: { parameter: "sa", reason: "query_not_json" } });
    expect(error.message).toBe('"sa" is one JSON text, as openapi.json publishes it (content: application/json), and "a" is not JSON. Nothing was run.');
    expect(error.suggestion).toContain("sa=%22text%22");
    // Its key repeated, it is one element per occurrence, each a JSON text too; a text that is no JSON is the string itself (second checking tester, session 50).
    expect(await echo("sa=a&sa=%22b%22")).toEqual({ status: 200, body: { sa: ["a", "b"] } });
    expect(await echo("narr=%22a%22&narr=%22b%22")).toEqual({ status: 200, body: { narr: ["a", "b"] } });
    expect(await echo("narr=a&narr=b")).toEqual({ status: 200, body: { narr: ["a", "b"] } });
  });

  test("an element of a form array that may be a string is its text as sent, as an OpenAPI client writes a string element; JSON of another type it takes is read as JSON (second checking tester, session 50)", async () => {
    expect(await echo("arrun=a&arrun=%5B%22x%22%5D&arrun=5")).toEqual({ status: 200, body: { arrun: ["a", ["x"], "5"] } });
    expect(await echo("arrun=%22q%22")).toEqual({ status: 200, body: { arrun: ['"q"'] } });
  });

  test("a union of scalars is form text, read by its first member that takes it (a)", async () => {
    expect(await echo("sn=5&ns=5&lit=5")).toEqual({ status: 200, body: { sn: "5", ns: 5, lit: 5 } });
    expect(await echo("ns=x&lit=auto&sno=null")).toEqual({ status: 200, body: { ns: "x", lit: "auto", sno: "null" } });
    expect((await refused("lit=fast")).message).toContain("input.lit");
  });

  test("a variant is one JSON text: a text that is no JSON is refused naming it, never dropped (b)", async () => {
    expect((await refused("k=a")).context).toEqual({ parameter: "k", reason: "query_not_json" });
    expect(await echo(`k=${encodeURIComponent('{"kind":"a"}')}`)).toEqual({ status: 200, body: { k: { kind: "a" } } });
    expect((await refused(`k=${encodeURIComponent('{"kind":"c"}')}`)).message).toContain("input.k");
  });

  test("a v.lazy field is read by the schema its reference points to (c)", async () => {
    expect(await echo("lnums=1&lnums=2")).toEqual({ status: 200, body: { lnums: [1, 2] } });
    expect(await echo("lnums=3")).toEqual({ status: 200, body: { lnums: [3] } });
    expect((await refused("lnums=1,2")).message).toContain("input.lnums[0]");
    expect(await echo(`ltree=${encodeURIComponent('{"name":"r","kids":[{"name":"c"}]}')}`)).toEqual({ status: 200, body: { ltree: { name: "r", kids: [{ name: "c" }] } } });
    expect((await refused("ltree=r")).context).toEqual({ parameter: "ltree", reason: "query_not_json" });
    expect(await echo(`trees=${encodeURIComponent('{"name":"r"}')}&trees=${encodeURIComponent('{"name":"s"}')}`)).toEqual({ status: 200, body: { trees: [{ name: "r" }, { name: "s" }] } });
    const element = await refused(`trees=${encodeURIComponent('{"name":"r"}')}&trees=s`);
    expect(element.context).toEqual({ parameter: "trees", reason: "query_not_json" });
    expect(element.message).toContain('element 1 (trees[1]), "s", is not JSON');
  });

  test("an intersection of arrays is one JSON text (d)", async () => {
    expect(await echo(`inter=${encodeURIComponent("[1,2]")}`)).toEqual({ status: 200, body: { inter: [1, 2] } });
    expect((await refused("inter=1")).message).toContain("input.inter");
    expect((await refused("inter=x")).context).toEqual({ parameter: "inter", reason: "query_not_json" });
  });
});
