// Reads one answer of the fake provider with an official SDK, as an
// application would, and prints what it read as one JSON line:
//   node tests/sdk_read.mjs PROVIDER BASE_URL REQUEST_JSON
// PROVIDER: openai (Chat Completions), openai_responses or anthropic. A
// request with "stream": true goes through the SDK's stream helper
// (ChatCompletionStream, ResponseStream, MessageStream) and its final value.
// Printed: {text, tool_calls: [{id, name, arguments}], usage: {input_tokens,
// output_tokens, cached_tokens, cache_write_tokens}, stop}
import { createRequire } from "node:module";
const require = createRequire(new URL("./sdks/package.json", import.meta.url));
const { OpenAI } = require("openai");
const { Anthropic } = require("@anthropic-ai/sdk");

const [provider, baseURL, requestJson] = process.argv.slice(2);
const request = JSON.parse(requestJson);
const stream = request.stream === true;
delete request.stream;
delete request.stream_options;

const n = (v) => (typeof v === "number" ? v : 0);

async function chat() {
  const client = new OpenAI({ apiKey: "sk-sdk-test", baseURL, maxRetries: 0 });
  const done = stream
    ? await client.chat.completions.stream({ ...request, stream_options: { include_usage: true } }).finalChatCompletion()
    : await client.chat.completions.create(request);
  const choice = done.choices[0];
  const details = (done.usage && done.usage.prompt_tokens_details) || {};
  return {
    text: choice.message.content || null,
    tool_calls: (choice.message.tool_calls || []).map((c) => ({
      id: c.id, name: c.function.name, arguments: JSON.parse(c.function.arguments || "{}") })),
    usage: { input_tokens: n(done.usage && done.usage.prompt_tokens), output_tokens: n(done.usage && done.usage.completion_tokens),
             cached_tokens: n(details.cached_tokens), cache_write_tokens: n(details.cache_write_tokens) },
    stop: choice.finish_reason,
  };
}

async function responses() {
  const client = new OpenAI({ apiKey: "sk-sdk-test", baseURL, maxRetries: 0 });
  const done = stream ? await client.responses.stream(request).finalResponse() : await client.responses.create(request);
  const u = done.usage || {};
  const messages = done.output.filter((i) => i.type === "message");
  return {
    // the SDK joins every output_text; per item, and with the phase, for the comparison
    text: done.output_text || null,
    items: messages.map((m) => ({ phase: m.phase || null,
                                  text: m.content.filter((p) => p.type === "output_text").map((p) => p.text).join("") })),
    reasoning: done.output.filter((i) => i.type === "reasoning").map((i) => i.encrypted_content || null),
    tool_calls: done.output.filter((i) => i.type === "function_call").map((c) => ({
      id: c.call_id, name: c.name, arguments: JSON.parse(c.arguments || "{}") })),
    // the API's own tools' calls (apply_patch, shell), as the SDK types them
    native_calls: done.output.filter((i) => i.type === "apply_patch_call" || i.type === "shell_call").map((c) => ({
      type: c.type, id: c.call_id, status: c.status, operation: c.operation || null, action: c.action || null })),
    usage: { input_tokens: n(u.input_tokens), output_tokens: n(u.output_tokens),
             cached_tokens: n(u.input_tokens_details && u.input_tokens_details.cached_tokens),
             cache_write_tokens: n(u.input_tokens_details && u.input_tokens_details.cache_write_tokens) },
    stop: done.status,
  };
}

async function anthropic() {
  const client = new Anthropic({ apiKey: "sk-sdk-test", baseURL, maxRetries: 0 });
  const done = stream ? await client.messages.stream(request).finalMessage() : await client.messages.create(request);
  const u = done.usage || {};
  const read = n(u.cache_read_input_tokens), written = n(u.cache_creation_input_tokens);
  return {
    text: done.content.filter((b) => b.type === "text").map((b) => b.text).join("") || null,
    thinking: done.content.filter((b) => b.type === "thinking" || b.type === "redacted_thinking")
      .map((b) => (b.type === "thinking" ? { thinking: b.thinking, signature: b.signature } : { redacted: b.data })),
    tool_calls: done.content.filter((b) => b.type === "tool_use").map((b) => ({ id: b.id, name: b.name, arguments: b.input })),
    usage: { input_tokens: n(u.input_tokens) + read + written, output_tokens: n(u.output_tokens),
             cached_tokens: read, cache_write_tokens: written },
    stop: done.stop_reason,
  };
}

const read = { openai: chat, openai_responses: responses, anthropic }[provider];
read().then((v) => { process.stdout.write(JSON.stringify(v) + "\n"); },
            (e) => { process.stdout.write(JSON.stringify({ error: String(e && e.message || e) }) + "\n"); process.exit(1); });
