import { describe, expect, test } from "bun:test";
import { readFile } from "node:fs/promises";
import { thrownClass, thrownDetail, thrownMessage } from "../../runtime/execution/thrown.ts";

const SECRET = "key=s3cr3t-value";

async function fsError(): Promise<unknown> {
  try {
    await readFile(`/nonexistent-docket/credentials/${SECRET}.txt`);
  } catch (error) {
    return error;
  }
}

describe("thrownClass", () => {
  test("thrownClass names the class and a system code, never the message", async () => {
    class UpstreamError extends Error {}
    expect(thrownClass(new TypeError(SECRET))).toBe("TypeError");
    expect(thrownClass(await fsError())).toBe("Error ENOENT");
    expect(thrownClass(new UpstreamError(SECRET))).toBe("UpstreamError");
    expect(thrownClass(SECRET)).toBe("a string (not an Error)");
    expect(thrownClass(null)).toBe("null");
    expect(thrownClass(undefined)).toBe("undefined");
    expect(thrownClass(42)).toBe("a number (not an Error)");
    expect(thrownClass({ message: SECRET })).toBe("an object (not an Error)");
    expect(thrownClass({ code: "EPERM" })).toBe("an object with code EPERM (not an Error)");
    expect(thrownClass(function evil() {})).toBe("a function (not an Error)");
  });

  test("thrownClass refuses names and codes that are not identifier-shaped (they could carry text)", () => {
    expect(thrownClass(Object.assign(new Error("x"), { name: `connect ${SECRET}` }))).toBe("Error");
    expect(thrownClass(Object.assign(new Error("x"), { code: SECRET }))).toBe("Error");
  });

  test("thrownClass shows a name only as error classes are named, and a code only as the system, Node or undici give one: identifier-shaped tokens are not shown (tester R1)", () => {
    expect(thrownClass(Object.assign(new Error("x"), { name: "ghp_16C7e42F292c6912E7710c838347Ae178B4a" }))).toBe("Error");
    expect(thrownClass(Object.assign(new Error("x"), { name: "hunter2SuperSecretToken" }))).toBe("Error");
    expect(thrownClass(Object.assign(new Error("x"), { code: "AKIAIOSFODNN7EXAMPLE" }))).toBe("Error");
    expect(thrownClass(Object.assign(new Error("x"), { code: "E_SECRETCODE_ABC" }))).toBe("Error");
    expect(thrownClass({ name: "SECRET9objname", message: "m" })).toBe("an object (not an Error)");
    expect(thrownClass(new DOMException("m", "SECRETDOMNAME"))).toBe("DOMException");
    class Sneaky extends Error {}
    Object.defineProperty(Sneaky, "name", { value: "tok_live_4eC39HqLyjWDarjtT1zdp7dc" });
    expect(thrownClass(new Sneaky("x"))).toBe("Error");
    // What is shown still is.
    expect(thrownClass(Object.assign(new Error("x"), { code: "ECONNREFUSED" }))).toBe("Error ECONNREFUSED");
    expect(thrownClass(Object.assign(new TypeError("x"), { code: "ERR_INVALID_ARG_TYPE" }))).toBe("TypeError ERR_INVALID_ARG_TYPE");
    expect(thrownClass(Object.assign(new Error("x"), { code: "UND_ERR_CONNECT_TIMEOUT" }))).toBe("Error UND_ERR_CONNECT_TIMEOUT");
    expect(thrownClass(Object.assign(new Error("x"), { code: "ERR_HTTP2_STREAM_ERROR" }))).toBe("Error ERR_HTTP2_STREAM_ERROR");
    // A host that does not resolve: what fetch and node:dns say (checking tester).
    for (const code of ["ENOTFOUND", "EAI_AGAIN", "EAI_NONAME", "ESERVFAIL"]) expect(thrownClass(Object.assign(new Error("x"), { code }))).toBe(`Error ${code}`);
    expect(thrownClass(Object.assign(new Error("x"), { code: "ERR_TRANSFERRING_EXTERNALIZED_SHAREDARRAYBUFFER" }))).toBe("Error ERR_TRANSFERRING_EXTERNALIZED_SHAREDARRAYBUFFER");
    // A key behind Node's prefix is no code of Node's (tester).
    expect(thrownClass(Object.assign(new Error("x"), { code: "ERR_AKIAIOSFODNN7EXAMPLE" }))).toBe("Error");
    expect(thrownClass(Object.assign(new Error("x"), { code: "UND_ERR_HUNTER2SECRET" }))).toBe("Error");
    expect(thrownClass(Object.assign(new Error("x"), { code: "ERR_ghp_16C7e42F292c6912E7710c838347Ae178B4a" }))).toBe("Error");
    expect(thrownClass(new AggregateError([], "x"))).toBe("AggregateError");
  });

  test("thrownDetail names a capability's modules by their paths, without the query docket imports them by", () => {
    const error = new Error("boom");
    error.stack = "Error: boom\n    at handler (/repo/capabilities/team.x.ts?docket_pin=0123abcd:4:11)\n    at /repo/capabilities/_h.ts?docket_version=ff00:2:3";
    expect(thrownDetail(error)).toBe("Error: boom\n    at handler (/repo/capabilities/team.x.ts:4:11)\n    at /repo/capabilities/_h.ts:2:3");
  });

  test("thrownClass and thrownDetail never throw: a hostile Proxy, a revoked one, an object whose toString throws", () => {
    const trap = () => {
      throw new Error(`trap ${SECRET}`);
    };
    const hostile = new Proxy({}, { get: trap, getPrototypeOf: trap, ownKeys: trap, has: trap, getOwnPropertyDescriptor: trap });
    const { proxy: revoked, revoke } = Proxy.revocable({}, {});
    revoke();
    const badString = {
      toString() {
        throw new Error("no");
      },
      toJSON() {
        throw new Error("no");
      },
    };
    for (const value of [hostile, revoked, badString, Object.create(null)]) {
      expect(thrownClass(value)).toBe("an object (not an Error)");
      expect(typeof thrownDetail(value)).toBe("string");
      expect(typeof thrownMessage(value)).toBe("string");
      expect(thrownClass(value)).not.toContain(SECRET);
    }
  });

  test("thrownDetail keeps the message, stack and causes for the log", () => {
    const detail = thrownDetail(new Error("outer", { cause: new Error(`inner ${SECRET}`) }));
    expect(detail).toContain("outer");
    expect(detail).toContain(`caused by: Error: inner ${SECRET}`);
    expect(thrownDetail(SECRET)).toContain(SECRET);
  });
});
