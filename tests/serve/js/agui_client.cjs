// AG-UI's own client against `streamfn serve`: HttpAgent builds the RunAgentInput, parses the
// SSE stream, checks every event against the protocol's schemas and order rules, and applies
// them to its messages. Prints one JSON object.
// usage: node agui_client.cjs NODE_DIR URL KEY REQUEST_JSON
const { createRequire } = require("node:module");
const [nodeDir, url, key, requestJson] = process.argv.slice(2);
const load = createRequire(nodeDir + "/package.json");
const { HttpAgent } = load("@ag-ui/client");

async function main() {
  const request = JSON.parse(requestJson);
  const agent = new HttpAgent({
    url,
    headers: { authorization: `Bearer ${key}` },
    threadId: request.threadId,
    initialMessages: request.messages,
  });
  const out = { events: [], newMessages: [], messages: [] };
  try {
    const result = await agent.runAgent(
      { runId: request.runId, tools: request.tools || [], forwardedProps: request.forwardedProps },
      { onEvent: ({ event }) => { out.events.push(event); } },
    );
    out.newMessages = result.newMessages;
  } catch (error) {
    out.runError = String(error && error.message);
  }
  out.messages = agent.messages;
  return out;
}

const quiet = console.error;
console.error = () => {};  // the agent logs a failed run; the JSON says it
main().then(
  (out) => process.stdout.write(JSON.stringify(out)),
  (error) => {
    console.error = quiet;
    process.stdout.write(JSON.stringify({ thrown: String(error && error.stack) }));
  },
);
