/** @jsxImportSource hono/jsx */
/**
 * Where socket.js shows its connection, by word and shape. Rendered as what is true without a
 * script: a snapshot taken when the page was served; a finished execution has nothing to follow.
 */
export function ConnectionStatus(props: { finished: boolean }) {
  return (
    <p class="connection" data-docket-connection data-state={props.finished ? "ended" : "snapshot"} role="status">
      <span class="glyph" aria-hidden="true" data-connection-shape>
        {props.finished ? "■" : "◇"}
      </span>{" "}
      <span data-connection-word>{props.finished ? "Finished — nothing more to follow" : "Snapshot — reload to update"}</span>
    </p>
  );
}
