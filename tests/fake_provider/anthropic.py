"""Anthropic Messages: a Reply as a message JSON object, or as the events of
its stream (message_start ... message_stop)."""
from .common import pieces, sse

ANTHROPIC_STOP = {"stop": "end_turn", "length": "max_tokens", "tool": "tool_use"}


def anthropic_stop(reply):
    return ANTHROPIC_STOP.get(reply.finish, reply.finish)


def anthropic_usage(reply, output_tokens):
    """The service counts cache reads and writes apart from input_tokens."""
    return {
        "input_tokens": max(0, reply.input_tokens - reply.cached_tokens - reply.cache_write_tokens),
        "cache_creation_input_tokens": reply.cache_write_tokens,
        "cache_read_input_tokens": reply.cached_tokens,
        "output_tokens": output_tokens,
    }


def thinking_block(spec):
    """A step's thinking entry as the block the service sends: {"thinking", "signature"}
    or, with "redacted", a redacted_thinking block whose data is that string."""
    if "redacted" in spec:
        return {"type": "redacted_thinking", "data": spec["redacted"]}
    return {"type": "thinking", "thinking": spec.get("thinking", ""),
            "signature": spec.get("signature", "sig_fake")}


def anthropic_content(reply):
    blocks = [thinking_block(t) for t in reply.thinking]
    blocks += [{"type": "text", "text": reply.text}] if reply.has_text_block else []
    return blocks + [{"type": "tool_use", "id": c.anthropic_id, "name": c.name,
                      "input": c.anthropic_input()} for c in reply.calls]


def anthropic_message(reply, content, stop_reason, usage):
    return {
        "id": reply.msg_id,
        "type": "message",
        "role": "assistant",
        "model": reply.model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage,
    }


def anthropic_json(reply):
    return anthropic_message(reply, anthropic_content(reply), anthropic_stop(reply),
                             anthropic_usage(reply, reply.output_tokens))


def anthropic_event(kind, fields=None):
    data = {"type": kind}
    data.update(fields or {})
    return sse(data, kind)


def anthropic_blocks(reply):
    """(start block, [delta, ...]) per content block, in order."""
    blocks = []
    for spec in reply.thinking:
        block = thinking_block(spec)
        if block["type"] == "redacted_thinking":
            blocks.append((block, []))
            continue
        deltas = [{"type": "thinking_delta", "thinking": p}
                  for p in pieces(block["thinking"], reply.chunk)]
        blocks.append(({"type": "thinking", "thinking": "", "signature": ""},
                       deltas + [{"type": "signature_delta", "signature": block["signature"]}]))
    if reply.has_text_block:
        blocks.append(({"type": "text", "text": ""},
                       [{"type": "text_delta", "text": p}
                        for p in pieces(reply.text, reply.chunk)]))
    for call in reply.calls:
        fragments = [""] + pieces(call.arguments, reply.chunk)
        blocks.append(({"type": "tool_use", "id": call.anthropic_id, "name": call.name,
                        "input": {}},
                       [{"type": "input_json_delta", "partial_json": p} for p in fragments]))
    return blocks


def anthropic_stream(reply):
    events = [anthropic_event("message_start", {"message": anthropic_message(
        reply, [], None, anthropic_usage(reply, 1))})]
    for index, (start, deltas) in enumerate(anthropic_blocks(reply)):
        events.append(anthropic_event("content_block_start",
                                      {"index": index, "content_block": start}))
        if index == 0:
            events.append(anthropic_event("ping"))
        events += [anthropic_event("content_block_delta", {"index": index, "delta": d})
                   for d in deltas]
        events.append(anthropic_event("content_block_stop", {"index": index}))
    usage = reply.delta_usage if reply.delta_usage is not None else anthropic_usage(
        reply, reply.output_tokens)
    events.append(anthropic_event("message_delta", {
        "delta": {"stop_reason": anthropic_stop(reply), "stop_sequence": None},
        "usage": usage}))
    events.append(anthropic_event("message_stop"))
    return events
