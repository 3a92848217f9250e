#!/usr/bin/env python3
"""A local HTTP server for luagent's http tests (a test double, not a real API).

Listens on 127.0.0.1 (random port) and, with --socket PATH, on a unix socket.
Prints "PORT" on its first line once ready. Endpoints:
  /delay?s=0.5            wait, then answer "ok"
  /echo                   JSON of method, path, query, headers, body length and sha256
  /status/NNN             answer with that status and a JSON error body
  /bytes?n=N              N bytes of a repeating pattern
  /sse?events=N           N server-sent events, flushed one by one
  /hang                   never answer (for timeouts)
  /cut                    promise 100 bytes, send 10, close (a cut body)
  /conn                   the client's port (same port = connection reused)
  /drip?n=N&interval=S    N chunks S seconds apart (for idle timeouts)
"""
import hashlib
import json
import os
import socket
import socketserver
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        if self.connection.family in (socket.AF_INET, socket.AF_INET6):  # no Nagle delays on keep-alive
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, *args):
        pass

    def _body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def _send(self, status, body, ctype="text/plain", extra=None):
        if isinstance(body, str):
            body = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def _route(self):
        url = urlparse(self.path)
        q = {k: v[0] for k, v in parse_qs(url.query).items()}
        body = self._body()
        path = url.path
        if path == "/delay":
            time.sleep(float(q.get("s", "0.5")))
            return self._send(200, "ok")
        if path == "/echo":
            info = {
                "method": self.command,
                "path": path,
                "query": q,
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body": body.decode("utf-8", "replace") if len(body) < 65536 else "",
                "length": len(body),
                "sha256": hashlib.sha256(body).hexdigest(),
            }
            return self._send(200, json.dumps(info), "application/json")
        if path.startswith("/status/"):
            code = int(path.split("/")[2])
            return self._send(code, json.dumps({"error": {"message": "status %d" % code}}),
                              "application/json", {"X-Test": "yes"})
        if path == "/bytes":
            n = int(q.get("n", "1000"))
            pattern = bytes(range(256))
            data = (pattern * (n // 256 + 1))[:n]
            return self._send(200, data, "application/octet-stream")
        if path == "/sse":
            n = int(q.get("events", "5"))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i in range(n):
                chunk = ("id: %d\nevent: tick\ndata: {\"i\": %d}\n\n" % (i, i)).encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            return
        if path == "/hang":
            time.sleep(3600)
            return
        if path == "/cut":
            self.send_response(200)
            self.send_header("Content-Length", "100")
            self.end_headers()
            self.wfile.write(b"0123456789")
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if path == "/conn":
            port = self.client_address[1] if isinstance(self.client_address, tuple) else 0
            return self._send(200, str(port))
        if path == "/drip":
            n, interval = int(q.get("n", "3")), float(q.get("interval", "0.2"))
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i in range(n):
                time.sleep(interval)
                chunk = b"drip%d;" % i
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            return
        return self._send(404, "no such test endpoint")

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _route


def quiet_errors(server_class):
    """Clients that hang up early (timeouts, stopped streams) are expected here."""
    class Quiet(server_class):
        request_queue_size = 128
        daemon_threads = True

        def handle_error(self, request, client_address):
            if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
                super().handle_error(request, client_address)
    return Quiet


@quiet_errors
class UnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):

    def get_request(self):
        conn, _ = self.socket.accept()
        return conn, ("unix", 0)


def main():
    sock_path = None
    if "--socket" in sys.argv:
        sock_path = sys.argv[sys.argv.index("--socket") + 1]
    tcp = quiet_errors(ThreadingHTTPServer)(("127.0.0.1", 0), Handler)
    threading.Thread(target=tcp.serve_forever, daemon=True).start()
    if sock_path:
        if os.path.exists(sock_path):
            os.unlink(sock_path)
        unix = UnixServer(sock_path, Handler)
        threading.Thread(target=unix.serve_forever, daemon=True).start()
    print(tcp.server_address[1], flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
