/**
 * A decoder of an HTTP/1.1 chunked request body (RFC 9112 §7.1), fed the bytes as they come: for
 * the requests Node hands to the server's `upgrade` listener (_node-upgrade.ts), whose bodies no
 * Node parser reads. `curl --http2` offers `Upgrade: h2c` on a plain-HTTP POST and streams a body
 * of unknown length chunked; undecoded, it was refused as a body that ended early where Bun
 * answered it (serve tester, session 48).
 *
 * Read as Bun reads one, so that both runtimes answer alike: each size line is hexadecimal digits,
 * then extensions after `;` (not read), then CRLF, nothing else (a space, a tab, a no-break space);
 * the last chunk is followed by CRLF alone (Bun takes no trailer). A size line longer than
 * LINE_BYTES, a size of more than 14 hex digits (Bun's bound), data not followed by CRLF, and a trailer are malformed: `push`
 * throws a {@link MalformedChunks}.
 */
export class MalformedChunks extends Error {
  override name = "MalformedChunks";
}

/** The longest size line (extensions included) read. */
const LINE_BYTES = 4096;

/** An HTTP token's characters (RFC 9110 tchar). */
const TOKEN = "[!#$%&'*+\\-.^_`|~0-9A-Za-z]+";
/** What may follow a chunk's size: `;name` or `;name=value`, the value a token or a quoted string with no space in it. */
const CHUNK_EXTENSIONS = new RegExp(`^(?:;${TOKEN}(?:=(?:${TOKEN}|"[^"\\s\\\\\\x00-\\x1f\\x7f]*"))?)*$`);

type State =
  | { at: "size"; line: number[] }
  | { at: "data"; left: number }
  /** The CRLF after a chunk's data (`last`: after the last chunk, none), `seen` of its two bytes read. */
  | { at: "data-end"; seen: number; last: boolean }
  | { at: "done" };

export interface ChunkedDecoder {
  /** Decodes `bytes`: the body's bytes in them, whether the body ended, and how many of `bytes` it took (what follows belongs to no body). */
  push(bytes: Uint8Array): { data: Uint8Array[]; done: boolean; used: number };
}

export function chunkedDecoder(): ChunkedDecoder {
  let state: State = { at: "size", line: [] };
  return {
    push(bytes) {
      const data: Uint8Array[] = [];
      let i = 0;
      while (i < bytes.length && state.at !== "done") {
        if (state.at === "data") {
          const take = Math.min(state.left, bytes.length - i);
          data.push(bytes.subarray(i, i + take));
          i += take;
          state.left -= take;
          if (state.left === 0) state = { at: "data-end", seen: 0, last: false };
          continue;
        }
        const byte = bytes[i++]!;
        if (state.at === "data-end") {
          if (byte !== (state.seen === 0 ? 0x0d : 0x0a)) {
            throw new MalformedChunks(state.last ? "The last chunk is not followed by CRLF alone (a trailer, which is not read, or stray bytes)." : "A chunk's data is not followed by CRLF (its size says less than was sent).");
          }
          state = state.seen === 0 ? { at: "data-end", seen: 1, last: state.last } : state.last ? { at: "done" } : { at: "size", line: [] };
        } else if (state.at === "size") {
          if (byte === 0x0a) {
            state = sizeRead(state.line);
          } else {
            if (state.line.length >= LINE_BYTES) throw new MalformedChunks(`A chunk's size line is longer than ${LINE_BYTES} bytes.`);
            state.line.push(byte);
          }
        }
      }
      return { data, done: state.at === "done", used: i };
    },
  };
}

/** The state after a size line (its LF read; its CR, if any, still in `line`). */
function sizeRead(line: number[]): State {
  if (line.at(-1) !== 0x0d) throw new MalformedChunks("A chunk's size line does not end with CRLF.");
  const text = String.fromCharCode(...line.slice(0, -1));
  // Digits, then nothing or `;` and extensions: no space around them, as Bun reads it.
  const size = text.split(";", 1)[0]!;
  const digits = size.replace(/^0+(?=.)/, "");
  if (!/^[0-9A-Fa-f]+$/.test(size) || digits.length > 14) throw new MalformedChunks("A chunk's size is not a hexadecimal number of at most 14 digits, alone before its CRLF or `;`.");
  // Each extension a name, with a value or not (a token, or a quoted string without spaces), as
  // Bun takes them: a space, a bare CR or a control in one was taken here where Bun refused it.
  if (!CHUNK_EXTENSIONS.test(text.slice(size.length))) throw new MalformedChunks("A chunk's extensions are not `;name` or `;name=value` with no space or control in them.");
  const bytes = Number.parseInt(digits, 16);
  return bytes === 0 ? { at: "data-end", seen: 0, last: true } : { at: "data", left: bytes };
}
