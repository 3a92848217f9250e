"""luagent runner: runs the host's commands inside a sandbox, one fork each.

A session starts it once (`python3 -c <this file>`) on a hijacked exec
attach, so a command costs a fork here instead of a Docker exec (~30 ms).
It also keeps a persistent Python interpreter (the "kernel", a separate
process) whose variables and imports survive between calls.

Protocol (src/runner.h is the host side):
  host -> runner, on stdin: a JSON line, then "size" raw bytes if it has one
    {"op": "run", "id": N, "argv": [...], "env": {...}, "cwd": "...", "token": "...", "size": n}
    {"op": "python", "id": N, "token": "...", "size": n}       the code follows
    {"op": "kill", "id": N}
  runner -> host, on stdout:
    R <version> | O <id> <n>\\n<bytes> | E <id> <n>\\n<bytes> | F <id> <n>\\n<bytes>
    X <id> <exit code> <flags: o=OOM-killed k=killed on request r=Python restarted, or ->

Every process a command starts carries LUAGENT_EXEC=<token> in its
environment, so a kill finds the whole tree (double forks and setsid too).
Commands get oom_score_adj 1000, so under memory pressure the kernel kills
them and not this runner.
"""
import json
import os
import selectors
import signal
import subprocess
import sys
import time

VERSION = "1"
GRACE_AFTER_EXIT = 0.2   # seconds to drain pipes held open by background children
CHUNK = 65536

KERNEL = r'''
import ast, json, os, sys, traceback
status = os.fdopen(int(os.environ.pop("LUAGENT_STATUS_FD")), "w")
namespace = {"__name__": "__main__", "__builtins__": __builtins__}
source = sys.stdin.buffer
while True:
    line = source.readline()
    if not line:
        break
    code = source.read(int(line)).decode("utf-8", "replace")
    ok, exit_code = True, 0
    try:
        tree = ast.parse(code, "<python>")
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, "<python>", "exec"), namespace)
        if last is not None:
            value = eval(compile(last, "<python>", "eval"), namespace)
            if value is not None:
                print(repr(value))
    except SystemExit as e:
        exit_code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException as e:
        ok, exit_code = False, 1
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != "<python>":
            tb = tb.tb_next
        traceback.print_exception(type(e), e, tb)
    sys.stdout.flush()
    sys.stderr.flush()
    status.write(json.dumps({"ok": ok, "exit": exit_code}) + "\n")
    status.flush()
'''


def write_all(fd, data):
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except BlockingIOError:
            time.sleep(0.001)
            continue
        view = view[n:]


def emit(kind, ident, payload=b""):
    write_all(1, b"%s %d %d\n" % (kind, ident, len(payload)) + payload)


def emit_exit(ident, code, flags):
    write_all(1, b"X %d %d %s\n" % (ident, code, (flags or "-").encode()))


def oom_kills():
    for path in ("/sys/fs/cgroup/memory/memory.oom_control", "/sys/fs/cgroup/memory.events"):
        try:
            with open(path) as f:
                for line in f:
                    if line.startswith("oom_kill "):
                        return int(line.split()[1])
        except OSError:
            pass
    return None


def processes_with(token):
    record = ("LUAGENT_EXEC=" + token).encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open("/proc/%s/environ" % name, "rb") as f:
                if record in f.read().split(b"\0"):
                    found.append(int(name))
        except OSError:
            pass
    return found


def kill_tree(token, group):
    """Stops, then kills, every process carrying the token; rounds catch forks in flight."""
    for _ in range(20):
        pids = processes_with(token)
        if group:
            try:
                os.killpg(group, signal.SIGKILL)
            except OSError:
                pass
        if not pids:
            return
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            for pid in pids:
                try:
                    os.kill(pid, sig)
                except OSError:
                    pass


def exit_code_of(returncode):
    return 128 - returncode if returncode < 0 else returncode


def more_likely_oom_victim():
    try:
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")
    except OSError:
        pass


class Runner:
    def __init__(self):
        self.sel = selectors.DefaultSelector()
        self.commands = {}       # id -> Command
        self.kernel = None
        self.python_queue = []   # (id, token, code) waiting for the kernel
        self.kernel_lost = False # the last kernel died: its variables are gone
        self.oom_seen = oom_kills() or 0
        self.inbox = b""
        self.header = None
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        self.sel.register(wake_r, selectors.EVENT_READ, ("wake", None))
        os.set_blocking(0, False)
        self.sel.register(0, selectors.EVENT_READ, ("host", None))

    # ---- messages from the host ----

    def read_host(self):
        try:
            data = os.read(0, CHUNK)
        except BlockingIOError:
            return
        if not data:
            self.shutdown()
        self.inbox += data
        while True:
            if self.header is None:
                line, sep, rest = self.inbox.partition(b"\n")
                if not sep:
                    return
                self.inbox = rest
                try:
                    self.header = json.loads(line)
                except ValueError:
                    sys.stderr.write("runner: not a message: %r\n" % line[:200])
                    continue
            size = self.header.get("size", 0)
            if len(self.inbox) < size:
                return
            payload, self.inbox = self.inbox[:size], self.inbox[size:]
            message, self.header = self.header, None
            self.dispatch(message, payload)

    def dispatch(self, message, payload):
        op, ident = message.get("op"), message.get("id", 0)
        if op == "run":
            self.start(ident, message, payload)
        elif op == "python":
            self.python_queue.append((ident, message.get("token", ""), payload))
            self.next_python()
        elif op == "kill":
            self.kill(ident)

    # ---- commands ----

    def start(self, ident, message, stdin_data):
        env = dict(os.environ)
        env.update(message.get("env") or {})
        env["LUAGENT_EXEC"] = message["token"]
        try:
            proc = subprocess.Popen(
                message["argv"], cwd=message.get("cwd") or None, env=env,
                stdin=subprocess.PIPE if stdin_data else subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                start_new_session=True, preexec_fn=more_likely_oom_victim)
        except OSError as e:
            emit(b"F", ident, ("cannot run %s: %s" % (message["argv"][0], e.strerror or e)).encode())
            emit_exit(ident, 127 if isinstance(e, FileNotFoundError) else 126, "-")
            return
        cmd = Command(ident, proc, message["token"], stdin_data)
        self.commands[ident] = cmd
        for stream, pipe in ((b"O", proc.stdout), (b"E", proc.stderr)):
            os.set_blocking(pipe.fileno(), False)
            self.sel.register(pipe.fileno(), selectors.EVENT_READ, ("out", (cmd, stream)))
            cmd.open_pipes += 1
        if stdin_data:
            os.set_blocking(proc.stdin.fileno(), False)
            self.sel.register(proc.stdin.fileno(), selectors.EVENT_WRITE, ("in", cmd))

    def feed_stdin(self, cmd):
        try:
            n = os.write(cmd.proc.stdin.fileno(), cmd.stdin_data[cmd.stdin_sent:cmd.stdin_sent + CHUNK])
            cmd.stdin_sent += n
        except BlockingIOError:
            return
        except OSError:
            cmd.stdin_sent = len(cmd.stdin_data)
        if cmd.stdin_sent >= len(cmd.stdin_data):
            self.sel.unregister(cmd.proc.stdin.fileno())
            cmd.proc.stdin.close()

    def read_output(self, key, cmd, stream):
        try:
            data = os.read(key.fd, CHUNK)
        except BlockingIOError:
            return
        if data:
            emit(stream, cmd.ident, data)
            return
        self.sel.unregister(key.fd)
        cmd.open_pipes -= 1
        self.maybe_finish(cmd)

    def reap(self):
        for cmd in list(self.commands.values()):
            if cmd.exited_at is None and cmd.proc.poll() is not None:
                cmd.exited_at = time.monotonic()
                self.maybe_finish(cmd)
        if self.kernel:
            self.kernel.check()

    def maybe_finish(self, cmd, force=False):
        if cmd.exited_at is None or (cmd.open_pipes > 0 and not force):
            return
        for pipe in (cmd.proc.stdout, cmd.proc.stderr, cmd.proc.stdin):
            if pipe is not None and not pipe.closed:
                try:
                    self.sel.unregister(pipe.fileno())
                except (KeyError, ValueError):
                    pass
                pipe.close()
        del self.commands[cmd.ident]
        flags = ""
        if cmd.killed:
            flags += "k"
        elif cmd.proc.returncode == -signal.SIGKILL:
            count = oom_kills()
            if count is not None and count > self.oom_seen:
                flags += "o"
                self.oom_seen = count
        emit_exit(cmd.ident, exit_code_of(cmd.proc.returncode), flags)

    def drain_lingering(self):
        """A command that exited but whose pipes a background child holds open."""
        now = time.monotonic()
        for cmd in list(self.commands.values()):
            if cmd.exited_at is not None and now - cmd.exited_at >= GRACE_AFTER_EXIT:
                self.maybe_finish(cmd, force=True)

    def kill(self, ident):
        cmd = self.commands.get(ident)
        if cmd:
            cmd.killed = True
            kill_tree(cmd.token, cmd.proc.pid)
        elif self.kernel and self.kernel.current == ident:
            self.kernel.kill()
        elif any(q[0] == ident for q in self.python_queue):
            # never started: it still ends, so the host is not left waiting
            self.python_queue = [q for q in self.python_queue if q[0] != ident]
            emit_exit(ident, 137, "k")

    # ---- the Python kernel ----

    def next_python(self):
        if not self.python_queue or (self.kernel is not None and self.kernel.current is not None):
            return
        ident, token, code = self.python_queue.pop(0)
        restarted = False
        if self.kernel is None:
            restarted, self.kernel_lost = self.kernel_lost, False
            self.kernel = Kernel(self, token)
        self.kernel.run(ident, code, restarted)

    def shutdown(self):
        for cmd in self.commands.values():
            kill_tree(cmd.token, cmd.proc.pid)
        if self.kernel:
            self.kernel.kill()
        os._exit(0)

    def serve(self):
        write_all(1, b"R %s\n" % VERSION.encode())
        while True:
            lingering = any(c.exited_at is not None for c in self.commands.values())
            for key, _ in self.sel.select(timeout=0.05 if lingering else None):
                kind, data = key.data
                if kind == "host":
                    self.read_host()
                elif kind == "wake":
                    try:
                        os.read(key.fd, 512)
                    except BlockingIOError:
                        pass
                elif kind == "out":
                    self.read_output(key, *data)
                elif kind == "in":
                    self.feed_stdin(data)
                elif kind == "kernel":
                    kernel, stream = data
                    if kernel is self.kernel:  # not one that died earlier in this round
                        kernel.on_event(key, stream)
            self.reap()
            self.drain_lingering()


class Command:
    def __init__(self, ident, proc, token, stdin_data):
        self.ident, self.proc, self.token = ident, proc, token
        self.stdin_data, self.stdin_sent = stdin_data, 0
        self.open_pipes = 0
        self.exited_at = None
        self.killed = False


class Kernel:
    """A persistent interpreter; one call at a time, output relayed per call."""

    def __init__(self, runner, token):
        self.runner, self.token = runner, token
        status_r, status_w = os.pipe()
        env = dict(os.environ, LUAGENT_EXEC=token, LUAGENT_STATUS_FD=str(status_w))
        self.proc = subprocess.Popen(
            [sys.executable, "-u", "-c", KERNEL], env=env, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, pass_fds=(status_w,),
            start_new_session=True, preexec_fn=more_likely_oom_victim)
        os.close(status_w)
        self.status = os.fdopen(status_r, "rb", buffering=0)
        self.status_buf = b""
        self.current = None
        self.restarted = False
        self.killed = False
        for stream, fd in ((b"O", self.proc.stdout.fileno()), (b"E", self.proc.stderr.fileno()),
                           (b"S", status_r)):
            os.set_blocking(fd, False)
            runner.sel.register(fd, selectors.EVENT_READ, ("kernel", (self, stream)))

    def alive(self):
        return self.proc.poll() is None

    def run(self, ident, code, restarted):
        self.current, self.restarted, self.killed = ident, restarted, False
        self.proc.stdin.write(b"%d\n" % len(code) + code)
        self.proc.stdin.flush()

    def relay(self, fd, stream):
        while True:
            try:
                data = os.read(fd, CHUNK)
            except BlockingIOError:
                return
            if not data:
                return
            if self.current is not None:
                emit(stream, self.current, data)

    def on_event(self, key, stream):
        if stream != b"S":
            self.relay(key.fd, stream)
            return
        try:
            data = os.read(key.fd, CHUNK)
        except BlockingIOError:
            return
        self.status_buf += data
        while b"\n" in self.status_buf and self.current is not None:
            line, self.status_buf = self.status_buf.split(b"\n", 1)
            result = json.loads(line)
            self.relay(self.proc.stdout.fileno(), b"O")
            self.relay(self.proc.stderr.fileno(), b"E")
            self.finish(result.get("exit", 0 if result.get("ok") else 1), "")
        if not data:
            self.check()

    def finish(self, code, flags):
        ident, self.current = self.current, None
        if self.restarted:
            flags += "r"
        emit_exit(ident, code, flags)
        self.runner.next_python()

    def check(self):
        """The interpreter died (killed, OOM, os._exit): end its call, forget it."""
        if self.alive():
            return
        for fd, stream in ((self.proc.stdout.fileno(), b"O"), (self.proc.stderr.fileno(), b"E")):
            self.relay(fd, stream)
        for fd in (self.proc.stdout.fileno(), self.proc.stderr.fileno(), self.status.fileno()):
            try:
                self.runner.sel.unregister(fd)
            except (KeyError, ValueError):
                pass
        self.runner.kernel = None
        self.runner.kernel_lost = True
        if self.current is not None:
            flags = "k" if self.killed else ""
            if self.proc.returncode == -signal.SIGKILL and not self.killed:
                count = oom_kills()
                if count is not None and count > self.runner.oom_seen:
                    flags += "o"
                    self.runner.oom_seen = count
            ident, self.current = self.current, None
            emit_exit(ident, exit_code_of(self.proc.returncode), flags or "-")
        self.runner.next_python()

    def kill(self):
        self.killed = True
        kill_tree(self.token, self.proc.pid)


if __name__ == "__main__":
    Runner().serve()
