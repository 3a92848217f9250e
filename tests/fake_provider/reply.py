"""A reply step, normalised: what the three wire formats render (text, tool
calls, usage, finish, model, chunk size, refusal), whatever the step left out
filled in with the defaults of the protocol (__init__.py, step form 1)."""
import json
import time

from .common import DEFAULT_CHUNK, DEFAULT_FINISH, DEFAULT_MODEL, DEFAULT_TOOL_NAME, DEFAULT_USAGE, LATE_TEXT
from .state import STORE


class Call:
    def __init__(self, spec, n):
        self.name = spec.get("name", DEFAULT_TOOL_NAME)
        given = spec.get("id")
        self.openai_id = given or "call_%d" % n
        self.anthropic_id = given or "toolu_fake_%d" % n
        self.item_id = "fc_fake_%d" % STORE.next_id()
        args = spec.get("arguments", {})
        if isinstance(args, str):
            self.arguments = args
            try:
                parsed = json.loads(args)
            except ValueError:
                parsed = None
        else:
            self.arguments = json.dumps(args, separators=(",", ":"))
            parsed = args
        self.input = parsed if isinstance(parsed, dict) else None
        # Responses' own tool calls (step form: {"native": "apply_patch_call", "operation": {...}}
        # or {"native": "shell_call", "action": {...}}): items of that type, not function calls
        self.native = spec.get("native")
        self.operation = spec.get("operation")
        self.action = spec.get("action")

    def anthropic_input(self):
        return self.input if self.input is not None else {"_raw": self.arguments}


class Message:
    """An extra Responses message item before the reply's own (step "messages")."""
    def __init__(self, spec, n, i):
        self.id = "msg_fake_%d_%d" % (n, i)
        self.text = spec.get("text", "")
        self.phase = spec.get("phase")


class Reasoning:
    """A Responses reasoning item (step "reasoning")."""
    def __init__(self, spec, n, i):
        self.id = "rs_fake_%d_%d" % (n, i)
        self.summary = spec.get("summary")
        self.encrypted_content = spec.get("encrypted_content")


class Reply:
    def __init__(self, step, body, queue, late=False):
        request = body if isinstance(body, dict) else {}
        self.request = request
        self.n = STORE.next_id()
        self.msg_id = "msg_fake_%d" % self.n
        self.created = int(time.time())
        if step.get("echo"):
            self.text = json.dumps(body, sort_keys=True)
        elif late:
            self.text = LATE_TEXT
        else:
            self.text = step.get("text") or ""
        self.calls = [Call(c, STORE.next_call(queue)) for c in step.get("tool_calls") or []]
        usage = dict(DEFAULT_USAGE)
        usage.update(step.get("usage") or {})
        self.input_tokens = int(usage["input_tokens"])
        self.output_tokens = int(usage["output_tokens"])
        self.cached_tokens = int(usage["cached_tokens"])
        self.cache_write_tokens = int(usage["cache_write_tokens"])
        # the shapes the services send beside text and calls (__init__.py, step form 10)
        self.phase = step.get("phase")
        self.messages = [Message(m, self.n, i) for i, m in enumerate(step.get("messages") or [])]
        self.reasoning = [Reasoning(r, self.n, i) for i, r in enumerate(step.get("reasoning") or [])]
        include = request.get("include") if isinstance(request.get("include"), list) else []
        for r in self.reasoning:
            r.include_encrypted = "reasoning.encrypted_content" in include
        self.thinking = list(step.get("thinking") or [])
        self.delta_usage = step.get("delta_usage")
        self.repeat_names = bool(step.get("repeat_names"))
        self.compaction = step.get("compaction")
        finish = step.get("finish") or DEFAULT_FINISH
        self.finish = "tool" if self.calls and finish == DEFAULT_FINISH else finish
        self.model = step.get("model") or request.get("model") or DEFAULT_MODEL
        self.chunk = int(step.get("chunk", DEFAULT_CHUNK))
        self.refusal = step.get("refusal")

    def count_tokens(self, anthropic, queue):
        """The input counted from the request (4 characters a token); for Anthropic
        with its prompt caching (prompt_cache.py), for the others as one count."""
        from .prompt_cache import account
        if anthropic:
            fresh, read, write = account(queue, self.request)
        else:
            fresh, read, write = len(json.dumps(self.request)) // 4, 0, 0
        self.input_tokens = fresh + read + write
        self.cached_tokens = read
        self.cache_write_tokens = write

    @property
    def has_text_block(self):
        return bool(self.text) or not self.calls
