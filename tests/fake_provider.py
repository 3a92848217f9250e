#!/usr/bin/env python3
"""A fake language-model provider for luagent's tests (a test double, not a real API).

It speaks the real providers' wire formats, so a client that works against it
works against the real services:

  POST {prefix}/v1/chat/completions   OpenAI Chat Completions (and compatible servers)
  POST {prefix}/v1/responses          OpenAI Responses API
  POST {prefix}/v1/messages           Anthropic Messages

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
"""
import http.client
import itertools
import json
import socket
import sys
import threading
import time
import urllib.request
from collections import deque
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

# ---------------------------------------------------------------------------
# Constants

NAME = "fake provider"
HOST = "127.0.0.1"
DEFAULT_QUEUE = "default"
DEFAULT_MODEL = "fake-model"
DEFAULT_CHUNK = 4
DEFAULT_FINISH = "stop"
DEFAULT_USAGE = {"input_tokens": 10, "output_tokens": 5, "cached_tokens": 0}
DEFAULT_TOOL_NAME = "tool"
LATE_TEXT = "late"
FINGERPRINT = "fp_fake"
INVALID_JSON_BODY = b'{"id": "broken", "choices": ['
INVALID_JSON_EVENT = b'data: {"broken": \n\n'
SSE_CONTENT_TYPE = "text/event-stream; charset=utf-8"
JSON_CONTENT_TYPE = "application/json"
HANGUP_ERRORS = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError)

CHAT, RESPONSES, ANTHROPIC = "chat", "responses", "anthropic"
PROVIDER_PATHS = {
    "/v1/chat/completions": CHAT,
    "/v1/responses": RESPONSES,
    "/v1/messages": ANTHROPIC,
}

# status -> (type, code, message) for the OpenAI error form (Chat and Responses).
OPENAI_ERRORS = {
    400: ("invalid_request_error", None, "fake provider: invalid request"),
    401: ("invalid_request_error", "invalid_api_key", "fake provider: incorrect API key provided"),
    403: ("permission_error", None, "fake provider: permission denied"),
    404: ("not_found_error", None, "fake provider: not found"),
    429: ("requests", "rate_limit_exceeded", "fake provider: rate limit reached for requests"),
    500: ("server_error", None, "fake provider: the server had an error while processing your request"),
    503: ("server_error", None, "fake provider: the engine is currently overloaded"),
}
OPENAI_ERROR_4XX = ("invalid_request_error", None, "fake provider: request failed")
OPENAI_ERROR_5XX = ("server_error", None, "fake provider: server error")

# status -> (type, message) for the Anthropic error form.
ANTHROPIC_ERRORS = {
    400: ("invalid_request_error", "fake provider: invalid request"),
    401: ("authentication_error", "fake provider: invalid x-api-key"),
    403: ("permission_error", "fake provider: permission denied"),
    404: ("not_found_error", "fake provider: not found"),
    413: ("request_too_large", "fake provider: request exceeds the maximum allowed size"),
    429: ("rate_limit_error", "fake provider: rate limit exceeded"),
    500: ("api_error", "fake provider: internal server error"),
    503: ("api_error", "fake provider: service unavailable"),
    529: ("overloaded_error", "Overloaded"),
}
ANTHROPIC_ERROR_4XX = ("invalid_request_error", "fake provider: request failed")
ANTHROPIC_ERROR_5XX = ("api_error", "fake provider: internal server error")

OPENAI_RATELIMIT = {"limit": "500", "remaining": "0", "reset": "1s"}
ANTHROPIC_RATELIMIT = {"limit": "50", "remaining": "0", "reset_seconds": 1}

CHAT_FINISH = {"stop": "stop", "length": "length", "tool": "tool_calls"}
ANTHROPIC_STOP = {"stop": "end_turn", "length": "max_tokens", "tool": "tool_use"}

# ---------------------------------------------------------------------------
# State: queues of steps and recorded requests


class Queue:
    def __init__(self):
        self.steps = deque()
        self.requests = []
        self.calls = itertools.count(1)


class Store:
    """All queues, behind one lock; ids count up until /_reset."""

    def __init__(self):
        self.lock = threading.Lock()
        self.reset()

    def reset(self):
        with self.lock:
            self.queues = {}
            self.ids = itertools.count(1)

    def _queue(self, name):
        q = self.queues.get(name)
        if q is None:
            q = self.queues[name] = Queue()
        return q

    def script(self, name, steps):
        with self.lock:
            self._queue(name).steps.extend(steps)
            return len(steps)

    def record(self, name, request):
        with self.lock:
            self._queue(name).requests.append(request)

    def requests(self, name):
        with self.lock:
            return list(self._queue(name).requests)

    def pop(self, name):
        with self.lock:
            q = self._queue(name)
            return q.steps.popleft() if q.steps else None

    def next_id(self):
        with self.lock:
            return next(self.ids)

    def next_call(self, name):
        with self.lock:
            return next(self._queue(name).calls)


STORE = Store()

# ---------------------------------------------------------------------------
# Small helpers


def dumps(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def pieces(s, n):
    """s in pieces of n characters (the whole string if n < 1; none if s is empty)."""
    if not s:
        return []
    if n < 1:
        return [s]
    return [s[i:i + n] for i in range(0, len(s), n)]


def sse(data, event=None):
    """One server-sent event: optional `event:` line, a `data:` line, a blank line."""
    head = "event: %s\n" % event if event else ""
    payload = data if isinstance(data, str) else dumps(data)
    return ("%sdata: %s\n\n" % (head, payload)).encode("utf-8")


def rfc3339(seconds_from_now):
    t = datetime.now(timezone.utc) + timedelta(seconds=seconds_from_now)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


# ---------------------------------------------------------------------------
# A reply step, normalised


class Call:
    def __init__(self, spec, n):
        self.name = spec.get("name", DEFAULT_TOOL_NAME)
        given = spec.get("id")
        self.openai_id = given or "call_%d" % n
        self.anthropic_id = given or "toolu_fake_%d" % n
        self.item_id = "fc_fake_%d" % STORE.next_id()
        args = spec.get("arguments", {})
        if isinstance(args, str):
            self.arguments = args
            try:
                parsed = json.loads(args)
            except ValueError:
                parsed = None
        else:
            self.arguments = json.dumps(args, separators=(",", ":"))
            parsed = args
        self.input = parsed if isinstance(parsed, dict) else None

    def anthropic_input(self):
        return self.input if self.input is not None else {"_raw": self.arguments}


class Reply:
    def __init__(self, step, body, queue, late=False):
        request = body if isinstance(body, dict) else {}
        self.request = request
        self.n = STORE.next_id()
        self.msg_id = "msg_fake_%d" % self.n
        self.created = int(time.time())
        if step.get("echo"):
            self.text = json.dumps(body, sort_keys=True)
        elif late:
            self.text = LATE_TEXT
        else:
            self.text = step.get("text") or ""
        self.calls = [Call(c, STORE.next_call(queue)) for c in step.get("tool_calls") or []]
        usage = dict(DEFAULT_USAGE)
        usage.update(step.get("usage") or {})
        self.input_tokens = int(usage["input_tokens"])
        self.output_tokens = int(usage["output_tokens"])
        self.cached_tokens = int(usage["cached_tokens"])
        finish = step.get("finish") or DEFAULT_FINISH
        self.finish = "tool" if self.calls and finish == DEFAULT_FINISH else finish
        self.model = step.get("model") or request.get("model") or DEFAULT_MODEL
        self.chunk = int(step.get("chunk", DEFAULT_CHUNK))
        self.refusal = step.get("refusal")

    @property
    def has_text_block(self):
        return bool(self.text) or not self.calls


# ---------------------------------------------------------------------------
# OpenAI Chat Completions


def chat_finish(reply):
    return CHAT_FINISH.get(reply.finish, reply.finish)


def chat_usage(reply):
    return {
        "prompt_tokens": reply.input_tokens,
        "completion_tokens": reply.output_tokens,
        "total_tokens": reply.input_tokens + reply.output_tokens,
        "prompt_tokens_details": {"cached_tokens": reply.cached_tokens, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def chat_tool_call(call):
    return {"id": call.openai_id, "type": "function",
            "function": {"name": call.name, "arguments": call.arguments}}


def chat_message(reply):
    content = reply.text if reply.text or not reply.calls else None
    if reply.refusal:
        content = None
    message = {"role": "assistant", "content": content, "refusal": reply.refusal, "annotations": []}
    if reply.calls:
        message["tool_calls"] = [chat_tool_call(c) for c in reply.calls]
    return message


def chat_id(reply):
    return "chatcmpl-fake-%d" % reply.n


def chat_json(reply):
    return {
        "id": chat_id(reply),
        "object": "chat.completion",
        "created": reply.created,
        "model": reply.model,
        "choices": [{"index": 0, "message": chat_message(reply), "logprobs": None,
                     "finish_reason": chat_finish(reply)}],
        "usage": chat_usage(reply),
        "service_tier": "default",
        "system_fingerprint": FINGERPRINT,
    }


def chat_chunk(reply, choices, include_usage, usage=None):
    chunk = {
        "id": chat_id(reply),
        "object": "chat.completion.chunk",
        "created": reply.created,
        "model": reply.model,
        "service_tier": "default",
        "system_fingerprint": FINGERPRINT,
        "choices": choices,
    }
    if include_usage:
        chunk["usage"] = usage
    return chunk


def chat_choice(delta, finish=None):
    return {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}


def chat_stream(reply):
    opts = reply.request.get("stream_options")
    include_usage = isinstance(opts, dict) and opts.get("include_usage") is True

    def event(delta, finish=None):
        return sse(chat_chunk(reply, [chat_choice(delta, finish)], include_usage))

    events = [event({"role": "assistant", "content": "", "refusal": None})]
    if reply.refusal:
        events += [event({"refusal": p}) for p in pieces(reply.refusal, reply.chunk)]
    else:
        events += [event({"content": p}) for p in pieces(reply.text, reply.chunk)]
    for i, call in enumerate(reply.calls):
        events.append(event({"tool_calls": [{
            "index": i, "id": call.openai_id, "type": "function",
            "function": {"name": call.name, "arguments": ""}}]}))
        events += [event({"tool_calls": [{"index": i, "function": {"arguments": p}}]})
                   for p in pieces(call.arguments, reply.chunk)]
    events.append(event({}, chat_finish(reply)))
    if include_usage:
        events.append(sse(chat_chunk(reply, [], True, chat_usage(reply))))
    events.append(sse("[DONE]"))
    return events


# ---------------------------------------------------------------------------
# OpenAI Responses API


def responses_usage(reply):
    return {
        "input_tokens": reply.input_tokens,
        "input_tokens_details": {"cached_tokens": reply.cached_tokens},
        "output_tokens": reply.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": reply.input_tokens + reply.output_tokens,
    }


def responses_text_part(text):
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def responses_refusal_part(text):
    return {"type": "refusal", "refusal": text}


def responses_message_item(reply, status="completed", content=None):
    if content is None and reply.refusal:
        content = [responses_refusal_part(reply.refusal)]
    if content is None:
        content = [responses_text_part(reply.text)]
    return {"type": "message", "id": reply.msg_id, "status": status,
            "role": "assistant", "content": content}


def responses_call_item(call, status="completed", arguments=None):
    return {"type": "function_call", "id": call.item_id, "call_id": call.openai_id,
            "name": call.name,
            "arguments": call.arguments if arguments is None else arguments,
            "status": status}


def responses_output(reply):
    output = [responses_message_item(reply)] if reply.has_text_block else []
    return output + [responses_call_item(c) for c in reply.calls]


def responses_status(reply):
    if reply.finish == "length":
        return "incomplete", {"reason": "max_output_tokens"}
    return "completed", None


def responses_object(reply, status, incomplete=None, output=None, usage=None):
    req = reply.request
    return {
        "id": "resp_fake_%d" % reply.n,
        "object": "response",
        "created_at": reply.created,
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": incomplete,
        "instructions": req.get("instructions"),
        "max_output_tokens": req.get("max_output_tokens"),
        "max_tool_calls": req.get("max_tool_calls"),
        "model": reply.model,
        "output": output if output is not None else [],
        "parallel_tool_calls": req.get("parallel_tool_calls", True),
        "previous_response_id": req.get("previous_response_id"),
        "reasoning": {"effort": None, "summary": None},
        "service_tier": "default",
        "store": req.get("store", True),
        "temperature": req.get("temperature", 1.0),
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": req.get("tool_choice", "auto"),
        "tools": req.get("tools", []),
        "top_logprobs": 0,
        "top_p": req.get("top_p", 1.0),
        "truncation": req.get("truncation", "disabled"),
        "usage": usage,
        "user": None,
        "metadata": req.get("metadata") or {},
    }


def responses_json(reply):
    status, incomplete = responses_status(reply)
    return responses_object(reply, status, incomplete, responses_output(reply),
                            responses_usage(reply))


def responses_message_events(reply, index):
    """(type, fields) pairs for one streamed message item."""
    ids = {"item_id": reply.msg_id, "output_index": index, "content_index": 0}
    if reply.refusal:
        return [
            ("response.output_item.added",
             {"output_index": index, "item": responses_message_item(reply, "in_progress", [])}),
            ("response.content_part.added", dict(ids, part=responses_refusal_part(""))),
        ] + [("response.refusal.delta", dict(ids, delta=p)) for p in pieces(reply.refusal, reply.chunk)] + [
            ("response.refusal.done", dict(ids, refusal=reply.refusal)),
            ("response.content_part.done", dict(ids, part=responses_refusal_part(reply.refusal))),
            ("response.output_item.done", {"output_index": index, "item": responses_message_item(reply)}),
        ]
    events = [
        ("response.output_item.added",
         {"output_index": index,
          "item": responses_message_item(reply, "in_progress", [])}),
        ("response.content_part.added", dict(ids, part=responses_text_part(""))),
    ]
    events += [("response.output_text.delta", dict(ids, delta=p, logprobs=[]))
               for p in pieces(reply.text, reply.chunk)]
    events += [
        ("response.output_text.done", dict(ids, text=reply.text, logprobs=[])),
        ("response.content_part.done", dict(ids, part=responses_text_part(reply.text))),
        ("response.output_item.done",
         {"output_index": index, "item": responses_message_item(reply)}),
    ]
    return events


def responses_call_events(reply, call, index):
    """(type, fields) pairs for one streamed function-call item."""
    ids = {"item_id": call.item_id, "output_index": index}
    events = [("response.output_item.added",
               {"output_index": index,
                "item": responses_call_item(call, "in_progress", "")})]
    events += [("response.function_call_arguments.delta", dict(ids, delta=p))
               for p in pieces(call.arguments, reply.chunk)]
    events += [
        ("response.function_call_arguments.done",
         dict(ids, name=call.name, arguments=call.arguments)),
        ("response.output_item.done",
         {"output_index": index, "item": responses_call_item(call)}),
    ]
    return events


def responses_event(kind, fields, seq):
    data = {"type": kind}
    data.update(fields)
    data["sequence_number"] = seq
    return sse(data, kind)


def responses_stream(reply):
    started = responses_object(reply, "in_progress")
    pairs = [("response.created", {"response": started}),
             ("response.in_progress", {"response": started})]
    index = 0
    if reply.has_text_block:
        pairs += responses_message_events(reply, index)
        index += 1
    for call in reply.calls:
        pairs += responses_call_events(reply, call, index)
        index += 1
    status, _ = responses_status(reply)
    final = "response.completed" if status == "completed" else "response.incomplete"
    pairs.append((final, {"response": responses_json(reply)}))
    return [responses_event(kind, fields, seq) for seq, (kind, fields) in enumerate(pairs)]


# ---------------------------------------------------------------------------
# Anthropic Messages


def anthropic_stop(reply):
    return ANTHROPIC_STOP.get(reply.finish, reply.finish)


def anthropic_usage(reply, output_tokens):
    return {
        "input_tokens": max(0, reply.input_tokens - reply.cached_tokens),
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": reply.cached_tokens,
        "output_tokens": output_tokens,
    }


def anthropic_content(reply):
    blocks = [{"type": "text", "text": reply.text}] if reply.has_text_block else []
    return blocks + [{"type": "tool_use", "id": c.anthropic_id, "name": c.name,
                      "input": c.anthropic_input()} for c in reply.calls]


def anthropic_message(reply, content, stop_reason, usage):
    return {
        "id": reply.msg_id,
        "type": "message",
        "role": "assistant",
        "model": reply.model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage,
    }


def anthropic_json(reply):
    return anthropic_message(reply, anthropic_content(reply), anthropic_stop(reply),
                             anthropic_usage(reply, reply.output_tokens))


def anthropic_event(kind, fields=None):
    data = {"type": kind}
    data.update(fields or {})
    return sse(data, kind)


def anthropic_blocks(reply):
    """(start block, [delta, ...]) per content block, in order."""
    blocks = []
    if reply.has_text_block:
        blocks.append(({"type": "text", "text": ""},
                       [{"type": "text_delta", "text": p}
                        for p in pieces(reply.text, reply.chunk)]))
    for call in reply.calls:
        fragments = [""] + pieces(call.arguments, reply.chunk)
        blocks.append(({"type": "tool_use", "id": call.anthropic_id, "name": call.name,
                        "input": {}},
                       [{"type": "input_json_delta", "partial_json": p} for p in fragments]))
    return blocks


def anthropic_stream(reply):
    events = [anthropic_event("message_start", {"message": anthropic_message(
        reply, [], None, anthropic_usage(reply, 1))})]
    for index, (start, deltas) in enumerate(anthropic_blocks(reply)):
        events.append(anthropic_event("content_block_start",
                                      {"index": index, "content_block": start}))
        if index == 0:
            events.append(anthropic_event("ping"))
        events += [anthropic_event("content_block_delta", {"index": index, "delta": d})
                   for d in deltas]
        events.append(anthropic_event("content_block_stop", {"index": index}))
    events.append(anthropic_event("message_delta", {
        "delta": {"stop_reason": anthropic_stop(reply), "stop_sequence": None},
        "usage": anthropic_usage(reply, reply.output_tokens)}))
    events.append(anthropic_event("message_stop"))
    return events


# ---------------------------------------------------------------------------
# Errors


def openai_error(status, err):
    etype, code, message = OPENAI_ERRORS.get(
        status, OPENAI_ERROR_4XX if status < 500 else OPENAI_ERROR_5XX)
    return {"error": {"message": err.get("message", message),
                      "type": err.get("type", etype),
                      "param": err.get("param"),
                      "code": err.get("code", code)}}


def anthropic_error(status, err, request_id):
    etype, message = ANTHROPIC_ERRORS.get(
        status, ANTHROPIC_ERROR_4XX if status < 500 else ANTHROPIC_ERROR_5XX)
    return {"type": "error",
            "error": {"type": err.get("type", etype), "message": err.get("message", message)},
            "request_id": request_id}


def ratelimit_headers(provider):
    if provider == ANTHROPIC:
        rl = ANTHROPIC_RATELIMIT
        return {"anthropic-ratelimit-requests-limit": rl["limit"],
                "anthropic-ratelimit-requests-remaining": rl["remaining"],
                "anthropic-ratelimit-requests-reset": rfc3339(rl["reset_seconds"])}
    rl = OPENAI_RATELIMIT
    return {"x-ratelimit-limit-requests": rl["limit"],
            "x-ratelimit-remaining-requests": rl["remaining"],
            "x-ratelimit-reset-requests": rl["reset"]}


def stream_error_event(provider, err, seq):
    etype = err.get("type", "api_error" if provider == ANTHROPIC else "server_error")
    message = err.get("message", "fake provider: stream error")
    if provider == ANTHROPIC:
        return sse({"type": "error", "error": {"type": etype, "message": message}}, "error")
    if provider == RESPONSES:
        return sse({"type": "error", "code": err.get("code", etype), "message": message,
                    "param": None, "sequence_number": seq}, "error")
    return sse({"error": {"message": message, "type": etype, "param": None,
                          "code": err.get("code")}})


RENDER_JSON = {CHAT: chat_json, RESPONSES: responses_json, ANTHROPIC: anthropic_json}
RENDER_STREAM = {CHAT: chat_stream, RESPONSES: responses_stream, ANTHROPIC: anthropic_stream}

# ---------------------------------------------------------------------------
# Request routing


def split_queue(path):
    """'/q/NAME/rest' -> ('NAME', '/rest'); anything else -> (None, path)."""
    if path.startswith("/q/"):
        name, _, rest = path[3:].partition("/")
        if name:
            return name, "/" + rest
    return None, path


def parse_body(raw):
    text = raw.decode("utf-8", "replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


def is_error_step(step):
    return "error" in step or int(step.get("status", 200)) >= 400


def is_reply_step(step):
    return any(k in step for k in ("text", "tool_calls", "echo", "usage", "finish", "model", "json",
                                   "refusal"))


# ---------------------------------------------------------------------------
# Structured answers (step "json") and the checks of structured requests

SCHEMA_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


def openai_format(provider, body):
    """The json_schema format a Chat Completions or Responses request asks for, or None."""
    if not isinstance(body, dict):
        return None
    if provider == CHAT:
        rf = body.get("response_format")
        if isinstance(rf, dict) and rf.get("type") == "json_schema":
            return rf.get("json_schema") if isinstance(rf.get("json_schema"), dict) else {}
    elif provider == RESPONSES:
        text = body.get("text")
        fmt = text.get("format") if isinstance(text, dict) else None
        if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
            return fmt
    return None


def strict_problem(schema, context=()):
    """Where a strict schema breaks OpenAI's rules, as its 400 message words it, or None."""
    if not isinstance(schema, dict):
        return None
    is_object = schema.get("type") == "object" or "properties" in schema
    if is_object:
        if schema.get("additionalProperties") is not False:
            return ("In context=%s, 'additionalProperties' is required to be supplied and to be false."
                    % (context,))
        props = schema.get("properties") or {}
        missing = [k for k in props if k not in (schema.get("required") or [])]
        if missing:
            return ("In context=%s, 'required' is required to be supplied and to be an array including "
                    "every key in properties. Missing '%s'." % (context, missing[0]))
    for key in ("properties", "$defs", "definitions"):
        for name, sub in (schema.get(key) or {}).items():
            found = strict_problem(sub, context + (key, name))
            if found:
                return found
    for i, sub in enumerate(schema.get("anyOf") or []):
        found = strict_problem(sub, context + ("anyOf", str(i)))
        if found:
            return found
    if "items" in schema:
        return strict_problem(schema["items"], context + ("items",))
    return None


def structured_request_error(provider, body):
    """The 400 message a structured request gets from the real service, or None."""
    if provider == ANTHROPIC:
        choice = body.get("tool_choice") if isinstance(body, dict) else None
        if isinstance(choice, dict) and choice.get("type") == "tool":
            names = [t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)]
            if choice.get("name") not in names:
                return "tool_choice.name: tool '%s' was not found in tools" % choice.get("name")
        return None
    fmt = openai_format(provider, body)
    if fmt is None:
        return None
    name = fmt.get("name")
    where = "response_format" if provider == CHAT else "text.format"
    if not isinstance(name, str) or not name or len(name) > 64 or not set(name) <= SCHEMA_NAME_CHARS:
        return "Invalid '%s.name': must match the pattern ^[a-zA-Z0-9_-]{1,64}$." % where
    schema = fmt.get("schema")
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return "Invalid schema for %s '%s': schema must be a JSON Schema of 'type: \"object\"'." % (where, name)
    if fmt.get("strict") is True:
        problem = strict_problem(schema)
        if problem:
            return "Invalid schema for %s '%s': %s" % (where, name, problem)
    return None


def anthropic_answer_tool(step, body):
    """The tool a structured answer is a call of, in an Anthropic request, or None."""
    choice = body.get("tool_choice") if isinstance(body, dict) else None
    if isinstance(choice, dict) and choice.get("type") == "tool":
        return choice.get("name")
    if step.get("tool"):
        return step["tool"]
    tools = body.get("tools") if isinstance(body, dict) else None
    if isinstance(tools, list) and len(tools) == 1 and isinstance(tools[0], dict):
        return tools[0].get("name")
    return None


def add_structured_answer(provider, step, body, reply, queue):
    """Puts a step's "json" value into the reply; an error message when it cannot."""
    value = step["json"]
    if provider != ANTHROPIC:
        reply.text = dumps(value)
        return None
    name = anthropic_answer_tool(step, body)
    if not name:
        return ("%s: a json step needs a forced tool_choice, a \"tool\" name or a request with one tool"
                % NAME)
    reply.calls.append(Call({"name": name, "arguments": value}, STORE.next_call(queue)))
    if reply.finish == DEFAULT_FINISH:
        reply.finish = "tool"
    return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        # headers and body go out in separate writes: without this, Nagle's
        # algorithm and delayed ACKs add ~40 ms to every kept-alive request
        if self.connection.family in (socket.AF_INET, socket.AF_INET6):
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    server_version = "FakeProvider/1.0"

    def version_string(self):
        return self.server_version

    def log_message(self, *args):
        pass

    # -- I/O -----------------------------------------------------------------

    def _read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def _head(self, status, headers):
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, str(v))
        self.end_headers()

    def _send(self, status, body, headers=None, ctype=JSON_CONTENT_TYPE, cut=False, stall=0):
        if not isinstance(body, bytes):
            body = dumps(body).encode("utf-8")
        all_headers = {"Content-Type": ctype, "Content-Length": str(len(body))}
        all_headers.update(headers or {})
        self._head(status, all_headers)
        if cut or stall:
            self.wfile.write(body[:len(body) // 2])
            self.wfile.flush()
            time.sleep(stall)
            self._hang_up()
        else:
            self.wfile.write(body)

    def _hang_up(self):
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _stream(self, events, headers, tail=(), cut_after=None, stall=0):
        """Send events as a chunked SSE body; cut_after=k sends k events, part of the next,
        waits `stall` seconds and hangs up."""
        all_headers = {"Content-Type": SSE_CONTENT_TYPE, "Cache-Control": "no-cache",
                       "Transfer-Encoding": "chunked"}
        all_headers.update(headers)
        self._head(200, all_headers)
        if cut_after is not None:
            for e in events[:cut_after]:
                self._chunk(e)
            nxt = events[cut_after]
            self._chunk(nxt[:max(1, len(nxt) // 2)])
            time.sleep(stall)
            self._hang_up()
            return
        for e in list(events) + list(tail):
            self._chunk(e)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    # -- dispatch ------------------------------------------------------------

    def _dispatch(self):
        try:
            self._route()
        except HANGUP_ERRORS:
            self.close_connection = True

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _dispatch

    def _route(self):
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        prefix_queue, rest = split_queue(url.path)
        raw = self._read_body()
        provider = PROVIDER_PATHS.get(rest.rstrip("/") or "/")
        if provider:
            return self._provider(provider, prefix_queue or DEFAULT_QUEUE, raw)
        queue = query.get("queue") or prefix_queue or DEFAULT_QUEUE
        if rest == "/_script" and self.command == "POST":
            return self._script(queue, raw)
        if rest == "/_requests" and self.command == "GET":
            return self._send(200, STORE.requests(queue))
        if rest == "/_reset" and self.command == "POST":
            STORE.reset()
            return self._send(200, {"reset": True})
        return self._send(404, openai_error(404, {
            "message": "%s: no such path %s %s" % (NAME, self.command, url.path)}))

    def _script(self, queue, raw):
        try:
            steps = json.loads(raw.decode("utf-8"))
        except ValueError as e:
            return self._send(400, {"error": "%s: /_script body is not JSON: %s" % (NAME, e)})
        if isinstance(steps, dict):
            steps = [steps]
        if not isinstance(steps, list) or not all(isinstance(s, dict) for s in steps):
            return self._send(400, {"error": "%s: /_script wants a JSON array of objects" % NAME})
        return self._send(200, {"queued": STORE.script(queue, steps)})

    # -- provider requests ---------------------------------------------------

    def _provider(self, provider, queue, raw):
        body = parse_body(raw)
        STORE.record(queue, {
            "method": self.command,
            "path": self.path,
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "body": body,
            "time": time.time(),
        })
        step = STORE.pop(queue)
        if step is None:
            return self._error(provider, 500, {
                "message": "%s: no scripted response left in queue %s" % (NAME, queue)}, {})
        late = False
        if "hang" in step:
            time.sleep(float(step["hang"]))
            late = not (is_reply_step(step) or is_error_step(step) or step.get("invalid_json"))
        extra = {k: str(v) for k, v in (step.get("headers") or {}).items()}
        if is_error_step(step):
            headers = dict(extra)
            if step.get("retry_after") is not None:
                headers.setdefault("Retry-After", str(step["retry_after"]))
            return self._error(provider, int(step.get("status", 400)),
                               step.get("error") or {}, headers)
        stream = isinstance(body, dict) and body.get("stream") is True
        if step.get("invalid_json"):
            return self._invalid_json(provider, Reply(step, body, queue), stream, extra)
        problem = structured_request_error(provider, body)
        if problem:
            return self._error(provider, 400, {"message": problem}, extra)
        reply = Reply(step, body, queue, late=late)
        if "json" in step:
            problem = add_structured_answer(provider, step, body, reply, queue)
            if problem:
                return self._error(provider, 400, {"message": problem}, extra)
        headers = self._id_headers(provider, reply.n)
        headers.update(extra)
        stall = float(step.get("stall") or 0)
        if not stream:
            return self._send(200, RENDER_JSON[provider](reply), headers,
                              cut=bool(step.get("cut")), stall=stall)
        events = RENDER_STREAM[provider](reply)
        half = max(1, len(events) // 2)
        if step.get("cut") or stall:
            return self._stream(events, headers, cut_after=min(half, len(events) - 1), stall=stall)
        if step.get("stream_error") is not None:
            err = step["stream_error"] if isinstance(step["stream_error"], dict) else {}
            return self._stream(events[:half], headers,
                                tail=[stream_error_event(provider, err, half)])
        return self._stream(events, headers)

    def _id_headers(self, provider, n):
        if provider == ANTHROPIC:
            return {"request-id": "req_fake_%d" % n}
        return {"x-request-id": "req_fake_%d" % n, "openai-processing-ms": "1"}

    def _error(self, provider, status, err, extra):
        n = STORE.next_id()
        headers = self._id_headers(provider, n)
        if status == 429:
            headers.update(ratelimit_headers(provider))
        lower = {k.lower() for k in extra}
        headers = {k: v for k, v in headers.items() if k.lower() not in lower}
        headers.update(extra)
        if provider == ANTHROPIC:
            body = anthropic_error(status, err, "req_fake_%d" % n)
        else:
            body = openai_error(status, err)
        return self._send(status, body, headers)

    def _invalid_json(self, provider, reply, stream, extra):
        headers = self._id_headers(provider, reply.n)
        headers.update(extra)
        if not stream:
            return self._send(200, INVALID_JSON_BODY, headers)
        first = RENDER_STREAM[provider](reply)[0]
        tail = [sse("[DONE]")] if provider == CHAT else []
        return self._stream([first, INVALID_JSON_EVENT], headers, tail=tail)


class FakeProviderServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], HANGUP_ERRORS):
            super().handle_error(request, client_address)


def start_server():
    server = FakeProviderServer((HOST, 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


# ---------------------------------------------------------------------------
# Self-test


class SelfTest:
    def __init__(self, port):
        self.port = port
        self.failures = []
        self.checks = 0

    # -- client helpers --

    def call(self, method, path, body=None, headers=None):
        """(status, headers dict lower-case, raw body bytes) via urllib, errors included."""
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        req = urllib.request.Request("http://%s:%d%s" % (HOST, self.port, path), data=data,
                                     method=method, headers=headers or {})
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, {k.lower(): v for k, v in r.headers.items()}, r.read()
        except urllib.error.HTTPError as e:
            return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read()

    def script(self, queue, steps):
        status, _, body = self.call("POST", "/_script?queue=" + queue, steps)
        self.check(status == 200 and json.loads(body) == {"queued": len(steps)},
                   "script %s" % queue)

    def post(self, queue, path, body, headers=None):
        return self.call("POST", "/q/%s%s" % (queue, path), body, headers)

    def raw_post(self, queue, path, body):
        """POST via http.client; returns (status, headers, bytes, error) where error is a cut."""
        conn = http.client.HTTPConnection(HOST, self.port, timeout=10)
        try:
            conn.request("POST", "/q/%s%s" % (queue, path), json.dumps(body),
                         {"Content-Type": "application/json"})
            r = conn.getresponse()
            try:
                return r.status, dict((k.lower(), v) for k, v in r.getheaders()), r.read(), None
            except (http.client.IncompleteRead, ConnectionError, ValueError) as e:
                return r.status, {}, b"", e
        finally:
            conn.close()

    @staticmethod
    def events(raw):
        """[(event name or None, data string)] from an SSE body."""
        out = []
        for block in raw.decode("utf-8").split("\n\n"):
            if not block.strip():
                continue
            name, data = None, []
            for line in block.split("\n"):
                if line.startswith("event: "):
                    name = line[7:]
                elif line.startswith("data: "):
                    data.append(line[6:])
            out.append((name, "\n".join(data)))
        return out

    def check(self, ok, what):
        self.checks += 1
        if not ok:
            self.failures.append(what)

    # -- checks per provider --

    def test_chat(self):
        q = "chat"
        self.script(q, [
            {"text": "Hello there", "usage": {"input_tokens": 100, "output_tokens": 20,
                                             "cached_tokens": 30}},
            {"text": "Hi!", "tool_calls": [{"name": "run_python", "arguments": {"code": "1+1"}}],
             "chunk": 3},
            {"tool_calls": [{"id": "call_x", "name": "f", "arguments": "{bad"}], "model": "m2"},
            {"status": 429, "retry_after": "1"},
            {"text": "abcdefghijklmnop", "cut": True},
            {"hang": 0.1},
            {"invalid_json": True},
            {"echo": True},
        ])
        status, _, body = self.post(q, "/v1/chat/completions", {"model": "gpt-x", "messages": []})
        doc = json.loads(body)
        self.check(status == 200 and doc["object"] == "chat.completion"
                   and doc["model"] == "gpt-x"
                   and doc["choices"][0]["message"]["content"] == "Hello there"
                   and "tool_calls" not in doc["choices"][0]["message"]
                   and doc["choices"][0]["finish_reason"] == "stop"
                   and doc["usage"]["total_tokens"] == 120
                   and doc["usage"]["prompt_tokens_details"]["cached_tokens"] == 30,
                   "chat json reply")

        status, headers, raw, _ = self.raw_post(q, "/v1/chat/completions", {
            "model": "gpt-x", "stream": True, "stream_options": {"include_usage": True}})
        evs = self.events(raw)
        self.check(status == 200 and headers.get("content-type", "").startswith("text/event-stream")
                   and headers.get("transfer-encoding") == "chunked" and evs[-1][1] == "[DONE]",
                   "chat stream framing")
        chunks = [json.loads(d) for _, d in evs[:-1]]
        text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
        args = "".join(tc["function"].get("arguments", "")
                       for c in chunks if c["choices"]
                       for tc in c["choices"][0]["delta"].get("tool_calls", []))
        finishes = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]]
        self.check(text == "Hi!" and args == '{"code":"1+1"}' and finishes[-1] == "tool_calls"
                   and chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": "",
                                                             "refusal": None}
                   and all("usage" in c for c in chunks) and chunks[-1]["choices"] == []
                   and chunks[-1]["usage"]["completion_tokens"] == 5
                   and chunks[-2]["usage"] is None,
                   "chat stream tool call + usage")

        status, _, body = self.post(q, "/v1/chat/completions", {"model": "gpt-x"})
        msg = json.loads(body)["choices"][0]["message"]
        self.check(msg["content"] is None and msg["tool_calls"][0]["id"] == "call_x"
                   and msg["tool_calls"][0]["function"]["arguments"] == "{bad"
                   and json.loads(body)["model"] == "m2", "chat raw arguments")

        status, headers, body = self.post(q, "/v1/chat/completions", {"model": "gpt-x"})
        err = json.loads(body)["error"]
        self.check(status == 429 and headers.get("retry-after") == "1"
                   and headers.get("x-ratelimit-reset-requests") == "1s"
                   and err["type"] == "requests" and err["code"] == "rate_limit_exceeded"
                   and err["param"] is None and NAME in err["message"], "chat 429")

        status, _, _, cut = self.raw_post(q, "/v1/chat/completions", {"model": "m", "stream": True})
        self.check(status == 200 and cut is not None, "chat stream cut")

        t0 = time.time()
        status, _, body = self.post(q, "/v1/chat/completions", {"model": "m"})
        self.check(status == 200 and time.time() - t0 >= 0.1
                   and json.loads(body)["choices"][0]["message"]["content"] == LATE_TEXT,
                   "chat hang")

        status, _, body = self.post(q, "/v1/chat/completions", {"model": "m"})
        self.check(status == 200 and body == INVALID_JSON_BODY, "chat invalid json")

        sent = {"model": "m", "messages": [{"role": "user", "content": "é"}]}
        status, _, body = self.post(q, "/v1/chat/completions", sent)
        self.check(json.loads(body)["choices"][0]["message"]["content"]
                   == json.dumps(sent, sort_keys=True), "chat echo")

        status, _, body = self.post(q, "/v1/chat/completions", {"model": "m"})
        err = json.loads(body)["error"]
        self.check(status == 500 and err["message"] ==
                   "fake provider: no scripted response left in queue chat", "chat empty queue")

    def test_responses(self):
        q = "resp"
        self.script(q, [
            {"text": "Done.", "tool_calls": [{"name": "run_python", "arguments": {"a": 1}}]},
            {"text": "streamed text", "chunk": 5},
            {"tool_calls": [{"name": "f", "arguments": {"x": [1, 2]}}]},
            {"text": "long", "finish": "length"},
            {"text": "partial answer here", "stream_error": {"type": "server_error",
                                                            "message": "boom"}},
            {"status": 500},
            {"text": "abcdefgh", "cut": True},
        ])
        status, _, body = self.post(q, "/v1/responses", {"model": "r1", "input": "hi",
                                                         "instructions": "be brief"})
        doc = json.loads(body)
        out = doc["output"]
        self.check(status == 200 and doc["object"] == "response" and doc["status"] == "completed"
                   and doc["instructions"] == "be brief"
                   and out[0]["type"] == "message" and out[0]["content"][0]["text"] == "Done."
                   and out[1]["type"] == "function_call" and out[1]["arguments"] == '{"a":1}'
                   and out[1]["call_id"].startswith("call_")
                   and doc["usage"]["total_tokens"] == 15, "responses json")

        status, _, raw, _ = self.raw_post(q, "/v1/responses", {"model": "r1", "stream": True})
        evs = self.events(raw)
        datas = [json.loads(d) for _, d in evs]
        kinds = [n for n, _ in evs]
        expected = ["response.created", "response.in_progress", "response.output_item.added",
                    "response.content_part.added", "response.output_text.delta",
                    "response.output_text.delta", "response.output_text.delta",
                    "response.output_text.done", "response.content_part.done",
                    "response.output_item.done", "response.completed"]
        self.check(kinds == expected and [d["type"] for d in datas] == kinds
                   and [d["sequence_number"] for d in datas] == list(range(len(datas)))
                   and "".join(d.get("delta", "") for d in datas) == "streamed text"
                   and datas[-1]["response"]["output"][0]["content"][0]["text"] == "streamed text",
                   "responses stream text")

        status, _, raw, _ = self.raw_post(q, "/v1/responses", {"model": "r1", "stream": True})
        datas = [json.loads(d) for _, d in self.events(raw)]
        args = "".join(d["delta"] for d in datas
                       if d["type"] == "response.function_call_arguments.delta")
        done = [d for d in datas if d["type"] == "response.function_call_arguments.done"]
        self.check(args == '{"x":[1,2]}' and done and done[0]["arguments"] == args
                   and datas[-1]["response"]["output"][0]["type"] == "function_call",
                   "responses stream tool call")

        status, _, raw, _ = self.raw_post(q, "/v1/responses", {"model": "r1", "stream": True})
        last = json.loads(self.events(raw)[-1][1])
        self.check(last["type"] == "response.incomplete"
                   and last["response"]["incomplete_details"] == {"reason": "max_output_tokens"},
                   "responses incomplete")

        status, _, raw, _ = self.raw_post(q, "/v1/responses", {"model": "r1", "stream": True})
        evs = self.events(raw)
        err = json.loads(evs[-1][1])
        self.check(evs[-1][0] == "error" and err["type"] == "error" and err["message"] == "boom"
                   and err["code"] == "server_error"
                   and err["sequence_number"] == len(evs) - 1, "responses stream error")

        status, _, body = self.post(q, "/v1/responses", {"model": "r1"})
        err = json.loads(body)["error"]
        self.check(status == 500 and err["type"] == "server_error", "responses 500")

        status, _, _, cut = self.raw_post(q, "/v1/responses", {"model": "r1"})
        self.check(status == 200 and cut is not None, "responses json cut")

    def test_anthropic(self):
        q = "anth"
        self.script(q, [
            {"text": "Sure.", "tool_calls": [{"name": "run_python", "arguments": "{not json"}],
             "usage": {"input_tokens": 100, "output_tokens": 20, "cached_tokens": 40}},
            {"text": "Let me run it.", "tool_calls": [{"name": "run_python",
                                                       "arguments": {"code": "print(1)"}}]},
            {"status": 529},
            {"status": 429, "headers": {"anthropic-ratelimit-requests-remaining": "7"}},
            {"text": "hello world", "stream_error": {"type": "overloaded_error",
                                                    "message": "Overloaded"}},
            {"text": "0123456789abcdef", "cut": True},
            {"invalid_json": True},
            {"text": "Tail", "hang": 0.1},
        ])
        status, headers, body = self.post(q, "/v1/messages", {"model": "claude-x", "messages": []})
        doc = json.loads(body)
        self.check(status == 200 and doc["type"] == "message" and doc["stop_reason"] == "tool_use"
                   and doc["content"][0] == {"type": "text", "text": "Sure."}
                   and doc["content"][1]["input"] == {"_raw": "{not json"}
                   and doc["content"][1]["id"].startswith("toolu_fake_")
                   and doc["usage"]["input_tokens"] == 60
                   and doc["usage"]["cache_read_input_tokens"] == 40
                   and "request-id" in headers, "anthropic json")

        status, _, raw, _ = self.raw_post(q, "/v1/messages", {"model": "claude-x", "stream": True})
        evs = self.events(raw)
        kinds = [n for n, _ in evs]
        datas = [json.loads(d) for _, d in evs]
        text = "".join(d["delta"].get("text", "") for d in datas if d["type"] == "content_block_delta")
        args = "".join(d["delta"].get("partial_json", "") for d in datas
                       if d["type"] == "content_block_delta")
        self.check(kinds[0] == "message_start" and kinds[1] == "content_block_start"
                   and kinds[2] == "ping" and kinds.count("ping") == 1
                   and kinds[-2:] == ["message_delta", "message_stop"]
                   and [d["type"] for d in datas] == kinds
                   and datas[0]["message"]["usage"]["output_tokens"] == 1
                   and datas[0]["message"]["content"] == []
                   and text == "Let me run it." and args == '{"code":"print(1)"}'
                   and datas[-2]["delta"] == {"stop_reason": "tool_use", "stop_sequence": None}
                   and datas[-2]["usage"]["output_tokens"] == 5, "anthropic stream")

        status, _, body = self.post(q, "/v1/messages", {"model": "claude-x"})
        doc = json.loads(body)
        self.check(status == 529 and doc["type"] == "error"
                   and doc["error"] == {"type": "overloaded_error", "message": "Overloaded"}
                   and doc["request_id"].startswith("req_fake_"), "anthropic 529")

        status, headers, body = self.post(q, "/v1/messages", {"model": "claude-x"})
        self.check(status == 429 and headers.get("anthropic-ratelimit-requests-remaining") == "7"
                   and headers.get("anthropic-ratelimit-requests-reset", "").endswith("Z")
                   and json.loads(body)["error"]["type"] == "rate_limit_error", "anthropic 429")

        status, _, raw, _ = self.raw_post(q, "/v1/messages", {"model": "claude-x", "stream": True})
        evs = self.events(raw)
        self.check(evs[0][0] == "message_start" and evs[-1][0] == "error"
                   and json.loads(evs[-1][1]) == {"type": "error", "error": {
                       "type": "overloaded_error", "message": "Overloaded"}},
                   "anthropic stream error")

        status, _, _, cut = self.raw_post(q, "/v1/messages", {"model": "claude-x", "stream": True})
        self.check(status == 200 and cut is not None, "anthropic stream cut")

        status, _, raw, err = self.raw_post(q, "/v1/messages", {"model": "claude-x", "stream": True})
        self.check(err is None and raw.endswith(INVALID_JSON_EVENT)
                   and self.events(raw)[0][0] == "message_start", "anthropic invalid json stream")

        t0 = time.time()
        status, _, body = self.post(q, "/v1/messages", {"model": "claude-x"})
        self.check(time.time() - t0 >= 0.1 and json.loads(body)["content"][0]["text"] == "Tail",
                   "anthropic hang + reply")

    def test_structured(self):
        q = "structured"
        schema = {"type": "object", "properties": {"kind": {"type": "string"}},
                  "required": ["kind"], "additionalProperties": False}
        answer = {"kind": "spike", "n": [1, 2]}
        self.script(q, [{"json": answer}, {"json": answer, "chunk": 3}, {"json": answer},
                        {"json": answer, "chunk": 5}, {"json": answer},
                        {"json": answer, "text": "Done.", "tool": "report"},
                        {"json": answer}, {"json": answer}, {"json": answer}, {"json": answer}])
        chat = {"model": "m", "response_format": {"type": "json_schema", "json_schema": {
            "name": "report", "schema": schema, "strict": True}}}
        status, _, body = self.post(q, "/v1/chat/completions", chat)
        msg = json.loads(body)["choices"][0]["message"]
        self.check(status == 200 and json.loads(msg["content"]) == answer
                   and msg["content"] == dumps(answer), "structured: chat json")
        status, _, raw, _ = self.raw_post(q, "/v1/chat/completions", dict(chat, stream=True))
        text = "".join(json.loads(d)["choices"][0]["delta"].get("content") or ""
                       for _, d in self.events(raw)[:-1] if json.loads(d)["choices"])
        self.check(status == 200 and json.loads(text) == answer, "structured: chat stream")
        resp = {"model": "m", "text": {"format": {"type": "json_schema", "name": "report",
                                                  "schema": schema, "strict": True}}}
        status, _, body = self.post(q, "/v1/responses", resp)
        out = json.loads(body)["output"]
        self.check(status == 200 and json.loads(out[0]["content"][0]["text"]) == answer,
                   "structured: responses json")
        status, _, raw, _ = self.raw_post(q, "/v1/responses", dict(resp, stream=True))
        deltas = "".join(json.loads(d).get("delta", "") for _, d in self.events(raw)
                         if json.loads(d)["type"] == "response.output_text.delta")
        self.check(json.loads(deltas) == answer, "structured: responses stream")
        tools = [{"name": "run", "input_schema": {"type": "object"}},
                 {"name": "report", "input_schema": schema}]
        forced = {"model": "c", "tools": tools, "tool_choice": {"type": "tool", "name": "report"}}
        status, _, body = self.post(q, "/v1/messages", forced)
        doc = json.loads(body)
        self.check(status == 200 and doc["stop_reason"] == "tool_use" and len(doc["content"]) == 1
                   and doc["content"][0]["type"] == "tool_use" and doc["content"][0]["name"] == "report"
                   and doc["content"][0]["input"] == answer, "structured: anthropic forced tool")
        status, _, body = self.post(q, "/v1/messages", {"model": "c", "tools": tools,
                                                        "tool_choice": {"type": "auto"}})
        doc = json.loads(body)
        self.check(status == 200 and doc["content"][0] == {"type": "text", "text": "Done."}
                   and doc["content"][1]["name"] == "report", "structured: anthropic tool named by the step")
        status, _, raw, _ = self.raw_post(q, "/v1/messages", dict(forced, stream=True))
        args = "".join(json.loads(d)["delta"].get("partial_json", "") for _, d in self.events(raw)
                       if json.loads(d)["type"] == "content_block_delta")
        self.check(status == 200 and json.loads(args) == answer, "structured: anthropic stream")
        status, _, body = self.post(q, "/v1/messages", {"model": "c", "tools": tools,
                                                        "tool_choice": {"type": "tool", "name": "nope"}})
        self.check(status == 400 and "nope" in json.loads(body)["error"]["message"],
                   "structured: anthropic forced tool that is not there")
        loose = {"type": "object", "properties": {"kind": {"type": "string"}}}
        status, _, body = self.post(q, "/v1/chat/completions", {"model": "m", "response_format": {
            "type": "json_schema", "json_schema": {"name": "report", "schema": loose, "strict": True}}})
        self.check(status == 400 and "additionalProperties" in json.loads(body)["error"]["message"],
                   "structured: a strict schema OpenAI refuses")
        status, _, body = self.post(q, "/v1/chat/completions", {"model": "m", "response_format": {
            "type": "json_schema", "json_schema": {"name": "report", "schema": loose, "strict": False}}})
        self.check(status == 200, "structured: the same schema, not strict")
        self.script(q, [{"refusal": "No."}, {"refusal": "Not this."}, {"refusal": "No."}])
        msg = json.loads(self.post(q, "/v1/chat/completions", chat)[2])["choices"][0]["message"]
        self.check(msg["content"] is None and msg["refusal"] == "No.", "structured: chat refusal")
        _, _, raw, _ = self.raw_post(q, "/v1/chat/completions", dict(chat, stream=True))
        refusal = "".join(json.loads(d)["choices"][0]["delta"].get("refusal") or ""
                          for _, d in self.events(raw)[:-1] if json.loads(d)["choices"])
        self.check(refusal == "Not this.", "structured: chat refusal streamed")
        out = json.loads(self.post(q, "/v1/responses", resp)[2])["output"]
        self.check(out[0]["content"] == [{"type": "refusal", "refusal": "No."}], "structured: responses refusal")

    def test_control(self):
        self.script("ctl", [{"text": "x"}])
        self.call("POST", "/q/ctl/v1/messages", {"model": "m"}, {"X-Api-Key": "k1"})
        status, _, body = self.call("GET", "/_requests?queue=ctl")
        reqs = json.loads(body)
        self.check(status == 200 and len(reqs) == 1 and reqs[0]["method"] == "POST"
                   and reqs[0]["path"] == "/q/ctl/v1/messages"
                   and reqs[0]["headers"].get("x-api-key") == "k1"
                   and reqs[0]["body"] == {"model": "m"}
                   and isinstance(reqs[0]["time"], float), "requests recorded")
        self.script("default", [{"text": "d"}])
        status, _, body = self.call("POST", "/v1/chat/completions", b"not json")
        self.check(status == 200 and json.loads(self.call("GET", "/_requests")[2])[0]["body"]
                   == "not json", "default queue + raw body")
        status, _, _ = self.call("POST", "/_reset", b"")
        self.check(status == 200 and json.loads(self.call("GET", "/_requests?queue=ctl")[2]) == [],
                   "reset")
        conn = http.client.HTTPConnection(HOST, self.port, timeout=10)
        for i in range(2):
            conn.request("GET", "/_requests?queue=ka")
            r = conn.getresponse()
            self.check(r.status == 200 and r.read() == b"[]", "keep-alive request %d" % i)
        conn.close()

    def test_stall(self):
        """A stall sends the headers and half the answer at once, then nothing until it hangs up."""
        q = "stall"
        self.script(q, [{"text": "abcdefghijklmnop", "stall": 0.5}, {"text": "abcdefgh", "stall": 0.5}])
        for stream in (False, True):
            conn = http.client.HTTPConnection(HOST, self.port, timeout=10)
            t0 = time.time()
            conn.request("POST", "/q/%s/v1/chat/completions" % q, json.dumps({"model": "m", "stream": stream}),
                         {"Content-Type": "application/json"})
            r = conn.getresponse()
            headers_at = time.time() - t0
            try:
                r.read()
                cut = None
            except (http.client.IncompleteRead, ConnectionError, ValueError) as e:
                cut = e
            conn.close()
            self.check(r.status == 200 and headers_at < 0.4 and time.time() - t0 >= 0.5 and cut is not None,
                       "stall (stream=%s): headers at once, then silence, then a cut" % stream)

    def run(self):
        for test in (self.test_chat, self.test_responses, self.test_anthropic, self.test_structured,
                     self.test_control, self.test_stall):
            try:
                test()
            except Exception as e:  # a crash in a check is a failure, named
                self.failures.append("%s crashed: %r" % (test.__name__, e))
        return self.failures


def self_test():
    server = start_server()
    failures = SelfTest(server.server_address[1]).run()
    server.shutdown()
    if failures:
        print("%s self-test FAILED: %s" % (NAME, "; ".join(failures)))
        return 1
    print("%s self-test ok" % NAME)
    return 0


def main():
    if "--self-test" in sys.argv[1:]:
        sys.exit(self_test())
    server = FakeProviderServer((HOST, 0), Handler)
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
