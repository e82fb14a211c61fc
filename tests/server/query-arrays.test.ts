// GET array parameters read as openapi.json publishes them (hostile tester): a field
// whose schema is an array, a tuple included, is `style: form, explode: true` — each occurrence of
// its key is one element, as sent, converted by the schema of its position; never a comma list,
// never a JSON array guessed from a leading "[". A tuple's parameter is a valid OpenAPI 3.1 one.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { compileErrors, validate } from "@readme/openapi-parser";
import type { DocketServer } from "../../runtime/server/serve.ts";
import { serveCapabilityFiles, type ServedCheckout } from "./_support/servers.ts";

const ECHO = `import { capability } from "docket";
import * as v from "valibot";

const shape = v.object({
  tags: v.optional(v.array(v.string())),
  counts: v.optional(v.array(v.number())),
  t: v.optional(v.tuple([v.string(), v.number()])),
  strict: v.optional(v.strictTuple([v.string(), v.boolean()])),
  rest: v.optional(v.tupleWithRest([v.string(), v.number()], v.boolean())),
  maybe: v.optional(v.nullable(v.array(v.string()))),
});

export default capability({
  id: "t.echo",
  title: "Echo",
  description: "Answers its input.",
  effect: "read",
  input: shape,
  output: shape,
  handler: (input) => input,
});
`;

describe("GET array parameters", () => {
  let served: ServedCheckout;
  let server: DocketServer;
  beforeAll(async () => {
    served = await serveCapabilityFiles({ "t.echo.ts": ECHO });
    ({ server } = served);
  }, 30_000);
  afterAll(() => served?.stop());

  const echo = async (query: string) => {
    const answer = await fetch(`${server.url}/api/v1/t/echo?${query}`);
    return { status: answer.status, body: (await answer.json()) as any };
  };

  test("openapi.json is valid with tuple fields: each has an items schema beside its prefixItems, as form explode", async () => {
    const doc = (await (await fetch(`${server.url}/api/v1/openapi.json`)).json()) as any;
    const result = await validate(structuredClone(doc));
    expect(result.valid ? "" : compileErrors(result)).toBe("");
    const parameters = Object.fromEntries(doc.paths["/api/v1/t/echo"].get.parameters.map((p: any) => [p.name, p]));
    for (const name of ["tags", "counts", "t", "strict", "rest"]) expect(parameters[name]).toMatchObject({ in: "query", style: "form", explode: true, schema: { type: "array" } });
    // v.tuple drops what follows its places: any rest; v.strictTuple takes none; tupleWithRest its own.
    expect(parameters.t.schema).toMatchObject({ prefixItems: [{ type: "string" }, { type: "number" }], items: {} });
    expect(parameters.strict.schema).toMatchObject({ prefixItems: [{ type: "string" }, { type: "boolean" }], items: {}, maxItems: 2 });
    expect(parameters.rest.schema).toMatchObject({ prefixItems: [{ type: "string" }, { type: "number" }], items: { type: "boolean" } });
    // A union holding an array is one JSON text, and says so.
    expect(parameters.maybe.content["application/json"].schema.anyOf).toBeDefined();
    // What a body takes is left as it is.
    expect(doc.paths["/api/v1/t/echo"].post.requestBody.content["application/json"].schema.properties.strict.items).toBe(false);
  });

  test("a tuple takes its form encoding: each repeated value converted by its position's schema", async () => {
    expect(await echo("t=a&t=1")).toEqual({ status: 200, body: { t: ["a", 1] } });
    expect(await echo("strict=1&strict=true")).toEqual({ status: 200, body: { strict: ["1", true] } });
    expect(await echo("rest=a&rest=2&rest=true&rest=0")).toEqual({ status: 200, body: { rest: ["a", 2, true, false] } });
    // Wrong at a position: 400 naming the element.
    const wrong = await echo("t=a&t=one");
    expect(wrong.status).toBe(400);
    expect(wrong.body.error.message).toContain("input.t[1]");
    expect((await echo("strict=a&strict=true&strict=false")).status).toBe(400);
    expect((await echo("t=a")).status).toBe(400);
  });

  test("each occurrence of an array's key is one element, exactly as sent: no comma list, no JSON array", async () => {
    expect(await echo("tags=a%2Cb")).toEqual({ status: 200, body: { tags: ["a,b"] } });
    expect(await echo("tags=a,b")).toEqual({ status: 200, body: { tags: ["a,b"] } });
    expect(await echo("tags=x&tags=a%2Cb")).toEqual({ status: 200, body: { tags: ["x", "a,b"] } });
    expect(await echo("tags=")).toEqual({ status: 200, body: { tags: [""] } });
    expect(await echo("tags=%5B%22y%22%5D")).toEqual({ status: 200, body: { tags: ['["y"]'] } });
    expect(await echo("tags=%5Bx%5D")).toEqual({ status: 200, body: { tags: ["[x]"] } });
    expect(await echo("tags=*.%7Bts,js%7D")).toEqual({ status: 200, body: { tags: ["*.{ts,js}"] } });
    expect(await echo("counts=1&counts=2.5")).toEqual({ status: 200, body: { counts: [1, 2.5] } });
    // A number list written another way is an element that is no number: named, not guessed at.
    for (const query of ["counts=1,2", "counts=%5B3,4%5D"]) {
      const { status, body } = await echo(query);
      expect(status).toBe(400);
      expect(body.error.message).toContain("input.counts[0]");
    }
  });

  test("a union holding an array is one JSON text, as openapi.json publishes it", async () => {
    expect(await echo(`maybe=${encodeURIComponent('["a,b","[c]"]')}`)).toEqual({ status: 200, body: { maybe: ["a,b", "[c]"] } });
    expect(await echo("maybe=null")).toEqual({ status: 200, body: { maybe: null } });
    expect((await echo("maybe=a,b")).status).toBe(400);
    // Its key repeated, it is one element per occurrence, as an array field is.
    expect(await echo("maybe=a%2Cb&maybe=%5Bc%5D")).toEqual({ status: 200, body: { maybe: ["a,b", "[c]"] } });
  });
});
