// The AI SDK's own chat client against `streamfn serve`: DefaultChatTransport posts the body
// useChat sends and parses the response with the SDK's part schema, readUIMessageStream folds
// the parts into the UI message a React app would render. Prints one JSON object.
// usage: node ui_chat_client.cjs NODE_DIR URL KEY REQUEST_JSON
const { createRequire } = require("node:module");
const [nodeDir, url, key, requestJson] = process.argv.slice(2);
const load = createRequire(nodeDir + "/package.json");
const { DefaultChatTransport, readUIMessageStream } = load("ai");

async function main() {
  const request = JSON.parse(requestJson);
  const transport = new DefaultChatTransport({
    api: url,
    headers: { authorization: `Bearer ${key}` },
    body: request.body,
  });
  const out = { chunks: [], messages: [], errors: [] };
  let stream;
  try {
    stream = await transport.sendMessages({
      chatId: request.chatId,
      messages: request.messages,
      trigger: "submit-message",
      messageId: undefined,
      abortSignal: undefined,
    });
  } catch (error) {
    out.requestError = String(error.message);
    return out;
  }
  const [forChunks, forMessages] = stream.tee();
  const collect = (async () => {
    for await (const chunk of forChunks) out.chunks.push(chunk);
  })();
  for await (const message of readUIMessageStream({
    stream: forMessages,
    onError: (error) => out.errors.push(String(error.message)),
  })) {
    out.messages.push(message);
  }
  await collect;
  return out;
}

main().then(
  (out) => process.stdout.write(JSON.stringify(out)),
  (error) => {
    process.stdout.write(JSON.stringify({ thrown: String(error && error.stack) }));
  },
);
