"""The fake provider's --self-test: a server on a free port, checked through
its own HTTP interface with the stdlib's clients (every step form, the three
wire formats, the control API, keep-alive). Returns 0 when all is well."""
import http.client
import json
import time
import urllib.error
import urllib.request

from .common import HOST, INVALID_JSON_BODY, INVALID_JSON_EVENT, LATE_TEXT, NAME, dumps
from .server import start_server
from .validate import spec

# What each API requires, filled into the self-test's small bodies: every
# request is checked as the services check them (validate.py).
REQUIRED = {
    "/v1/chat/completions": {"messages": [{"role": "user", "content": "hi"}]},
    "/v1/responses": {"input": "hi"},
    "/v1/messages": {"max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]},
}


def valid(path, body):
    if not isinstance(body, dict):
        return body
    out = dict(body)
    for k, v in REQUIRED.get(path, {}).items():
        if out.get(k) in (None, []):
            out[k] = v
    return out


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
        return self.call("POST", "/q/%s%s" % (queue, path), valid(path, body), headers)

    def raw_post(self, queue, path, body):
        """POST via http.client; returns (status, headers, bytes, error) where error is a cut."""
        conn = http.client.HTTPConnection(HOST, self.port, timeout=10)
        try:
            conn.request("POST", "/q/%s%s" % (queue, path), json.dumps(valid(path, body)),
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

    def refused(self, q, path, body, what, words):
        """The request gets the service's 400 naming the problem."""
        status, _, raw = self.call("POST", "/q/%s%s" % (q, path), body)
        doc = json.loads(raw) if raw else {}
        message = (doc.get("error") or {}).get("message", "")
        self.check(status == 400 and words in message, "refused: %s (%s)" % (what, message or status))

    def test_validation(self):
        q = "invalid-self-test"
        self.script(q, [{"text": "x"}] * 12)
        if spec() is not None:
            self.refused(q, "/v1/chat/completions", {"model": "m"}, "chat without messages",
                         "Missing required parameter: 'messages'")
            self.refused(q, "/v1/chat/completions", {"model": "m", "messages": []}, "chat with no message",
                         "at least 1")
            self.refused(q, "/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "x"}],
                                                     "temperature": "hot"}, "a temperature that is text",
                         "temperature")
            self.refused(q, "/v1/responses", {"model": "m", "input": [{"type": "input_image", "image_url": "x"}]},
                         "a Responses input item of no known form", "input")
        else:
            self.check(False, "the OpenAPI spec is not found (FAKE_PROVIDER_OPENAPI or ../shared/specs)")
        user = {"role": "user", "content": "hi"}
        base = {"model": "c", "max_tokens": 64}
        self.refused(q, "/v1/messages", dict(base, messages=[{"role": "user", "content": [{"type": "text", "text": ""}]}]),
                     "an empty text block", "non-empty")
        self.refused(q, "/v1/messages", dict(base, messages=[user, user]), "two user turns", "alternate")
        self.refused(q, "/v1/messages", dict(base, messages=[user, {"role": "assistant", "content": "ok"}, {
            "role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_x", "content": "1"}]}]),
                     "a tool_result without its tool_use", "tool_use_id")
        use = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]}
        result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "1"}]}
        self.refused(q, "/v1/messages", dict(base, max_tokens=4096, thinking={"type": "enabled", "budget_tokens": 2048},
                                             messages=[user, use, result]),
                     "thinking on, the tool_use turn without its thinking block", "thinking")
        self.refused(q, "/v1/messages", dict(base, messages=[{"role": "user", "content": [
            {"type": "text", "text": str(i), "cache_control": {"type": "ephemeral"}} for i in range(5)]}]),
                     "five cache breakpoints", "maximum of 4")
        self.refused(q, "/v1/messages", {"model": "c", "messages": [user]}, "no max_tokens", "max_tokens")

    def test_control(self):
        self.script("ctl", [{"text": "x"}])
        self.call("POST", "/q/ctl/v1/messages", valid("/v1/messages", {"model": "m"}), {"X-Api-Key": "k1"})
        status, _, body = self.call("GET", "/_requests?queue=ctl")
        reqs = json.loads(body)
        self.check(status == 200 and len(reqs) == 1 and reqs[0]["method"] == "POST"
                   and reqs[0]["path"] == "/q/ctl/v1/messages"
                   and reqs[0]["headers"].get("x-api-key") == "k1"
                   and reqs[0]["body"] == valid("/v1/messages", {"model": "m"})
                   and isinstance(reqs[0]["time"], float), "requests recorded")
        self.script("default", [{"text": "d"}])
        status, _, body = self.call("POST", "/v1/chat/completions", b"not json")
        self.check(status == 400 and json.loads(self.call("GET", "/_requests")[2])[0]["body"]
                   == "not json", "default queue + raw body (refused: not JSON)")
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
            body = valid("/v1/chat/completions", {"model": "m", "stream": stream})
            conn.request("POST", "/q/%s/v1/chat/completions" % q, json.dumps(body),
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
        for test in (self.test_validation, self.test_chat, self.test_responses, self.test_anthropic,
                     self.test_structured, self.test_control, self.test_stall):
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
