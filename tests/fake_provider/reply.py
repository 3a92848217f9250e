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

    def anthropic_input(self):
        return self.input if self.input is not None else {"_raw": self.arguments}


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
        finish = step.get("finish") or DEFAULT_FINISH
        self.finish = "tool" if self.calls and finish == DEFAULT_FINISH else finish
        self.model = step.get("model") or request.get("model") or DEFAULT_MODEL
        self.chunk = int(step.get("chunk", DEFAULT_CHUNK))
        self.refusal = step.get("refusal")

    @property
    def has_text_block(self):
        return bool(self.text) or not self.calls
