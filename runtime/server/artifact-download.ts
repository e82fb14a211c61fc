import { constants } from "node:fs";
import { lstat, open } from "node:fs/promises";
import { join } from "node:path";
import type { Context } from "hono";
import type { ExecutionPlane } from "../execution/plane.ts";
import { isExecutionId } from "../execution/execution-id.ts";
import { artifactsDir, PARTIAL_ARTIFACT_PREFIX } from "../execution/artifact-files.ts";
import type { AppEnv } from "./_app-env.ts";
import { edgeFailure } from "./errors.ts";

/** An artifact name is one plain path segment: no separators, no `.`/`..`, no control characters. */
const ARTIFACT_NAME = /^(?!\.{1,2}$)[^/\\\u0000-\u001f]{1,255}$/;

/**
 * `GET /api/v1/executions/artifact?id=&name=`: downloads one file of an execution's managed output
 * folder. The id is checked by shape, the name is one segment, and symlinks are refused (the file
 * is opened with O_NOFOLLOW, so a link swapped in after a check cannot be followed either).
 */
export async function downloadArtifact(c: Context<AppEnv>, plane: ExecutionPlane): Promise<Response> {
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
  if (!plane.store.get(id)) return notFound(`No execution ${id}.`);
  // What a write cut short left (docket's own name for a file being written) is no artifact.
  if (name.startsWith(PARTIAL_ARTIFACT_PREFIX)) return notFound(`${id} has no artifact ${name}.`);
  const dir = artifactsDir(plane.root, id);
  // The folders on the way are checked too: a symlinked artifacts folder would lead outside the checkout.
  for (const folder of [join(plane.root, ".docket"), join(plane.root, ".docket", "artifacts"), dir]) {
    const stat = await lstat(folder).catch(() => null);
    if (!stat || !stat.isDirectory()) return notFound(`${id} has no artifact ${name}.`);
  }
  let handle;
  try {
    handle = await open(join(dir, name), constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ELOOP") return edgeFailure(c, { status: 400, message: `Artifact ${name} of ${id} is a symbolic link; links are never served.`, context: { id, name, reason: "symlink" } });
    return notFound(`${id} has no artifact ${name}.`);
  }
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) return notFound(`${id} has no artifact ${name}.`);
    const data = await handle.readFile();
    return new Response(data, {
      status: 200,
      headers: {
        "Content-Type": "application/octet-stream",
        "Content-Disposition": contentDisposition(name),
        "Content-Length": String(data.byteLength),
        "X-Content-Type-Options": "nosniff",
      },
    });
  } finally {
    await handle.close();
  }
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
