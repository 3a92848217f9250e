"""Names, defaults and small helpers shared by every part of the fake provider
(a test double of the model providers; the protocol is in __init__.py)."""
import json
from datetime import datetime, timedelta, timezone


NAME = "fake provider"
HOST = "127.0.0.1"
DEFAULT_QUEUE = "default"
DEFAULT_MODEL = "fake-model"
DEFAULT_CHUNK = 4
DEFAULT_FINISH = "stop"
DEFAULT_USAGE = {"input_tokens": 10, "output_tokens": 5, "cached_tokens": 0, "cache_write_tokens": 0}
DEFAULT_TOOL_NAME = "tool"
LATE_TEXT = "late"
FINGERPRINT = "fp_fake"
INVALID_JSON_BODY = b'{"id": "broken", "choices": ['
INVALID_JSON_EVENT = b'data: {"broken": \n\n'
SSE_CONTENT_TYPE = "text/event-stream; charset=utf-8"
JSON_CONTENT_TYPE = "application/json"
HANGUP_ERRORS = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError)

CHAT, RESPONSES, ANTHROPIC, COMPACT = "chat", "responses", "anthropic", "compact"
PROVIDER_PATHS = {
    "/v1/chat/completions": CHAT,
    "/v1/responses": RESPONSES,
    "/v1/responses/compact": COMPACT,
    "/v1/messages": ANTHROPIC,
}


def dumps(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def pieces(s, n):
    """s in pieces of n characters (the whole string if n < 1; none if s is empty)."""
    if not s:
        return []
    if n < 1:
        return [s]
    return [s[i:i + n] for i in range(0, len(s), n)]


def sse(data, event=None):
    """One server-sent event: optional `event:` line, a `data:` line, a blank line."""
    head = "event: %s\n" % event if event else ""
    payload = data if isinstance(data, str) else dumps(data)
    return ("%sdata: %s\n\n" % (head, payload)).encode("utf-8")


def rfc3339(seconds_from_now):
    t = datetime.now(timezone.utc) + timedelta(seconds=seconds_from_now)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")
