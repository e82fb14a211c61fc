/** @jsxImportSource hono/jsx */
import { ColouredText } from "./coloured-text.tsx";

/** The tail of each named text stream (`ctx.progress.stream`), bounded to `limit` characters each, in its colours. */
export function Streams(props: { streams: Map<string, string>; limit: number }) {
  const named = [...props.streams.entries()];
  return (
    <section class="panel" data-section="streams" hidden={named.length === 0} aria-labelledby="streams-heading">
      <h2 id="streams-heading">Streams</h2>
      <div data-slot="streams" data-limit={String(props.limit)}>
        {named.map(([name, text]) => (
          <div class="stream" data-stream={name}>
            <h3 class="mono wrap-anywhere">{name}</h3>
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
