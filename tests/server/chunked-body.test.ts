import { describe, expect, test } from "bun:test";
import { chunkedDecoder, MalformedChunks } from "../../runtime/server/_chunked-body.ts";

const bytes = (text: string) => new TextEncoder().encode(text);

/** Feeds `text` in pieces of `size` bytes; the body decoded and whether it ended. */
function decode(text: string, size: number): { body: string; done: boolean; used: number } {
  const decoder = chunkedDecoder();
  const all = bytes(text);
  const parts: Uint8Array[] = [];
  let done = false;
  let used = 0;
  for (let at = 0; at < all.length && !done; at += size) {
    const step = decoder.push(all.subarray(at, at + size));
    parts.push(...step.data);
    done = step.done;
    used = at + step.used;
  }
  return { body: Buffer.concat(parts).toString("utf8"), done, used };
}

describe("a chunked request body decoded as its bytes come (Node's upgrade path)", () => {
  const wire = "5;name=value\r\nhello\r\n0006\r\n world\r\nA\r\n, in ten!!\r\n0\r\n\r\nGET / HTTP/1.1";
  test.each([1, 2, 3, 7, 1000])("pieces of %i bytes give the same body, and stop at its end", (size) => {
    const decoded = decode(wire, size);
    expect(decoded).toMatchObject({ body: "hello world, in ten!!", done: true });
    // What follows the body is no part of it.
    expect(wire.slice(decoded.used)).toBe("GET / HTTP/1.1");
  });

  test("a body not yet ended is not done", () => {
    expect(decode("5\r\nhel", 2)).toMatchObject({ body: "hel", done: false });
    expect(decode("5\r\nhello\r\n0\r\n", 4)).toMatchObject({ body: "hello", done: false });
  });

  test.each([
    ["a size that is not hexadecimal", "zz\r\nhello\r\n0\r\n\r\n", /not a hexadecimal number/],
    ["a size of 15 hex digits", "fffffffffffffff\r\nx", /at most 14 digits/],
    // Extensions as Bun takes them (round 2: Node took spaces, a bare CR and controls in them).
    ["a space in an extension", "5; a=b\r\nhello\r\n0\r\n\r\n", /extensions/],
    ["a quoted value with a space", '5;a="x y"\r\nhello\r\n0\r\n\r\n', /extensions/],
    ["a bare CR in the size line", "5;a\rb\r\nhello\r\n0\r\n\r\n", /extensions/],
    ["data longer than its size", "3\r\nhello\r\n0\r\n\r\n", /not followed by CRLF/],
    ["a size line without CR", "5\nhello\r\n0\r\n\r\n", /does not end with CRLF/],
    ["an endless size line", "5" + ";".repeat(5000), /longer than 4096 bytes/],
    // As Bun reads them (checking tester, session 48: Node took what Bun refused).
    ["a space after the size", "5 \r\nhello\r\n0\r\n\r\n", /alone before its CRLF/],
    ["a no-break space after the size", "5\u00a0\r\nhello\r\n0\r\n\r\n", /alone before its CRLF/],
    ["a tab before the extension", "5\t;x\r\nhello\r\n0\r\n\r\n", /alone before its CRLF/],
    ["a trailer", "0\r\nX-A: 1\r\n\r\n", /CRLF alone/],
    ["a bare LF after the last chunk", "0\r\n\n", /CRLF alone/],
  ])("%s is malformed", (_, text, message) => {
    expect(() => decode(text, 64)).toThrow(MalformedChunks);
    expect(() => decode(text, 64)).toThrow(message);
  });
});
