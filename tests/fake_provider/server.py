"""The fake provider's HTTP side: the control API (/_script, /_requests,
/_reset), a provider request recorded and answered with the next step of its
queue, in its wire format, and the faults that are about the connection
(hang, cut, stall, invalid JSON). HTTP/1.1 with keep-alive, threads."""
import json
import os
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from .anthropic import anthropic_json, anthropic_stream
from .chat import chat_json, chat_stream
from .common import (ANTHROPIC, CHAT, COMPACT, DEFAULT_QUEUE, HANGUP_ERRORS, HOST, INVALID_JSON_BODY,
                     INVALID_JSON_EVENT, JSON_CONTENT_TYPE, NAME, PROVIDER_PATHS, RESPONSES,
                     SSE_CONTENT_TYPE, dumps, sse)
from .errors import anthropic_error, openai_error, ratelimit_headers, stream_error_event
from .reply import Reply
from .responses import compact_json, responses_json, responses_stream
from .state import STORE
from .structured import add_structured_answer, structured_request_error
from . import prompt_cache
from .validate import anthropic_problem, openai_problem


CHECKS = os.environ.get("FAKE_PROVIDER_CHECKS", "1") != "0"


def request_problem(provider, body):
    """(param, message) when the service would refuse the request, else None.
    FAKE_PROVIDER_CHECKS=0 (bench/run: it measures luagent, not the checks) checks nothing."""
    if not CHECKS:
        return None
    if provider == ANTHROPIC:
        return anthropic_problem(body)
    return openai_problem(provider, body)


RENDER_JSON = {CHAT: chat_json, RESPONSES: responses_json, ANTHROPIC: anthropic_json, COMPACT: compact_json}
RENDER_STREAM = {CHAT: chat_stream, RESPONSES: responses_stream, ANTHROPIC: anthropic_stream}


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
        if rest == "/_refused" and self.command == "GET":
            return self._send(200, STORE.refused())
        if rest == "/_reset" and self.command == "POST":
            STORE.reset()
            prompt_cache.reset()
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
        record = {
            "method": self.command,
            "path": self.path,
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "body": body,
            "time": time.time(),
        }
        problem = request_problem(provider, body)
        if problem:
            record["refused"] = problem[1]
        STORE.record(queue, record)
        step = STORE.pop(queue)
        if problem:
            # refused as the service refuses it (the request still takes its step)
            status = problem[2] if len(problem) > 2 else 400
            return self._error(provider, status, {"message": problem[1], "param": problem[0]}, {})
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
        if step.get("count_tokens"):
            reply.count_tokens(provider == ANTHROPIC, queue)
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
