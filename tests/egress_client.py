#!/usr/bin/env python3
"""Plays luagent's host against `luagent-supervisor egress PORT` (sandbox/supervisor/DESIGN.md,
"Egress"), with clients run inside the sandbox as uid 1000.

  egress_client.py BOX SCENARIO          the relay by `docker exec -i BOX ... egress 3128`,
                                         the clients by `docker exec -u 1000 BOX python3 -c ...`
  egress_client.py --local SUPERVISOR SCENARIO    both on this machine (a sanitizer build)

Exits 0 when the scenario behaved as the protocol says, else 1 with what differed on stdout.
The wire format is parsed here independently of src/core/egress_frames.c.
"""
import hashlib
import os
import queue
import random
import subprocess
import sys
import threading
import time

PORT = int(os.environ.get("EGRESS_TEST_PORT", "3128"))  # the clients below say 3128: replaced
WINDOW = 1 << 20
SUPERVISOR = "/run/luagent/luagent-supervisor"


class Failed(Exception):
    pass


def expect(cond, what):
    if not cond:
        raise Failed(what)


class Target:
    """Where the relay and the clients run: a container, or this machine."""

    def __init__(self, box=None, local=None):
        self.box, self.local = box, local

    def egress_cmd(self, port=None):
        port = port or PORT
        if self.local:
            return [self.local, "egress", str(port)]
        return ["docker", "exec", "-i", self.box, SUPERVISOR, "egress", str(port)]

    def client(self, code, *args):
        """Starts a Python client as uid 1000; its stdout is the result."""
        code = code.replace("3128", str(PORT))
        if self.local:
            cmd = [sys.executable, "-c", code] + [str(a) for a in args]
        else:
            cmd = ["docker", "exec", "-u", "1000", self.box, "python3", "-c", code] + [str(a) for a in args]
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def root_sh(self, script):
        cmd = ["sh", "-c", script] if self.local else ["docker", "exec", self.box, "sh", "-c", script]
        return subprocess.run(cmd, capture_output=True, text=True).stdout


class Egress:
    """One egress process: a reader thread turns its stdout into messages on a queue."""

    def __init__(self, target, port=None):
        self.proc = subprocess.Popen(target.egress_cmd(port), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.messages = queue.Queue()
        self.lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        out = self.proc.stdout
        while True:
            header = out.readline()
            if not header:
                self.messages.put(None)
                return
            kind, conn, n = header.decode().rstrip("\n").split(" ")
            conn, n = int(conn), int(n)
            data = n if kind == "K" else (out.read(n) if n else b"")
            self.messages.put((kind, conn, data))

    def next(self, timeout=10):
        try:
            m = self.messages.get(timeout=timeout)
        except queue.Empty:
            raise Failed("no message from egress in %ss" % timeout)
        return m

    def send(self, kind, conn, data=b""):
        head = b"%s %d %d\n" % (kind.encode(), conn, data if kind == "K" else len(data))
        with self.lock:
            self.proc.stdin.write(head + (b"" if kind == "K" else data))
            self.proc.stdin.flush()

    def send_data(self, conn, data, credit):
        """D in 64 KiB pieces, never more than WINDOW not K'd: credit() waits for K's."""
        for at in range(0, len(data), 1 << 16):
            piece = data[at:at + (1 << 16)]
            credit(len(piece))
            self.send("D", conn, piece)

    def ready(self):
        m = self.next()
        expect(m is not None and m[0] == "R" and m[1] == 0, "the first message is not R 0: %r (stderr %r)" %
               (m, self.stderr()))
        return m[2].decode()

    def stderr(self):
        if self.proc.poll() is None:
            return ""
        return self.proc.stderr.read().decode(errors="replace")

    def close(self):
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        return self.proc.wait(timeout=10)


def blob(seed, size):
    return random.Random(seed).randbytes(size)


def sha(data):
    return hashlib.sha256(data).hexdigest()


# A client in the sandbox: sends seed's SIZE bytes (then shuts its write side) while it
# reads to EOF; prints the sha256 of what it sent and what it got.
CLIENT_BOTH_WAYS = r"""
import hashlib, random, socket, sys, threading
size, seed = int(sys.argv[1]), int(sys.argv[2])
s = socket.create_connection(("127.0.0.1", 3128))
data = random.Random(seed).randbytes(size)
def send():
    s.sendall(data); s.shutdown(socket.SHUT_WR)
t = threading.Thread(target=send); t.start()
got = hashlib.sha256(); n = 0
while True:
    b = s.recv(1 << 16)
    if not b: break
    got.update(b); n += len(b)
t.join()
print(hashlib.sha256(data).hexdigest(), got.hexdigest(), n)
"""


def both_ways(t):
    """5 MB each way byte-exact, both half-closes: client H, then host H ends it with C."""
    e = Egress(t)
    expect(e.ready() == "egress 1 127.0.0.1:%d" % PORT, "R's payload")
    size = 5 * 1000 * 1000
    client = t.client(CLIENT_BOTH_WAYS, size, 1)
    kind, conn, _ = e.next()
    expect(kind == "A" and conn == 1, "A 1 0 first, got %s %s" % (kind, conn))
    ours = blob(2, size)
    state = {"unacked": 0}
    cond = threading.Condition()

    def wait_credit(n):
        with cond:
            cond.wait_for(lambda: state["unacked"] + n <= WINDOW, timeout=30)
            state["unacked"] += n

    def send_then_shut():
        e.send_data(conn, ours, wait_credit)
        e.send("H", conn)

    sender = threading.Thread(target=send_then_shut)
    sender.start()
    got, client_eof, closed = hashlib.sha256(), False, None
    while closed is None:
        kind, c, data = e.next()
        expect(c == conn, "a message for another connection: %s %s" % (kind, c))
        if kind == "D":
            got.update(data)
            e.send("K", conn, len(data))
        elif kind == "K":
            with cond:
                state["unacked"] -= data
                expect(state["unacked"] >= 0, "K for more than was sent")
                cond.notify_all()
        elif kind == "H":
            client_eof = True
        elif kind == "C":
            closed = data
    sender.join()
    out, err = client.communicate(timeout=30)
    sent_sha, recv_sha, n = out.decode().split()
    expect(client_eof, "no H for the client's shutdown")
    expect(got.hexdigest() == sent_sha, "the host got other bytes than the client sent")
    expect(recv_sha == sha(ours) and int(n) == size, "the client got %s bytes, not ours" % n)
    expect(closed == b"both sides finished", "C's reason: %r" % closed)
    expect(e.close() == 0, "exit code on stdin EOF")


CLIENT_TALK = r"""
import socket, sys, time
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(b"hello")
got = b""
while True:
    b = s.recv(1 << 16)
    if not b: break
    got += b
print(got.decode(), "eof")
"""


def host_close(t):
    """The host's C: the client gets the bytes sent before it, then EOF; answered by C c 0."""
    e = Egress(t)
    e.ready()
    client = t.client(CLIENT_TALK)
    kind, conn, _ = e.next()
    expect(kind == "A", "A first")
    kind, c, data = e.next()
    expect((kind, data) == ("D", b"hello"), "D hello, got %s %r" % (kind, data))
    e.send("D", conn, b"bye")
    e.send("C", conn)
    seen = [e.next(), e.next()]
    expect(("K", conn, 3) in seen, "K 3 for the bytes written: %r" % seen)
    expect(("C", conn, b"") in seen, "C c 0 as the answer: %r" % seen)
    out, _ = client.communicate(timeout=10)
    expect(out.decode().strip() == "bye eof", "the client read %r" % out)
    e.send("D", conn, b"late")  # for a connection closed already: ignored
    e.send("K", conn, 5)
    time.sleep(0.2)
    expect(e.proc.poll() is None, "a message for a closed connection ended the relay")
    expect(e.close() == 0, "exit code")


CLIENT_LEAVE = r"""
import socket, struct, sys
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(b"x")
if sys.argv[1] == "reset":
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
s.close()
print("closed")
"""


def client_close(t):
    """A client's close: H (then the host's H gives C); a client's reset: C 'reset by the client'."""
    e = Egress(t)
    e.ready()
    t.client(CLIENT_LEAVE, "close").communicate(timeout=10)
    msgs = [e.next() for _ in range(3)]
    expect([m[0] for m in msgs] == ["A", "D", "H"], "A D H for a close: %r" % msgs)
    e.send("H", 1)
    expect(e.next() == ("C", 1, b"both sides finished"), "C after both H")
    t.client(CLIENT_LEAVE, "reset").communicate(timeout=10)
    msgs = []
    while not msgs or msgs[-1][0] != "C":
        msgs.append(e.next())
    expect(msgs[0] == ("A", 2, b""), "A 2 (ids are never reused): %r" % msgs)
    expect(msgs[-1] == ("C", 2, b"reset by the client"), "C 'reset by the client': %r" % msgs)
    expect(e.close() == 0, "exit code")


CLIENT_FLOOD = r"""
import hashlib, random, socket, sys
size = int(sys.argv[1])
s = socket.create_connection(("127.0.0.1", 3128))
data = random.Random(3).randbytes(size)
s.sendall(data)
s.shutdown(socket.SHUT_WR)
s.recv(1)
print(hashlib.sha256(data).hexdigest())
"""


def rss_kb(t):
    out = t.root_sh("for d in /proc/[0-9]*; do tr '\\0' ' ' < $d/cmdline | grep -q '^%s egress' && "
                    "grep VmRSS $d/status; done" % (t.local or SUPERVISOR))
    return int(out.split()[1]) if out.split() else -1


def backpressure(t):
    """20 MB from a client while the host gives no credit: at most a window comes, the relay
    stays small; after K's everything comes, byte-exact."""
    e = Egress(t)
    e.ready()
    size = 20 * 1000 * 1000
    client = t.client(CLIENT_FLOOD, size)
    expect(e.next()[0] == "A", "A first")
    got = []
    deadline = time.time() + 2
    while time.time() < deadline:
        try:
            m = e.messages.get(timeout=max(0.01, deadline - time.time()))
        except queue.Empty:
            continue
        expect(m and m[0] == "D", "only D without credit: %r" % (m,))
        got.append(m[2])
    held = sum(map(len, got))
    rss = rss_kb(t)
    print("    # without credit: %d bytes relayed, relay RSS %d kB" % (held, rss))
    expect(held == WINDOW, "%d bytes relayed without credit, expected exactly the window" % held)
    expect(0 < rss < 8192, "relay RSS %d kB while a client pushes 20 MB" % rss)
    e.send("K", 1, held)
    h = hashlib.sha256(b"".join(got))
    total = held
    while True:
        kind, _, data = e.next()
        if kind == "H":
            break
        expect(kind == "D", "D until H, got %s" % kind)
        h.update(data)
        total += len(data)
        e.send("K", 1, len(data))
    e.send("C", 1)
    out, _ = client.communicate(timeout=30)
    expect(total == size and h.hexdigest() == out.decode().strip(), "%d bytes came, checksum differs" % total)
    expect(e.close() == 0, "exit code")


CLIENT_MANY = r"""
import socket, sys, threading
n = int(sys.argv[1])
socks = [socket.create_connection(("127.0.0.1", 3128)) for _ in range(n)]
for i, s in enumerate(socks):
    s.sendall(b"conn %d" % i)
ok = 0
for i, s in enumerate(socks):
    got = b""
    while True:
        b = s.recv(100)
        if not b: break
        got += b
    ok += got == b"reply conn %d" % i
print(ok)
"""


def many(t):
    """200 connections at once, all relayed, each its own bytes."""
    e = Egress(t)
    e.ready()
    n = 200
    client = t.client(CLIENT_MANY, n)
    opened, closed = set(), 0
    while closed < n:
        kind, conn, data = e.next()
        if kind == "A":
            opened.add(conn)
        elif kind == "D":
            e.send("K", conn, len(data))
            e.send("D", conn, b"reply " + data)
            e.send("C", conn)
        elif kind == "C":
            closed += 1
    out, err = client.communicate(timeout=30)
    expect(opened == set(range(1, n + 1)), "ids 1..%d, got %d ids" % (n, len(opened)))
    expect(out.decode().strip() == str(n), "%s of %d clients got their reply (%r)" % (out, n, err[-300:]))
    expect(e.close() == 0, "exit code")


CLIENT_WAIT = r"""
import socket, sys, time
socks = [socket.create_connection(("127.0.0.1", 3128)) for _ in range(3)]
print("connected", flush=True)
ends = []
for s in socks:
    s.settimeout(5)
    try:
        ends.append("eof" if s.recv(10) == b"" else "data")
    except ConnectionResetError:
        ends.append("reset")
    except socket.timeout:
        ends.append("hang")
print(" ".join(ends))
"""


def stdin_eof(t):
    """The host closing stdin ends the relay (exit 0) and every connection (reset), and frees the port."""
    e = Egress(t)
    e.ready()
    client = t.client(CLIENT_WAIT)
    expect(client.stdout.readline().strip() == b"connected", "the clients connected")
    for _ in range(3):
        expect(e.next()[0] == "A", "A for each")
    started = time.time()
    code = e.close()
    out, _ = client.communicate(timeout=10)
    expect(code == 0, "exit code %s on stdin EOF" % code)
    expect(out.decode().split() == ["reset"] * 3, "the clients saw %r" % out)
    expect(time.time() - started < 3, "too slow to end")
    again = Egress(t)
    again.ready()
    expect(again.close() == 0, "the port is free again")


def port_taken(t):
    """A second egress on the same port: exit 1 with a line naming the port."""
    e = Egress(t)
    e.ready()
    second = subprocess.run(t.egress_cmd(), stdin=subprocess.DEVNULL, capture_output=True, timeout=10)
    err = second.stderr.decode()
    expect(second.returncode == 1, "the second exited %d" % second.returncode)
    expect("cannot listen on 127.0.0.1:%d" % PORT in err, "its message: %r" % err)
    expect(second.stdout == b"", "the second said %r on stdout" % second.stdout)
    expect(e.close() == 0, "the first was disturbed")


CLIENT_BIND = r"""
import socket
results = []
for addr in ("127.0.0.1", "0.0.0.0"):
    for opt in (None, socket.SO_REUSEADDR, socket.SO_REUSEPORT):
        s = socket.socket()
        if opt: s.setsockopt(socket.SOL_SOCKET, opt, 1)
        try:
            s.bind((addr, 3128)); s.listen(); results.append("bound %s %s" % (addr, opt))
        except OSError as e:
            results.append("refused")
print(" ".join(results))
"""


def uid_cannot_bind(t):
    """While egress listens, uid 1000 cannot take its port (any address, any socket option)."""
    e = Egress(t)
    e.ready()
    out, err = t.client(CLIENT_BIND).communicate(timeout=10)
    expect(out.decode().split() == ["refused"] * 6, "uid 1000: %r %r" % (out, err))
    expect(e.close() == 0, "exit code")


def malformed(t):
    """A message from the host that is not the format, or names a connection never opened: exit 2."""
    for bad, why in ((b"D 01 1\nx", "leading zero"), (b"D 7 1\nx", "no such connection"),
                     (b"A 1 0\n", "not a kind the host sends")):
        e = Egress(t)
        e.ready()
        e.proc.stdin.write(bad)
        e.proc.stdin.flush()
        code = e.proc.wait(timeout=10)
        err = e.proc.stderr.read().decode()
        expect(code == 2, "%r: exit %d" % (bad, code))
        expect("not an egress message" in err and (why in err or why == "leading zero"), "%r: %r" % (bad, err))


SCENARIOS = {f.__name__: f for f in (both_ways, host_close, client_close, backpressure, many, stdin_eof,
                                     port_taken, uid_cannot_bind, malformed)}


def main(argv):
    # Each scenario its own port: connections the relay closed first stay in TIME_WAIT
    # for a minute, and a listener without SO_REUSEADDR cannot bind beside them.
    global PORT
    if argv[0] == "--local":
        target, name = Target(local=argv[1]), argv[2]
    else:
        target, name = Target(box=argv[0]), argv[1]
    PORT += list(SCENARIOS).index(name)
    try:
        SCENARIOS[name](target)
    except (Failed, subprocess.TimeoutExpired, ValueError) as e:
        print("%s: %s" % (name, e))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
