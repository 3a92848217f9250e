#!/usr/bin/env python3
"""Runs a command on a new pseudo-terminal (its controlling terminal) and
answers its approval prompts, as a person at a terminal would.

  pty_answer.py [--log FILE] [--timeout S] [--stdin F] [--stdout F] [--stderr F]
                ANSWER... -- COMMAND [ARG...]

Each time the terminal shows an approval prompt ("[y]es / [n]o / [e]dit /
[a]lways"), the next ANSWER is typed, followed by Enter. Everything the terminal
showed goes to --log (default: stderr). --stdin, --stdout and --stderr give
the command those files instead of the terminal (it still has the terminal as
its controlling terminal, /dev/tty). Exits with the command's status; 124
when it did not end within --timeout seconds (default 60), 125 when it
prompted more often than there were answers (the extra prompt is logged).
"""
import os
import pty
import select
import signal
import sys
import time

PROMPT = b"[y]es / [n]o / [e]dit / [a]lways"


def main(argv):
    log_path, timeout, redirect = None, 60.0, {}
    args = list(argv)
    while args and args[0].startswith("--") and args[0] != "--":
        opt = args.pop(0)
        if opt == "--log":
            log_path = args.pop(0)
        elif opt == "--timeout":
            timeout = float(args.pop(0))
        elif opt in ("--stdin", "--stdout", "--stderr"):
            redirect[opt[2:]] = args.pop(0)
        else:
            sys.exit("pty_answer.py: unknown option %s" % opt)
    if "--" not in args:
        sys.exit(__doc__)
    split = args.index("--")
    answers, command = args[:split], args[split + 1:]

    pid, fd = pty.fork()
    if pid == 0:
        # the terminal stays open in the command (fd 10) even with all three
        # streams redirected: a terminal nobody holds open hangs up
        os.dup2(0, 10, inheritable=True)
        for fd_no, (name, mode) in enumerate([("stdin", os.O_RDONLY), ("stdout", os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                                              ("stderr", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)]):
            if name in redirect:
                os.dup2(os.open(redirect[name], mode, 0o644), fd_no)
        os.execvp(command[0], command)
    seen = b""
    prompts = 0
    extra_prompt = False
    deadline = time.time() + timeout
    while True:
        left = deadline - time.time()
        if left <= 0:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            write_log(log_path, seen + b"\n[pty_answer: timed out]\n")
            return 124
        ready, _, _ = select.select([fd], [], [], min(left, 0.5))
        if not ready:
            continue
        try:
            data = os.read(fd, 4096)
        except OSError:  # EIO: the command and everything on the terminal ended
            data = b""
        if not data:
            break
        seen += data
        while seen.count(PROMPT) > prompts:
            prompts += 1
            if prompts <= len(answers):
                os.write(fd, answers[prompts - 1].encode() + b"\r")
            else:
                extra_prompt = True
                os.kill(pid, signal.SIGTERM)
    _, status = os.waitpid(pid, 0)
    write_log(log_path, seen)
    if extra_prompt:
        return 125
    return os.waitstatus_to_exitcode(status) if status else 0


def write_log(path, data):
    if path:
        with open(path, "wb") as f:
            f.write(data)
    else:
        sys.stderr.buffer.write(data)


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.exit(code if code >= 0 else 128 - code)
