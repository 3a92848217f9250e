#!/usr/bin/env python3
"""Upstream servers for luagent's network tests: test doubles on 127.0.0.1 only.

usage: tests/net_upstreams.py --dir DIR [--names a,b,c] [--canary PORT,...]

At start it makes, with openssl's command line, a test CA and a server certificate in DIR
(ca.pem, ca.key, server.pem, server.key: EC P-256, valid 2 days; the server's SANs are every
--names entry, default api.test.example,pkgs.test.example,other.test.example,localhost, and
IP:127.0.0.1), builds the probe wheel (tests/wheel_build.py) into DIR, and starts, each on an
ephemeral port of 127.0.0.1, all in this one process:

  http, https   the same handlers, threaded, HTTP/1.1 with keep-alive:
    /hello              200 text/plain "hello from upstream <http|https> <Host header>\\n"
    /echo               200 application/json {method, path (the request target as received),
                        scheme, sni (the TLS server name the client sent; null over http),
                        headers ({name as received: value}, repeats joined by ", "),
                        raw_headers ([[name, value], ...] in order), body (text), body_length};
                        /echo?chunk=N sends it chunked, N bytes a chunk; /echo?gzip=1 sends it
                        gzip-compressed (Content-Encoding: gzip) whatever Accept-Encoding says;
                        every request header also comes back as a response header X-Echo-<name>
    /bytes/N            N bytes, byte i being i % 256, sent in 64 KiB chunks as generated, with
                        Content-Length; /bytes/N?chunked=1 sends them chunked instead
    /slow/S             waits S seconds (a number, at most 600), then 200 "done\\n"
    /simple/            PEP 503 root index linking /simple/luagent-probe/
    /simple/luagent-probe/   PEP 503 project page linking /files/<wheel>#sha256=<hex>
    /files/<wheel>      the wheel (application/octet-stream)
    /_stats             200 JSON {"paths": {path: n}, "http": {path: n}, "https": {path: n},
                        "tcp_echo": connections, "udp_echo": datagrams}; /_stats itself is not
                        counted. A request in absolute form (http://host/p) is routed and
                        counted as /p.
    anything else       404 "not found: <path>\\n"
  sloppy, sloppy_tls   an HTTP/1.1 server that ignores "Connection: close" and answers every
                request it reads on a connection (pipelined ones too), each with 200 and the
                request line; every request it read is listed in /_stats "sloppy" as
                {scheme, method, target, host, body}. It reads a body by Content-Length, or
                chunked; with both it takes Content-Length (a lenient server a smuggler aims at)
  canary        (--canary PORT,...) one dual-stack listener on [::]:PORT for each port, which
                reaches every address of the host on that port (run it in a network namespace
                of its own): it accepts, reads and counts. /_stats "canary" is {connections,
                bytes, seen: ["address:port", ...]}: an attack test asserts it stays at zero
  tcp_echo      sends back every byte it receives until the client half-closes, then closes
  udp_echo      sends every datagram back to its sender

Then it writes DIR/upstreams.json, {"http": port, "https": port, "sloppy": port,
"sloppy_tls": port, "tcp_echo": port, "udp_echo": port, "ca_file": "DIR/ca.pem", "wheel": "<file name>", "names": [...]}, and prints
"ready" on stdout. It exits on SIGTERM or SIGINT, or when its stdin closes (start it with a
pipe on stdin, so that a test that dies leaves nothing running; `< /dev/null` ends it at once).
"""
import argparse
import gzip
import hashlib
import json
import os
import signal
import socket
import socketserver
import ssl
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wheel_build  # noqa: E402  (beside this file)

DEFAULT_NAMES = "api.test.example,pkgs.test.example,other.test.example,localhost"
CHUNK = 64 * 1024
PATTERN = bytes(range(256)) * (CHUNK // 256)   # one chunk of the /bytes pattern (i % 256)
PROJECT = "luagent-probe"


class Stats:
    """Requests per path (all, and per scheme), TCP echo connections and UDP echo datagrams."""

    def __init__(self):
        self.lock = threading.Lock()
        self.paths, self.by_scheme = {}, {"http": {}, "https": {}}
        self.tcp_echo = self.udp_echo = 0
        self.sloppy = []
        self.canary = {"connections": 0, "bytes": 0, "seen": []}

    def count(self, scheme, path):
        with self.lock:
            self.paths[path] = self.paths.get(path, 0) + 1
            table = self.by_scheme[scheme]
            table[path] = table.get(path, 0) + 1

    def bump(self, field):
        with self.lock:
            setattr(self, field, getattr(self, field) + 1)

    def snapshot(self):
        with self.lock:
            return {"paths": dict(self.paths), "http": dict(self.by_scheme["http"]),
                    "https": dict(self.by_scheme["https"]),
                    "tcp_echo": self.tcp_echo, "udp_echo": self.udp_echo,
                    "sloppy": list(self.sloppy), "canary": json.loads(json.dumps(self.canary))}

    def sloppy_request(self, entry):
        with self.lock:
            self.sloppy.append(entry)

    def canary_event(self, where, nbytes):
        with self.lock:
            if where:
                self.canary["connections"] += 1
                self.canary["seen"].append(where)
            self.canary["bytes"] += nbytes


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "luagent-upstream"

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, *args):
        pass

    def _read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass   # trailers
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def _echo(self, target, split, body):
        headers = {}
        for k, v in self.headers.items():
            headers[k] = headers[k] + ", " + v if k in headers else v
        data = (json.dumps({
            "method": self.command, "path": target, "scheme": self.server.scheme,
            "sni": getattr(self.connection, "luagent_sni", None),
            "headers": headers, "raw_headers": [[k, v] for k, v in self.headers.items()],
            "body": body.decode("utf-8", "replace"), "body_length": len(body),
        }, indent=1) + "\n").encode()
        echoed = {"X-Echo-" + k: v for k, v in headers.items()}
        query = dict(p.split("=", 1) for p in split.query.split("&") if "=" in p)
        if query.get("gzip"):
            data = gzip.compress(data)
            echoed["Content-Encoding"] = "gzip"
        chunk = int(query.get("chunk", "0") or 0)
        if chunk <= 0:
            return self._send(200, data, "application/json", echoed)
        self._head(200, "application/json", None, echoed)
        for i in range(0, len(data), chunk):
            self.wfile.write(b"%x\r\n" % len(data[i:i + chunk]) + data[i:i + chunk] + b"\r\n")
        self.wfile.write(b"0\r\n\r\n")

    def _head(self, status, ctype, length=None, extra=None):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        if length is None:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(length))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()

    def _send(self, status, body, ctype="text/plain; charset=utf-8", extra=None):
        if isinstance(body, str):
            body = body.encode()
        self._head(status, ctype, len(body), extra)
        if self.command != "HEAD":
            self.wfile.write(body)

    def _bytes(self, n, chunked):
        self._head(200, "application/octet-stream", None if chunked else n)
        if self.command == "HEAD":
            return
        left = n
        while left > 0:
            piece = PATTERN if left >= CHUNK else PATTERN[:left]
            if chunked:
                self.wfile.write(b"%x\r\n" % len(piece) + piece + b"\r\n")
            else:
                self.wfile.write(piece)
            left -= len(piece)
        if chunked:
            self.wfile.write(b"0\r\n\r\n")

    def _index(self, links):
        body = "<!DOCTYPE html>\n<html><body>\n" + "".join(
            f'<a href="{href}">{text}</a><br>\n' for href, text in links) + "</body></html>\n"
        self._send(200, body, "text/html; charset=utf-8")

    def _route(self):
        target = self.path
        split = urlsplit(target)
        path = split.path if target.startswith("/") or split.scheme else target
        body = self._read_body()
        up = self.server.upstreams
        if path != "/_stats":
            up.stats.count(self.server.scheme, path)
        if path == "/hello":
            return self._send(200, f"hello from upstream {self.server.scheme} {self.headers.get('Host', '')}\n")
        if path == "/echo":
            return self._echo(target, split, body)
        if path == "/auth":  # says which credential came, without giving it back to the sandbox
            value = self.headers.get("Authorization", "")
            return self._send(200, "authorization sha256 " + hashlib.sha256(value.encode()).hexdigest() + "\n")
        if path.startswith("/bytes/") and path[7:].isdigit():
            return self._bytes(int(path[7:]), "chunked=1" in split.query)
        if path.startswith("/slow/"):
            try:
                seconds = float(path[6:])
            except ValueError:
                seconds = -1
            if 0 <= seconds <= 600:
                time.sleep(seconds)
                return self._send(200, "done\n")
        if path == "/simple/":
            return self._index([(f"/simple/{PROJECT}/", PROJECT)])
        if path == "/simple":
            return self._send(301, "", extra={"Location": "/simple/"})
        if path == f"/simple/{PROJECT}/":
            return self._index([(f"/files/{up.wheel}#sha256={up.wheel_sha256}", up.wheel)])
        if path == f"/simple/{PROJECT}":
            return self._send(301, "", extra={"Location": f"/simple/{PROJECT}/"})
        if path == f"/files/{up.wheel}":
            return self._send(200, up.wheel_bytes, "application/octet-stream")
        if path == "/_stats":
            return self._send(200, json.dumps(up.stats.snapshot()) + "\n", "application/json")
        return self._send(404, f"not found: {path}\n")

    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = _route


class HTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, scheme, upstreams, tls=None):
        self.scheme, self.upstreams = scheme, upstreams
        super().__init__(("127.0.0.1", 0), Handler)
        if tls:   # the handshake happens in the connection's thread, on its first read
            self.socket = tls.wrap_socket(self.socket, server_side=True, do_handshake_on_connect=False)

    def handle_error(self, request, client_address):
        kind = sys.exc_info()[0]
        if kind and issubclass(kind, (ConnectionError, ssl.SSLError, TimeoutError)):
            return   # a client that went away or refused the certificate: expected in these tests
        super().handle_error(request, client_address)


class TCPEcho(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


class TCPEchoHandler(socketserver.BaseRequestHandler):
    def handle(self):
        self.server.upstreams.stats.bump("tcp_echo")
        while True:
            data = self.request.recv(CHUNK)
            if not data:
                break
            self.request.sendall(data)
        try:
            self.request.shutdown(socket.SHUT_WR)
        except OSError:
            pass


class Sloppy(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, scheme, tls=None):
        self.scheme, self.tls = scheme, tls
        super().__init__(("127.0.0.1", 0), SloppyHandler)


class SloppyHandler(socketserver.StreamRequestHandler):
    """Every request on the connection, answered, whatever Connection says."""

    def handle(self):
        if self.server.tls:
            try:
                self.connection = self.server.tls.wrap_socket(self.connection, server_side=True)
            except (ssl.SSLError, OSError):
                return
            self.rfile, self.wfile = self.connection.makefile("rb"), self.connection.makefile("wb")
        while True:
            line = self.rfile.readline(65537)
            if not line:
                return
            if line in (b"\r\n", b"\n"):
                continue
            headers = {}
            while True:
                h = self.rfile.readline(65537)
                if h in (b"\r\n", b"\n", b""):
                    break
                name, _, value = h.decode("latin-1").partition(":")
                headers[name.strip().lower()] = value.strip()
            if "content-length" in headers:
                body = self.rfile.read(int(headers["content-length"] or 0))
            elif headers.get("transfer-encoding", "").lower() == "chunked":
                body = b""
                while True:
                    size = int(self.rfile.readline().strip().split(b";")[0] or b"0", 16)
                    if size == 0:
                        self.rfile.readline()
                        break
                    body += self.rfile.read(size)
                    self.rfile.readline()
            else:
                body = b""
            parts = line.decode("latin-1").split()
            self.server.upstreams.stats.sloppy_request({
                "scheme": self.server.scheme, "method": parts[0] if parts else "", "target":
                parts[1] if len(parts) > 1 else "", "host": headers.get("host"),
                "body": body.decode("latin-1")})
            reply = line.strip()
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s"
                             % (len(reply) + 1, reply + b"\n"))
            self.wfile.flush()


class CanaryHandler(socketserver.BaseRequestHandler):
    def handle(self):
        local = self.request.getsockname()
        self.server.upstreams.stats.canary_event("%s:%d" % (local[0], local[1]), 0)
        self.request.settimeout(10)
        try:
            while True:
                data = self.request.recv(CHUNK)
                if not data:
                    break
                self.server.upstreams.stats.canary_event(None, len(data))
        except OSError:
            pass


class Canary(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    address_family = socket.AF_INET6

    def server_bind(self):
        self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()


class UDPEchoHandler(socketserver.BaseRequestHandler):
    def handle(self):
        data, sock = self.request
        self.server.upstreams.stats.bump("udp_echo")
        sock.sendto(data, self.client_address)


def openssl(*args, cwd):
    run = subprocess.run(["openssl", *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if run.returncode != 0:
        sys.exit("net_upstreams: openssl " + " ".join(args) + " failed:\n" + run.stdout.decode(errors="replace"))


def make_certificates(d, names):
    """ca.pem/ca.key (a CA) and server.pem/server.key (signed by it, SANs = names + 127.0.0.1)."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
            "-subj", "/CN=luagent test CA", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=d)
    sans = ",".join([f"DNS:{n}" for n in names] + ["IP:127.0.0.1"])
    with open(os.path.join(d, "server.ext"), "w") as f:
        f.write(f"subjectAltName={sans}\nbasicConstraints=critical,CA:FALSE\n"
                "keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n"
                "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid,issuer\n")
    openssl("req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", f"/CN={names[0]}", cwd=d)
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-set_serial", str(int.from_bytes(os.urandom(8), "big")), "-days", "2",
            "-extfile", "server.ext", "-out", "server.pem", cwd=d)
    for leftover in ("server.csr", "server.ext"):
        os.remove(os.path.join(d, leftover))


class Upstreams:
    def __init__(self, d, names, canary_ports=()):
        self.stats = Stats()
        make_certificates(d, names)
        wheel_path = wheel_build.build(d)
        self.wheel = os.path.basename(wheel_path)
        with open(wheel_path, "rb") as f:
            self.wheel_bytes = f.read()
        self.wheel_sha256 = hashlib.sha256(self.wheel_bytes).hexdigest()

        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(os.path.join(d, "server.pem"), os.path.join(d, "server.key"))

        def remember_sni(sock, name, _ctx):
            sock.luagent_sni = name
        tls.sni_callback = remember_sni

        self.servers = {"http": HTTPServer("http", self), "https": HTTPServer("https", self, tls)}
        self.servers["sloppy"], self.servers["sloppy_tls"] = Sloppy("http"), Sloppy("https", tls)
        for port in canary_ports:
            self.servers["canary_%d" % port] = Canary(("::", port), CanaryHandler)
        self.servers["tcp_echo"] = TCPEcho(("127.0.0.1", 0), TCPEchoHandler)
        self.servers["udp_echo"] = socketserver.ThreadingUDPServer(("127.0.0.1", 0), UDPEchoHandler)
        self.servers["udp_echo"].daemon_threads = True
        for s in self.servers.values():
            s.upstreams = self
            threading.Thread(target=s.serve_forever, daemon=True).start()

        info = {k: s.server_address[1] for k, s in self.servers.items()}
        info.update(ca_file=os.path.join(d, "ca.pem"), wheel=self.wheel, names=names)
        tmp = os.path.join(d, "upstreams.json.tmp")
        with open(tmp, "w") as f:
            json.dump(info, f, indent=1)
            f.write("\n")
        os.replace(tmp, os.path.join(d, "upstreams.json"))


def main():
    ap = argparse.ArgumentParser(description="upstream servers for luagent's network tests")
    ap.add_argument("--dir", required=True)
    ap.add_argument("--names", default=DEFAULT_NAMES)
    ap.add_argument("--canary", default="", help="ports a dual-stack canary listens on")
    args = ap.parse_args()
    names = [n.strip() for n in args.names.split(",") if n.strip()]
    if not names:
        ap.error("--names: at least one name")
    d = os.path.abspath(args.dir)
    os.makedirs(d, exist_ok=True)

    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())

    def watch_stdin():
        try:
            while sys.stdin.buffer.read1(4096):
                pass
        except (AttributeError, OSError):   # no stdin at all
            pass
        done.set()
    Upstreams(d, names, [int(p) for p in args.canary.split(",") if p.strip()])
    threading.Thread(target=watch_stdin, daemon=True).start()
    print("ready", flush=True)
    while not done.wait(1):
        pass
    os._exit(0)   # the serving threads are daemons; nothing to flush


if __name__ == "__main__":
    main()
