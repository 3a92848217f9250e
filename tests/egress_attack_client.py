#!/usr/bin/env python3
"""A hostile client of a sandbox's egress proxy, run INSIDE the sandbox by tests/e2e/egress_attacks.lua.

usage: egress_attack_client.py MODE FILE [HOST PORT] [--wait S]

It sends the exact bytes of FILE (NUL bytes, bare CRs, megabytes of blanks: whatever the test
wrote) to the proxy at 127.0.0.1:3128 and writes what came back, byte for byte, to stdout,
ending with a line "<closed>" when the proxy closed the connection or "<timeout>" when nothing
more came within --wait seconds (default 15).

  raw     FILE is the whole conversation: sent at once
  later   FILE holds two parts split at the first "\\0\\0SPLIT\\0\\0": the first is sent, then the
          second once the first bytes of the answer came (a request pipelined after an answer began)
  tls     CONNECT HOST:PORT, then TLS (verified with the sandbox's CA bundle, SSL_CERT_FILE)
          with server name HOST, then FILE inside it; what comes back is the plaintext
  hello   CONNECT HOST:PORT, then FILE as the first bytes of the tunnel (a hand-made ClientHello)
"""
import os
import socket
import ssl
import sys
import time

PROXY = ("127.0.0.1", 3128)
SPLIT = b"\0\0SPLIT\0\0"


def read_all(sock, wait):
    out = bytearray()
    sock.settimeout(wait)
    while True:
        try:
            data = sock.recv(65536)
        except (socket.timeout, TimeoutError):
            return bytes(out) + b"\n<timeout>"
        except (ssl.SSLError, ConnectionError) as e:
            return bytes(out) + b"\n<closed: " + type(e).__name__.encode() + b">"
        if not data:
            return bytes(out) + b"\n<closed>"
        out += data


def connect_tunnel(host, port, wait):
    sock = socket.create_connection(PROXY, timeout=wait)
    sock.sendall(b"CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (host.encode(), port, host.encode(), port))
    head = b""
    while b"\r\n\r\n" not in head:
        data = sock.recv(1)
        if not data:
            break
        head += data
    return sock, head


def main():
    mode, path = sys.argv[1], sys.argv[2]
    wait = float(sys.argv[sys.argv.index("--wait") + 1]) if "--wait" in sys.argv else 15.0
    with open(path, "rb") as f:
        payload = f.read()
    out = sys.stdout.buffer
    if mode in ("raw", "later"):
        sock = socket.create_connection(PROXY, timeout=wait)
        first, _, second = payload.partition(SPLIT) if mode == "later" else (payload, b"", b"")
        try:
            sock.sendall(first)
        except OSError as e:   # the proxy may close on a head it refused before taking it all
            out.write(b"<send failed: " + type(e).__name__.encode() + b">\n")
        if mode == "later":
            sock.settimeout(wait)
            began = sock.recv(1)
            sock.sendall(second)
            out.write(began)
        out.write(read_all(sock, wait))
    elif mode in ("tls", "hello"):
        host, port = sys.argv[3], int(sys.argv[4])
        sock, head = connect_tunnel(host, port, wait)
        if not head.startswith(b"HTTP/1.1 200"):
            out.write(head + read_all(sock, wait))
            return
        if mode == "hello":
            sock.sendall(payload)
            out.write(read_all(sock, wait))
            return
        ctx = ssl.create_default_context(cafile=os.environ.get("SSL_CERT_FILE"))
        tls = ctx.wrap_socket(sock, server_hostname=host)
        first, _, second = payload.partition(SPLIT)
        tls.sendall(first)
        if second:
            time.sleep(0.3)
            try:
                tls.sendall(second)
            except OSError:
                pass
        out.write(read_all(tls, wait))
    else:
        sys.exit("unknown mode " + mode)


if __name__ == "__main__":
    main()
