/** @jsxImportSource hono/jsx */
import { ColouredText } from "./coloured-text.tsx";
import { shownText, streamsDroppedText } from "../format.ts";
import { STREAMS_SHOWN } from "../history-extras.ts";

/**
 * The tail of each named text stream (`ctx.progress.stream`), bounded to `limit` characters each,
 * in its colours; at most STREAMS_SHOWN streams, the ones written to last, and how many more there are.
 * A name is shown as text: its colour sequences and controls removed. `data-written`, the sequence
 * of each stream's last chunk, is what the page's script keeps the latest by.
 */
export function Streams(props: { streams: Map<string, string>; written: Map<string, number>; dropped: number; limit: number }) {
  const named = [...props.streams.entries()];
  return (
    <section class="panel" data-section="streams" hidden={named.length === 0} aria-labelledby="streams-heading">
      <h2 id="streams-heading">Streams</h2>
      <p class="muted" data-slot="streams-dropped" hidden={props.dropped === 0}>
        {streamsDroppedText(props.dropped)}
      </p>
      <div data-slot="streams" data-limit={String(props.limit)} data-shown={String(STREAMS_SHOWN)} data-dropped={String(props.dropped)}>
        {named.map(([name, text]) => (
          <div class="stream" data-stream={name} data-written={String(props.written.get(name) ?? 0)}>
            <h3 class="mono wrap-anywhere">{shownText(name)}</h3>
            <pre class="stream-text" tabindex={0} data-stream-text>
              <ColouredText text={text} />
            </pre>
          </div>
        ))}
      </div>
      <template data-template="stream">
        <div class="stream" data-stream="">
          <h3 class="mono wrap-anywhere"></h3>
          <pre class="stream-text" tabindex={0} data-stream-text></pre>
        </div>
      </template>
    </section>
  );
}
