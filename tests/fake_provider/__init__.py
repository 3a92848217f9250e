"""A fake language-model provider for luagent's tests (a test double, not a real API).

It speaks the real providers' wire formats, so a client that works against it
works against the real services:

  POST {prefix}/v1/chat/completions   OpenAI Chat Completions (and compatible servers)
  POST {prefix}/v1/responses          OpenAI Responses API
  POST {prefix}/v1/messages           Anthropic Messages
  POST {prefix}/v1/responses/compact  OpenAI's compaction: a reply step answers with one
                                      encrypted compaction item (step "compaction": its content)

Running
-------
  python3 tests/fake_provider.py           listen on 127.0.0.1, a random free port;
                                           print the port alone on the first stdout
                                           line once ready, then serve until killed
  python3 tests/fake_provider.py --self-test   check the server against itself, exit 0/1

HTTP/1.1 with keep-alive. Non-streamed bodies always carry Content-Length;
streamed bodies are `Transfer-Encoding: chunked`, `Content-Type: text/event-stream;
charset=utf-8`, flushed after every event. No request logging; clients that hang
up early are not errors.

Queues and control API
----------------------
Every provider path may be prefixed with `/q/<name>` (e.g. `/q/t7/v1/chat/completions`);
without a prefix the queue is `default`. Each queue holds scripted steps (FIFO) and
the requests it received.

  POST /_script?queue=NAME   body: a JSON array of steps (a single object is taken
                             as a one-step array), appended to that queue.
                             Answers {"queued": n}.
  GET  /_requests?queue=NAME JSON array of the requests that queue received, in order:
                             {"method", "path", "headers": {lower-case name: value},
                              "body": parsed JSON (or the raw text if not JSON),
                              "time": unix seconds float}
  POST /_reset               clears every queue and every recorded request.

(`queue` may also come from a `/q/<name>` prefix on the control path.)

Every provider request is recorded (before any fault is applied) and consumes the
next step of its queue. With no step left: status 500 with the provider's error
body and message "fake provider: no scripted response left in queue NAME".

Steps
-----
A step is a JSON object. Forms (keys may combine as noted):

1. A reply:
     {"text": "...",
      "tool_calls": [{"id": "call_1", "name": "run_python",
                      "arguments": {...} or "a raw string"}],
      "usage": {"input_tokens": 100, "output_tokens": 20, "cached_tokens": 0},
      "finish": "stop" | "length", "model": "optional", "chunk": 4}
   text may be absent or "" when there are tool calls. Tool-call ids default to
   `call_<n>` (OpenAI, both APIs) / `toolu_fake_<n>` (Anthropic), n counting the
   queue's calls from 1. Object arguments are serialized with
   json.dumps(..., separators=(",", ":")); a raw string is sent as is (so tests can
   send invalid JSON arguments). finish defaults to "stop"; a reply with tool calls
   ends with the provider's tool-call reason ("tool_calls" / "tool_use"; the
   Responses API has none: status "completed") unless finish is "length". Any other
   finish value is passed through verbatim. usage defaults to input 10, output 5,
   cached 0. The model in the answer is the step's "model", else the request's
   "model", else "fake-model". If the request has "stream": true the answer is SSE,
   else JSON. "chunk" = characters per text delta and per argument fragment when
   streaming (default 4). "headers" adds response headers to any answer.

2. An error:
     {"status": 429, "retry_after": "1", "headers": {...extra},
      "error": {"type": "...", "message": "...", "code": "..."}}
   -> that status with the provider's error body and headers (a step with "error"
   but no "status" is a 400). "retry_after" becomes a Retry-After header verbatim
   (seconds or an HTTP date). Missing error fields default by status:
     400 invalid_request_error
     401 openai: invalid_request_error / code invalid_api_key; anthropic: authentication_error
     403 permission_error
     404 not_found_error
     413 anthropic: request_too_large
     429 openai: type requests / code rate_limit_exceeded; anthropic: rate_limit_error
     500 openai: server_error; anthropic: api_error
     503 openai: server_error; anthropic: api_error
     529 anthropic: overloaded_error, message "Overloaded"; openai: server_error
     other 4xx: invalid_request_error; other 5xx: server_error / api_error
   OpenAI body (also the Responses API):
     {"error": {"message", "type", "param": null, "code"}}
   Anthropic body:
     {"type": "error", "error": {"type", "message"}, "request_id": "req_fake_<n>"}
   On 429 the providers' rate-limit headers are sent too (OpenAI:
   x-ratelimit-limit-requests, x-ratelimit-remaining-requests,
   x-ratelimit-reset-requests like "1s"; Anthropic: anthropic-ratelimit-requests-limit,
   anthropic-ratelimit-requests-remaining, anthropic-ratelimit-requests-reset as an
   RFC 3339 time) unless the step's headers override them. Errors are JSON even
   when the request asked for a stream (as the real services do).

3. A hang: {"hang": 30} -> sleep that many seconds before answering, then answer
   the rest of the step (if it is also a reply or an error) or a 200 reply with
   text "late".

4. A cut: a reply with "cut": true -> for a stream: send the first half of the
   events (at least the first event) and then part of the next event's bytes (cut
   mid-line), then close the connection without the chunked terminator. For a
   non-stream: send headers with the full Content-Length but only half the body,
   then close.

4b. A stall: a reply with "stall": N -> like a cut (headers, then the first half of
   the body or of the events), then N seconds of silence before hanging up: a
   server that answered 200 and then stopped sending.

5. Invalid JSON: {"invalid_json": true} -> 200, Content-Type: application/json, body
   `{"id": "broken", "choices": [` (non-stream); for a stream, a valid first event
   followed by `data: {"broken": ` and a normal end of stream (Chat Completions:
   `data: [DONE]`, then the chunked terminator).

6. A stream error: a reply with
     "stream_error": {"type": "overloaded_error", "message": "Overloaded"}
   -> send the first half of the reply's events then an error event, then end the
   stream normally (chunked terminator, no further events):
     Anthropic: event: error / {"type": "error", "error": {"type", "message"}}
     Responses: event: error / {"type": "error", "code": <code or type>,
                "message", "param": null, "sequence_number": n}
     Chat Completions: data: {"error": {"message", "type", "param": null, "code"}}
   Ignored when the request is not streamed.

7. Echo: {"echo": true} -> a normal reply whose text is the request body
   re-serialized with json.dumps(body, sort_keys=True).

8. A structured answer: {"json": {...}} (a reply step; "text", "usage", "finish",
   "chunk" and "tool_calls" combine with it) -> the value as the providers give a
   structured answer: Chat Completions and Responses send it as the message text
   (compact JSON; streamed in pieces like any text); Anthropic sends it as a
   tool_use block (after the step's other tool calls) of the tool the request
   forces (tool_choice {"type": "tool", "name"}), else of the step's "tool"
   name, else of the request's only tool. An Anthropic request whose answer
   tool cannot be found is a 400. (A request refused so still takes its step.)

9. A refusal: {"refusal": "I can't help with that."} (Chat Completions and
   Responses) -> the refusal instead of text, as OpenAI sends one to a structured
   request: message.content null and message.refusal (streamed as "refusal"
   deltas); Responses: a message item whose content is {"type": "refusal",
   "refusal"} (streamed as response.refusal.delta / .done).

10. Shapes the services send beside text and tool calls (reply-step keys; each
   combines with form 1):
     "usage": {"cache_write_tokens": N}   input tokens written to the cache: Chat
        prompt_tokens_details.cache_write_tokens, Responses
        input_tokens_details.cache_write_tokens, Anthropic cache_creation_input_tokens
        (Anthropic's input_tokens then leaves out both cache reads and writes)
     "delta_usage": {...}   Anthropic stream: the message_delta's usage verbatim
        (null counters allowed, as the SDK's types allow)
     "repeat_names": true   Chat stream: every tool-call delta repeats the function
        name (as some compatible servers do)
     "phase": "final_answer" | "commentary"   Responses: the phase of the reply's message
     "messages": [{"text", "phase"}]   Responses: message items of their own before the
        reply's message
     "reasoning": [{"summary", "encrypted_content"}]   Responses: reasoning items first
        in the output (streamed as output_item.added without, and .done with, its content)
     "thinking": [{"thinking", "signature"} | {"redacted": "data"}]   Anthropic: thinking
        and redacted_thinking blocks first in the content (streamed as thinking_delta
        pieces, then a signature_delta)
     "count_tokens": true   the input is counted from the request (4 characters a
        token) instead of "usage"'s; for Anthropic with prompt caching as the service
        accounts it (prompt_cache.py: cache_control breakpoints, a 20-block look-back,
        1024 tokens at least): cache_read_input_tokens, cache_creation_input_tokens
   A "finish" such as "pause_turn" or "model_context_window_exceeded" is passed
   through as the stop reason.

Structured requests are checked as the real services check them: a Chat
Completions response_format / Responses text.format of type json_schema needs a
name (a-z, A-Z, 0-9, _ and -, at most 64) and a schema whose root is an object;
with strict true every object in it needs "additionalProperties": false and
every property in "required" (a 400 naming the schema and the place otherwise,
as OpenAI words it). An Anthropic tool_choice of type "tool" must name one of
the request's tools (a 400 otherwise).

Wire details worth knowing (they follow the real services)
----------------------------------------------------------
* Chat Completions stream: first delta {"role": "assistant", "content": "",
  "refusal": null}; content deltas; per tool call a delta with index, id, type,
  function name and arguments "", then argument fragments; a chunk with an empty
  delta and the finish_reason; with stream_options.include_usage every chunk carries
  "usage": null and a last chunk has "choices": [] and the usage; then data: [DONE].
* Responses stream: event/data pairs with an increasing sequence_number from 0:
  response.created, response.in_progress, then per output item
  response.output_item.added, (message: response.content_part.added,
  response.output_text.delta..., response.output_text.done,
  response.content_part.done | function call: response.function_call_arguments.delta...,
  response.function_call_arguments.done), response.output_item.done; it ends with
  response.completed, or response.incomplete (status "incomplete",
  incomplete_details.reason "max_output_tokens") when finish is "length".
* Anthropic stream: message_start (empty content, stop_reason null, usage with the
  input counts and output_tokens 1); per block content_block_start, ping once after
  the first block start, content_block_delta (text_delta, or input_json_delta whose
  first fragment is "" as the real service sends), content_block_stop; message_delta
  with {"stop_reason", "stop_sequence": null} and the cumulative usage
  {"input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
  "output_tokens"}; message_stop. Anthropic input_tokens = input minus cached,
  cache_read_input_tokens = cached. A tool call whose raw-string arguments are not a
  JSON object is sent as {"_raw": "<string>"} input in JSON mode, and as the raw
  partial_json fragments in stream mode.

Modules
-------
  common.py     names, defaults and the small helpers (dumps, pieces, sse)
  state.py      the queues: scripted steps and recorded requests, behind one lock
  reply.py      a reply step normalised (Reply, Call), what every wire format renders
  chat.py       OpenAI Chat Completions: JSON and stream
  responses.py  OpenAI Responses API: JSON and stream
  anthropic.py  Anthropic Messages: JSON and stream
  errors.py     error answers by status, rate-limit headers, stream error events
  structured.py structured answers (step "json") and the checks of structured requests
  server.py     HTTP: the control API, routing a request to its step, hangs, cuts, stalls
  selftest.py   the --self-test
"""
