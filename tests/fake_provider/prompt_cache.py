"""Anthropic's prompt caching as the service accounts it, for a reply step
with "count_tokens": true: the prompt is counted (4 characters a token) in
its order — tools, system, messages — block by block; at each cache_control
breakpoint the service looks for the longest prefix it has cached, ending at
the breakpoint or at one of the 20 blocks before it (so the previous turn's
breakpoint is found again after new turns were added), and writes the prefix
up to each breakpoint that is not cached yet. Prefixes shorter than
MIN_TOKENS are never cached. The cache is per queue, until /_reset."""
import hashlib
import json
import threading

MIN_TOKENS = 1024
LOOKBACK = 20

_lock = threading.Lock()
_cached = {}  # (queue, prefix hash) -> tokens


def _blocks(body):
    """(text, is_breakpoint) per block of the prompt, in the order the service reads it."""
    out = []

    def add(block):
        if isinstance(block, dict):
            plain = {k: v for k, v in block.items() if k != "cache_control"}
            out.append((json.dumps(plain, sort_keys=True), "cache_control" in block))
        else:
            out.append((json.dumps(block, sort_keys=True), False))
    for tool in body.get("tools") or []:
        add(tool)
    system = body.get("system")
    if isinstance(system, str):
        add({"type": "text", "text": system})
    for block in system if isinstance(system, list) else []:
        add(block)
    for msg in body.get("messages") or []:
        content = msg.get("content")
        out.append(("role:%s" % msg.get("role"), False))
        for block in ([{"type": "text", "text": content}] if isinstance(content, str) else content or []):
            add(block)
    return out


def account(queue, body):
    """(input_tokens, cache_read, cache_write): input_tokens leaves out both."""
    blocks = _blocks(body)
    digest, size, bounds = hashlib.sha256(), 0, []
    for text, breakpoint in blocks:
        digest.update(text.encode("utf-8"))
        size += len(text)
        bounds.append((digest.copy().hexdigest(), size // 4, breakpoint))
    total = size // 4
    read, write_to = 0, 0
    with _lock:
        for i, (_, tokens, breakpoint) in enumerate(bounds):
            if not breakpoint:
                continue
            for j in range(i, max(-1, i - LOOKBACK - 1), -1):
                if (queue, bounds[j][0]) in _cached:
                    read = max(read, bounds[j][1])
                    break
            if tokens >= MIN_TOKENS:
                write_to = max(write_to, tokens)
        write = max(0, write_to - read)
        for h, tokens, breakpoint in bounds:
            if breakpoint and tokens >= MIN_TOKENS:
                _cached[(queue, h)] = tokens
    return total - read - write, read, write


def reset():
    with _lock:
        _cached.clear()
