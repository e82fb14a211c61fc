/** @jsxImportSource hono/jsx */
import type { LoadError } from "../../runtime/capability/registered.ts";
import { checkoutPath, shownText } from "../format.ts";

/** Capability files that did not load, with file (relative to the checkout), line and reason (docs/architecture.md); says so when there are none. */
export function LoadErrors(props: { errors: LoadError[]; root: string }) {
  if (props.errors.length === 0) return <p class="muted" data-load-errors="0">Every capability file loaded.</p>;
  return (
    <div class="table-scroll">
      <table class="table" data-load-errors={String(props.errors.length)}>
        <caption class="visually-hidden">Capability files that did not load</caption>
        <thead>
          <tr>
            <th scope="col">File</th>
            <th scope="col">Line</th>
            <th scope="col">Reason</th>
          </tr>
        </thead>
        <tbody>
          {props.errors.map((error) => (
            <tr data-load-error>
              <td class="mono wrap-anywhere" title={shownText(error.file)}>
                {checkoutPath(error.file, props.root)}
              </td>
              <td class="mono">{error.line === null ? "—" : error.column === null ? String(error.line) : `${error.line}:${error.column}`}</td>
              <td class="wrap-anywhere pre-line">{shownText(error.reason)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
