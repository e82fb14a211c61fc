/**
 * A decoder of an HTTP/1.1 chunked request body (RFC 9112 §7.1), fed the bytes as they come: for
 * the requests Node hands to the server's `upgrade` listener (_node-upgrade.ts), whose bodies no
 * Node parser reads. `curl --http2` offers `Upgrade: h2c` on a plain-HTTP POST and streams a body
 * of unknown length chunked; undecoded, it was refused as a body that ended early where Bun
 * answered it (serve tester, session 48).
 *
 * Each size line is hexadecimal digits, then extensions after `;` (ignored), then CRLF; a size line
 * or a trailer line longer than LINE_BYTES, a size that is not hexadecimal or past 2^53, and data
 * not followed by CRLF are malformed: `push` throws a {@link MalformedChunks}.
 */
export class MalformedChunks extends Error {
  override name = "MalformedChunks";
}

/** The longest size line (extensions included) or trailer line read. */
const LINE_BYTES = 4096;
/** The most trailer bytes read after the last chunk. */
const TRAILER_BYTES = 16 * 1024;

type State =
  | { at: "size"; line: number[] }
  | { at: "data"; left: number }
  | { at: "data-end"; seen: number }
  | { at: "trailer"; line: number; total: number; lineStart: boolean; cr: boolean }
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
          if (state.left === 0) state = { at: "data-end", seen: 0 };
          continue;
        }
        const byte = bytes[i++]!;
        if (state.at === "data-end") {
          if (byte !== (state.seen === 0 ? 0x0d : 0x0a)) throw new MalformedChunks("A chunk's data is not followed by CRLF (its size says less than was sent).");
          state = state.seen === 0 ? { at: "data-end", seen: 1 } : { at: "size", line: [] };
        } else if (state.at === "size") {
          if (byte === 0x0a) {
            state = sizeRead(state.line);
          } else {
            if (state.line.length >= LINE_BYTES) throw new MalformedChunks(`A chunk's size line is longer than ${LINE_BYTES} bytes.`);
            state.line.push(byte);
          }
        } else if (state.at === "trailer") {
          if (++state.total > TRAILER_BYTES) throw new MalformedChunks(`The trailer after the last chunk is longer than ${TRAILER_BYTES} bytes.`);
          if (byte === 0x0a) {
            // An empty line (CRLF alone) ends the trailer, and the body.
            if (state.lineStart || (state.line === 1 && state.cr)) state = { at: "done" };
            else state = { at: "trailer", line: 0, total: state.total, lineStart: true, cr: false };
          } else {
            if (state.line >= LINE_BYTES) throw new MalformedChunks(`A trailer line is longer than ${LINE_BYTES} bytes.`);
            state = { at: "trailer", line: state.line + 1, total: state.total, lineStart: false, cr: byte === 0x0d };
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
  const size = text.split(";", 1)[0]!.trim();
  const digits = size.replace(/^0+(?=.)/, "");
  if (!/^[0-9A-Fa-f]{1,14}$/.test(digits) || !/^[0-9A-Fa-f]+$/.test(size) || Number.parseInt(digits, 16) > Number.MAX_SAFE_INTEGER) throw new MalformedChunks("A chunk's size is not a hexadecimal number of at most 2^53 bytes.");
  const bytes = Number.parseInt(digits, 16);
  return bytes === 0 ? { at: "trailer", line: 0, total: 0, lineStart: true, cr: false } : { at: "data", left: bytes };
}
