#!/usr/bin/env python3
"""A tiny test client of the sandbox supervisor (sandbox/supervisor/DESIGN.md).

Starts `docker exec -i CONTAINER /run/luagent/luagent-supervisor serve` (with
--local CMD...: that serve command on this machine, e.g. a sanitizer build),
then reads steps as JSON lines on stdin and prints one JSON line per result:

  {"op": "run", "argv": [...], "env": {...}, "cwd": "...", "stdin": "...", "timeout": ms}
  {"op": "spawn", ...same..., "keep_stdin": true}   returns at once: {"id": N}; keep_stdin:
                                        its stdin stays open for write/eof
  {"op": "write", "target": N, "data": "...", "repeat": n, "wait": false}
                                        data (repeated n times) to spawn N's stdin; the
                                        result is the write's X, or {"id"} without waiting
  {"op": "eof", "target": N}            closes spawn N's stdin; the result is its X
  {"op": "python", "code": "...", "timeout": ms}
  {"op": "pack", "path": "...", "max_bytes": n, "max_entries": n}   result has "tar_bytes", "left_out"
  {"op": "kill", "target": N} / {"op": "signal", "target": N, "signal": 15}
  {"op": "wait", "target": N}           the result of an earlier spawn (or write)
A target may also be the name of an earlier step: the id it sent.
  {"op": "sleep", "seconds": s}
  {"op": "bench", "argv": ["true"], "count": 50}   {"median_ms": ..., "p90_ms": ...}

A run result: {"id", "code", "flags", "killed", "stdout", "stderr", "failure", "ms"}.
A step's "name", when it has one, is copied into its result.
"""
import json
import os
import subprocess
import sys
import time


def netstring(tag, data):
    if isinstance(data, str):
        data = data.encode()
    return b"%d:%s%s," % (len(data) + 1, tag, data)


def encode(op, ident, fields):
    return b"%s %d %d\n" % (op.encode(), ident, len(fields)) + b"".join(fields)


class Supervisor:
    def __init__(self, command):
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.next_id = 0
        self.results = {}
        self.pending = {}
        self.buf, self.pos = bytearray(), 0
        ready = self._line()
        if not ready.startswith(b"R "):
            raise SystemExit("supervisor did not say ready: %r" % ready)
        self.version = ready[2:].decode()

    def _fill(self):
        chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
        if not chunk:
            raise EOFError("supervisor closed its stdout")
        del self.buf[:self.pos]
        self.pos = 0
        self.buf += chunk

    def _line(self):
        while True:
            nl = self.buf.find(b"\n", self.pos)
            if nl >= 0:
                line, self.pos = bytes(self.buf[self.pos:nl]), nl + 1
                return line
            self._fill()

    def _bytes(self, n):
        while len(self.buf) - self.pos < n:
            self._fill()
        data, self.pos = bytes(self.buf[self.pos:self.pos + n]), self.pos + n
        return data

    def _frame(self):
        parts = self._line().split(b" ")
        kind, ident = parts[0], int(parts[1])
        r = self.pending.setdefault(ident, {"id": ident, "stdout": [], "stderr": [], "failure": []})
        if kind in (b"O", b"E", b"F"):
            data = self._bytes(int(parts[2]))
            r[{b"O": "stdout", b"E": "stderr", b"F": "failure"}[kind]].append(data)
        elif kind == b"X":
            r["code"], r["flags"] = int(parts[2]), parts[3].decode()
            r["killed"] = int(parts[4]) if len(parts) > 4 else None
            r["ms"] = round((time.monotonic() - r.get("sent", time.monotonic())) * 1000, 2)
            for k in ("stdout", "stderr", "failure"):
                r[k] = b"".join(r[k])
            self.results[ident] = self.pending.pop(ident)
        else:
            raise SystemExit("not a frame: %r" % parts)

    def send(self, op, fields, ident=None):
        if ident is None:
            self.next_id += 1
            ident = self.next_id
            self.pending[ident] = {"id": ident, "stdout": [], "stderr": [], "failure": [],
                                   "sent": time.monotonic()}
        self.proc.stdin.write(encode(op, ident, fields))
        self.proc.stdin.flush()
        return ident

    def wait(self, ident):
        while ident not in self.results:
            self._frame()
        return self.results.pop(ident)


def command_fields(step):
    fields = [netstring(b"a", a) for a in step["argv"]]
    fields += [netstring(b"e", "%s=%s" % kv) for kv in sorted(step.get("env", {}).items())]
    if "cwd" in step:
        fields.append(netstring(b"d", step["cwd"]))
    if "stdin" in step:
        fields.append(netstring(b"i", step["stdin"]))
    if step.get("keep_stdin"):
        fields.append(netstring(b"k", ""))
    if step.get("timeout"):
        fields.append(netstring(b"t", str(step["timeout"])))
    return fields


def stdin_step(sv, step, target):
    fields = [netstring(b"w", str(target))]
    if step["op"] == "write":
        fields.append(netstring(b"i", step.get("data", "").encode() * step.get("repeat", 1)))
    ident = sv.send(step["op"], fields)
    if step.get("wait", True):
        return printable(sv.wait(ident))
    return {"id": ident}


def printable(r):
    out = dict(r)
    out.pop("sent", None)
    for k in ("stdout", "stderr", "failure"):
        out[k] = out[k].decode("utf-8", "replace")
    return out


def bench(sv, step):
    times = []
    for _ in range(step.get("count", 50)):
        start = time.monotonic()
        r = sv.wait(sv.send("run", command_fields(step)))
        times.append((time.monotonic() - start) * 1000)
        if r["code"] != 0:
            return {"error": printable(r)}
    times.sort()
    return {"median_ms": round(times[len(times) // 2], 2), "p90_ms": round(times[int(len(times) * 0.9)], 2),
            "min_ms": round(times[0], 2)}


def pack(sv, step):
    fields = [netstring(b"p", step["path"]), netstring(b"b", str(step.get("max_bytes", 0))),
              netstring(b"n", str(step.get("max_entries", 0)))]
    r = sv.wait(sv.send("pack", fields))
    tar = r.pop("stdout")
    if step.get("save"):
        with open(step["save"], "wb") as f:
            f.write(tar)
    r["stdout"] = b""
    r["tar_bytes"] = len(tar)
    left = []
    for line in r["stderr"].decode("utf-8", "replace").splitlines():
        reason, rest = line.split(" ", 1)
        length, path = rest.split(":", 1)
        left.append([reason, path if len(path) == int(length) else rest])
    r["left_out"] = left
    return printable(r)


def step_result(sv, step, spawned, named):
    op = step["op"]
    target = named.get(step.get("target"), step.get("target"))
    if op == "run":
        return printable(sv.wait(sv.send("run", command_fields(step))))
    if op == "spawn":
        ident = sv.send("spawn", command_fields(step))
        spawned.append(ident)
        return {"id": ident}
    if op == "python":
        fields = [netstring(b"c", step["code"])]
        if step.get("timeout"):
            fields.append(netstring(b"t", str(step["timeout"])))
        return printable(sv.wait(sv.send("python", fields)))
    if op == "pack":
        return pack(sv, step)
    if op == "kill":
        sv.send("kill", [], ident=target)
        return {"sent": "kill"}
    if op == "signal":
        sv.send("signal", [netstring(b"s", str(step["signal"]))], ident=target)
        return {"sent": "signal"}
    if op == "wait":
        return printable(sv.wait(target))
    if op in ("write", "eof"):
        return stdin_step(sv, step, target)
    if op == "sleep":
        time.sleep(step["seconds"])
        return {"slept": step["seconds"]}
    if op == "bench":
        return bench(sv, step)
    raise SystemExit("unknown step op %r" % op)


def main():
    args = sys.argv[1:]
    if not args:
        raise SystemExit("usage: supervisor_client.py CONTAINER | --local SERVE-COMMAND... < steps.jsonl")
    container, serve, user = args[0], ["/run/luagent/luagent-supervisor", "serve"], "0"
    if container == "--local":  # a serve command run here (e.g. an ASan build), no container
        sv = Supervisor(args[1:])
    else:
        sv = Supervisor(["docker", "exec", "-i", "-u", user, container] + serve)
    spawned, named = [], {}
    for line in sys.stdin:
        if line.strip():
            step = json.loads(line)
            result = step_result(sv, step, spawned, named)
            if "name" in step:
                result["name"] = step["name"]
                if "id" in result:
                    named[step["name"]] = result["id"]
            print(json.dumps(result), flush=True)
    sv.proc.stdin.close()
    sv.proc.wait(timeout=30)


if __name__ == "__main__":
    main()
