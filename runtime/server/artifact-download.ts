import { open, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import type { Context } from "hono";
import type { ExecutionPlane } from "../execution/plane.ts";
import { isExecutionId } from "../execution/execution-id.ts";
import { ARTIFACT_OPEN_FLAGS, openedAsArtifact, ownFolder, PARTIAL_ARTIFACT_PREFIX } from "../execution/artifact-files.ts";
import type { AppEnv } from "./_app-env.ts";
import { edgeFailure } from "./errors.ts";
import { didYouMeanText } from "../capability/did-you-mean.ts";

/** The query parameters of the download: anything else is a mistake to name (`nmae=` served the wrong question). */
const PARAMETERS = ["id", "name"];

/** An artifact name is one plain path segment: no separators, no `.`/`..`, no control characters. */
const ARTIFACT_NAME = /^(?!\.{1,2}$)[^/\\\u0000-\u001f]{1,255}$/;

/** Bytes read from the file per chunk of the answer. */
const CHUNK = 256 * 1024;

/**
 * `GET /api/v1/executions/artifact?id=&name=`: downloads one file of an execution's managed output
 * folder. The id is checked by shape, the name is one segment, and symlinks are refused (the file
 * is opened with O_NOFOLLOW, so a link swapped in after a check cannot be followed either). The
 * open never waits (O_NONBLOCK: a FIFO a handler planted there used to hold one of the runtime's
 * few I/O threads until a writer came, and with two such requests every file read of the server
 * waited). A file up to artifact_bytes (what ctx.artifacts.write makes) is read whole and sent
 * with its Content-Length; a larger one, put there some other way, is sent a chunk at a time as
 * the client reads, never held whole (1.5 GB took the server to 1.6 GB): Bun sends such a body
 * chunked, without the Content-Length it is given.
 */
export async function downloadArtifact(c: Context<AppEnv>, plane: ExecutionPlane): Promise<Response> {
  for (const parameter of new Set(new URL(c.req.url).searchParams.keys())) {
    if (PARAMETERS.includes(parameter)) continue;
    const meant = didYouMeanText(parameter.slice(0, 64), PARAMETERS);
    return edgeFailure(c, { status: 400, message: `The artifact download takes id and name, and no parameter ${JSON.stringify(parameter.slice(0, 64))}.${meant ? ` ${meant}` : ""}`, context: { parameter: parameter.slice(0, 64) } });
  }
  for (const parameter of PARAMETERS) {
    const given = c.req.queries(parameter)?.length ?? 0;
    if (given > 1) return edgeFailure(c, { status: 400, message: `${parameter} is given ${given} times; give it once.`, context: { parameter } });
  }
  const id = c.req.query("id") ?? "";
  const name = c.req.query("name") ?? "";
  if (!isExecutionId(id)) {
    return edgeFailure(c, { status: 400, message: `id must be an execution id (x-<yyyymmddThhmmssZ>-<8 hex>), got ${JSON.stringify(String(id).slice(0, 80))}.`, context: { parameter: "id" } });
  }
  if (!ARTIFACT_NAME.test(name)) {
    return edgeFailure(c, { status: 400, message: `name must be one file name (no folders), got ${JSON.stringify(name.slice(0, 80))}.`, context: { parameter: "name" } });
  }
  const notFound = (message: string) =>
    edgeFailure(c, {
      status: 404,
      error_code: "not_found",
      message,
      suggestion: `List the artifacts with /api/v1/executions/artifacts?id=${id}.`,
      context: { id, name },
    });
  if (!plane.store.get(id)) {
    const notHeld = plane.whyNotHeld?.(id, "cannot serve its artifacts") ?? null;
    if (notHeld !== null) return edgeFailure(c, { status: 404, error_code: "not_found", ...notHeld });
    return notFound(`No execution ${id}.`);
  }
  // What a write cut short left (docket's own name for a file being written) is no artifact.
  if (name.startsWith(PARTIAL_ARTIFACT_PREFIX)) return notFound(`${id} has no artifact ${name}.`);
  // The folders on the way are checked too: a symlinked artifacts folder would lead outside the checkout.
  const dir = ownFolder(plane.root, id);
  if (dir === null) return notFound(`${id} has no artifact ${name}.`);
  let handle: FileHandle;
  try {
    handle = await open(join(dir, name), ARTIFACT_OPEN_FLAGS);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ELOOP") return edgeFailure(c, { status: 400, message: `Artifact ${name} of ${id} is a symbolic link; links are never served.`, context: { id, name, reason: "symlink" } });
    return notFound(`${id} has no artifact ${name}.`);
  }
  let body: Uint8Array<ArrayBuffer> | ReadableStream<Uint8Array>;
  let size: number;
  try {
    const stat = await handle.stat();
    // A link swapped in on the way after the folders were checked leads elsewhere: not served.
    if (!stat.isFile() || !openedAsArtifact(handle.fd, plane.root, id, name)) {
      await handle.close();
      return notFound(`${id} has no artifact ${name}.`);
    }
    size = stat.size;
    if (size <= plane.limits.artifact_bytes) {
      // A Buffer of its own ArrayBuffer (readFile allocates it): sent as it is, not copied.
      const data = (await handle.readFile()) as Uint8Array<ArrayBuffer>;
      await handle.close();
      body = data;
      size = data.byteLength;
    } else body = fileBody(handle, size);
  } catch (error) {
    await handle.close().catch(() => {});
    throw error;
  }
  return new Response(body, {
    status: 200,
    headers: {
      "Content-Type": "application/octet-stream",
      "Content-Disposition": contentDisposition(name),
      "Content-Length": String(size),
      "X-Content-Type-Options": "nosniff",
    },
  });
}

/**
 * The first `size` bytes of an open file as a stream, read as the client takes them; the file is
 * closed at the end, on an error, or when the client goes. A file that shrank meanwhile ends the
 * stream with an error (the client sees a body shorter than Content-Length) rather than padding it.
 */
function fileBody(handle: FileHandle, size: number): ReadableStream<Uint8Array> {
  let sent = 0;
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    void handle.close().catch(() => {});
  };
  return new ReadableStream<Uint8Array>({
    type: "bytes",
    async pull(controller) {
      try {
        if (sent >= size) {
          close();
          controller.close();
          return;
        }
        const want = Math.min(CHUNK, size - sent);
        const { bytesRead, buffer } = await handle.read(new Uint8Array(want), 0, want, sent);
        if (bytesRead === 0) throw new Error("the artifact became shorter while it was being sent");
        sent += bytesRead;
        controller.enqueue(bytesRead === want ? buffer : buffer.subarray(0, bytesRead));
      } catch (error) {
        close();
        controller.error(error);
      }
    },
    cancel() {
      close();
    },
  });
}

/**
 * `attachment` with the name twice (RFC 6266): `filename` for clients that read only it, in
 * printable ASCII (anything else, and quotes and backslashes, as "_": a header value outside
 * Latin-1 cannot even be sent), and `filename*` with every character of it, UTF-8 and
 * percent-encoded as RFC 5987 wants (encodeURIComponent leaves ' ( ) * as they are).
 */
function contentDisposition(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]|["\\]/gu, "_");
  const encoded = encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}
