// The floor's worker (http-floor.ts): answers each task (an execution id) at once, as a no-op handler does.
const thread = self as unknown as Worker;
thread.onmessage = (message: MessageEvent<string>) => thread.postMessage(message.data);
