// webhook.notify: a `write` capability with a secret. The token is marked sensitive(): docket
// replaces it with "[redacted]" in everything it stores or shows, and in any text the run
// produces; the handler alone sees the real value. See examples/README.md.
import { capability, CapabilityError, sensitive } from "docket";
import * as v from "valibot";

export default capability({
  id: "webhook.notify",
  title: "Notify a webhook",
  description: "POSTs {\"text\": …} as JSON to a webhook (Slack-compatible) with a bearer token, and answers the webhook's status.",
  effect: "write",
  timeout_ms: 30_000,
  errors: ["webhook_refused", "webhook_unreachable"],
  input: v.object({
    url: v.pipe(v.string(), v.url(), v.description("The webhook's URL.")),
    token: sensitive(v.pipe(v.string(), v.minLength(8), v.description("The webhook's bearer token."))),
    text: v.pipe(v.string(), v.minLength(1), v.maxLength(4000), v.description("The message.")),
  }),
  output: v.object({ status: v.number(), delivered_at: v.string() }),
  async handler(input, ctx) {
    const target = new URL(input.url);
    ctx.progress.step("post", `POST to ${target.origin}`);
    let response: Response;
    try {
      response = await fetch(target, {
        method: "POST",
        headers: { authorization: `Bearer ${input.token}`, "content-type": "application/json" },
        body: JSON.stringify({ text: input.text }),
        // Cancel and the deadline (timeout_ms) abort the request.
        signal: ctx.signal,
      });
    } catch (error) {
      if (ctx.signal.aborted) throw error;
      throw new CapabilityError("webhook_unreachable", `Cannot reach ${target.origin}: ${(error as Error).message}`, {
        retryability: "after_delay",
        suggestion: "Check the URL and the network, then run it again.",
      });
    }
    ctx.progress.stepDone("post", response.ok, `${response.status} ${response.statusText}`);
    if (!response.ok) {
      // The body is the upstream's, not ours: it is not passed on (it may echo what we sent).
      throw new CapabilityError("webhook_refused", `${target.origin} answered ${response.status} ${response.statusText}.`, {
        context: { status: response.status },
        retryability: response.status >= 500 ? "after_delay" : "never",
        suggestion: response.status === 401 || response.status === 403 ? "Check the token." : "Check the URL and the message.",
      });
    }
    return { status: response.status, delivered_at: new Date().toISOString() };
  },
});
