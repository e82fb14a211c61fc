/** @jsxImportSource hono/jsx */
import type { ExecutionSnapshot } from "../../runtime/execution/snapshot.ts";
import type { ArtifactInfo } from "../../runtime/execution/plane.ts";
import { isTerminal } from "../../runtime/execution/state-machine.ts";
import { formatBytes, shownText } from "../format.ts";
import { artifactDownloadPath, releasePath } from "../paths.ts";

/** Why the artifacts cannot be released now, in words; null when they can. The engine decides again on release. */
export function releaseRefusal(x: Pick<ExecutionSnapshot, "state" | "failure" | "reconciliation">): string | null {
  if (!isTerminal(x.state)) return "They can be released once the execution has ended.";
  if (x.failure?.outcome_certainty === "unknown" && !x.reconciliation) {
    return "The outcome is unknown, so they are kept as evidence until someone settles it.";
  }
  return null;
}

/**
 * The files an execution wrote to its managed output folder: name, size, SHA-256, a download
 * link, and Release (delete them) behind an explicit confirmation, or the reason it is refused.
 */
export function ArtifactsPanel(props: { execution: ExecutionSnapshot; artifacts: ArtifactInfo[] }) {
  const x = props.execution;
  const refusal = releaseRefusal(x);
  return (
    <section class="panel" aria-labelledby="artifacts-heading" data-section="artifacts" hidden={props.artifacts.length === 0}>
      <h2 id="artifacts-heading">Artifacts</h2>
      <div class="table-scroll">
        <table class="table artifacts">
          <caption class="visually-hidden">Files this execution wrote</caption>
          <thead>
            <tr>
              <th scope="col">File</th>
              <th scope="col">Size</th>
              <th scope="col">SHA-256</th>
            </tr>
          </thead>
          <tbody data-slot="artifacts">
            {props.artifacts.map((a) => (
              <tr data-artifact={a.name}>
                <td>
                  <a href={artifactDownloadPath(x.id, a.name)} download={shownText(a.name)} class="mono wrap-anywhere">
                    {shownText(a.name)}
                  </a>
                </td>
                <td class="nowrap">{formatBytes(a.bytes)}</td>
                <td>
                  {a.sha256 === null ? (
                    <span class="muted small" data-field="sha256" title="Larger than artifact_bytes: not written by ctx.artifacts.write, and not hashed">
                      not hashed
                    </span>
                  ) : (
                    <code class="wrap-anywhere small" data-field="sha256">
                      {a.sha256}
                    </code>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {refusal ? (
        <p class="muted small" data-slot="release-refused">
          {`Release: ${refusal}`}
        </p>
      ) : (
        <form method="post" action={releasePath(x.id)} class="release-form" data-slot="release">
          <label class="checkbox">
            <input type="checkbox" name="confirmed" value="1" required />
            <span>{`Delete these ${props.artifacts.length} file(s) for good`}</span>
          </label>
          <button type="submit" class="button button-danger">
            Release
          </button>
        </form>
      )}
    </section>
  );
}
