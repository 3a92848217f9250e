"""The OpenAI Responses API: a Reply as a response JSON object, or as the
events of its stream (response.created ... response.completed / .incomplete),
numbered by sequence_number."""
from .common import pieces, sse


def responses_usage(reply):
    return {
        "input_tokens": reply.input_tokens,
        "input_tokens_details": {"cached_tokens": reply.cached_tokens,
                                 "cache_write_tokens": reply.cache_write_tokens},
        "output_tokens": reply.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": reply.input_tokens + reply.output_tokens,
    }


def responses_text_part(text):
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def responses_refusal_part(text):
    return {"type": "refusal", "refusal": text}


def responses_message_item(reply, status="completed", content=None):
    if content is None and reply.refusal:
        content = [responses_refusal_part(reply.refusal)]
    if content is None:
        content = [responses_text_part(reply.text)]
    item = {"type": "message", "id": reply.msg_id, "status": status,
            "role": "assistant", "content": content}
    if reply.phase:
        item["phase"] = reply.phase
    return item


def responses_extra_message(msg, status="completed", content=None):
    """One of the step's "messages": a message item of its own, with its phase."""
    item = {"type": "message", "id": msg.id, "status": status, "role": "assistant",
            "content": [responses_text_part(msg.text)] if content is None else content}
    if msg.phase:
        item["phase"] = msg.phase
    return item


def responses_reasoning_item(r):
    """Its encrypted content only when the request asked for it (include), as the service does."""
    summary = [{"type": "summary_text", "text": r.summary}] if r.summary else []
    item = {"type": "reasoning", "id": r.id, "summary": summary}
    if r.encrypted_content is not None and r.include_encrypted:
        item["encrypted_content"] = r.encrypted_content
    return item


NATIVE_ITEM_PREFIX = {"apply_patch_call": "apc", "shell_call": "sh"}


def responses_native_item(call, status):
    """An apply_patch_call or shell_call item, as the service sends its own tools' calls."""
    item = {"type": call.native, "id": "%s_fake_%s" % (NATIVE_ITEM_PREFIX[call.native], call.item_id[8:]),
            "call_id": call.openai_id, "status": status}
    if call.native == "apply_patch_call":
        item["operation"] = call.operation
    else:
        item["action"] = dict({"timeout_ms": None, "max_output_length": None}, **(call.action or {}))
        item["environment"] = None
    return item


def responses_call_item(call, status="completed", arguments=None):
    if call.native:
        return responses_native_item(call, status)
    return {"type": "function_call", "id": call.item_id, "call_id": call.openai_id,
            "name": call.name,
            "arguments": call.arguments if arguments is None else arguments,
            "status": status}


def responses_output(reply):
    output = [responses_reasoning_item(r) for r in reply.reasoning]
    output += [responses_extra_message(m) for m in reply.messages]
    output += [responses_message_item(reply)] if reply.has_text_block else []
    return output + [responses_call_item(c) for c in reply.calls]


def responses_status(reply):
    if reply.finish == "length":
        return "incomplete", {"reason": "max_output_tokens"}
    return "completed", None


def responses_object(reply, status, incomplete=None, output=None, usage=None):
    req = reply.request
    return {
        "id": "resp_fake_%d" % reply.n,
        "object": "response",
        "created_at": reply.created,
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": incomplete,
        "instructions": req.get("instructions"),
        "max_output_tokens": req.get("max_output_tokens"),
        "max_tool_calls": req.get("max_tool_calls"),
        "model": reply.model,
        "output": output if output is not None else [],
        "parallel_tool_calls": req.get("parallel_tool_calls", True),
        "previous_response_id": req.get("previous_response_id"),
        "reasoning": {"effort": None, "summary": None},
        "service_tier": "default",
        "store": req.get("store", True),
        "temperature": req.get("temperature", 1.0),
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": req.get("tool_choice", "auto"),
        "tools": req.get("tools", []),
        "top_logprobs": 0,
        "top_p": req.get("top_p", 1.0),
        "truncation": req.get("truncation", "disabled"),
        "usage": usage,
        "user": None,
        "metadata": req.get("metadata") or {},
    }


def responses_json(reply):
    status, incomplete = responses_status(reply)
    return responses_object(reply, status, incomplete, responses_output(reply),
                            responses_usage(reply))


def responses_message_events(reply, index):
    """(type, fields) pairs for one streamed message item."""
    ids = {"item_id": reply.msg_id, "output_index": index, "content_index": 0}
    if reply.refusal:
        return [
            ("response.output_item.added",
             {"output_index": index, "item": responses_message_item(reply, "in_progress", [])}),
            ("response.content_part.added", dict(ids, part=responses_refusal_part(""))),
        ] + [("response.refusal.delta", dict(ids, delta=p)) for p in pieces(reply.refusal, reply.chunk)] + [
            ("response.refusal.done", dict(ids, refusal=reply.refusal)),
            ("response.content_part.done", dict(ids, part=responses_refusal_part(reply.refusal))),
            ("response.output_item.done", {"output_index": index, "item": responses_message_item(reply)}),
        ]
    events = [
        ("response.output_item.added",
         {"output_index": index,
          "item": responses_message_item(reply, "in_progress", [])}),
        ("response.content_part.added", dict(ids, part=responses_text_part(""))),
    ]
    events += [("response.output_text.delta", dict(ids, delta=p, logprobs=[]))
               for p in pieces(reply.text, reply.chunk)]
    events += [
        ("response.output_text.done", dict(ids, text=reply.text, logprobs=[])),
        ("response.content_part.done", dict(ids, part=responses_text_part(reply.text))),
        ("response.output_item.done",
         {"output_index": index, "item": responses_message_item(reply)}),
    ]
    return events


def responses_extra_events(reply, msg, index):
    """(type, fields) pairs for one streamed extra message item."""
    ids = {"item_id": msg.id, "output_index": index, "content_index": 0}
    return [
        ("response.output_item.added",
         {"output_index": index, "item": responses_extra_message(msg, "in_progress", [])}),
        ("response.content_part.added", dict(ids, part=responses_text_part(""))),
    ] + [("response.output_text.delta", dict(ids, delta=p, logprobs=[]))
         for p in pieces(msg.text, reply.chunk)] + [
        ("response.output_text.done", dict(ids, text=msg.text, logprobs=[])),
        ("response.content_part.done", dict(ids, part=responses_text_part(msg.text))),
        ("response.output_item.done", {"output_index": index, "item": responses_extra_message(msg)}),
    ]


def responses_reasoning_events(r, index):
    """A reasoning item streams as added (no encrypted content yet) and done (the whole item)."""
    started = {"type": "reasoning", "id": r.id, "summary": []}
    return [("response.output_item.added", {"output_index": index, "item": started}),
            ("response.output_item.done", {"output_index": index,
                                           "item": responses_reasoning_item(r)})]


def responses_call_events(reply, call, index):
    """(type, fields) pairs for one streamed function-call item (a native call: added and done)."""
    if call.native:
        return [("response.output_item.added", {"output_index": index, "item": responses_call_item(call, "in_progress")}),
                ("response.output_item.done", {"output_index": index, "item": responses_call_item(call)})]
    ids = {"item_id": call.item_id, "output_index": index}
    events = [("response.output_item.added",
               {"output_index": index,
                "item": responses_call_item(call, "in_progress", "")})]
    events += [("response.function_call_arguments.delta", dict(ids, delta=p))
               for p in pieces(call.arguments, reply.chunk)]
    events += [
        ("response.function_call_arguments.done",
         dict(ids, name=call.name, arguments=call.arguments)),
        ("response.output_item.done",
         {"output_index": index, "item": responses_call_item(call)}),
    ]
    return events


def responses_event(kind, fields, seq):
    data = {"type": kind}
    data.update(fields)
    data["sequence_number"] = seq
    return sse(data, kind)


def responses_stream(reply):
    started = responses_object(reply, "in_progress")
    pairs = [("response.created", {"response": started}),
             ("response.in_progress", {"response": started})]
    index = 0
    for r in reply.reasoning:
        pairs += responses_reasoning_events(r, index)
        index += 1
    for msg in reply.messages:
        pairs += responses_extra_events(reply, msg, index)
        index += 1
    if reply.has_text_block:
        pairs += responses_message_events(reply, index)
        index += 1
    for call in reply.calls:
        pairs += responses_call_events(reply, call, index)
        index += 1
    status, _ = responses_status(reply)
    final = "response.completed" if status == "completed" else "response.incomplete"
    pairs.append((final, {"response": responses_json(reply)}))
    return [responses_event(kind, fields, seq) for seq, (kind, fields) in enumerate(pairs)]


def compact_json(reply):
    """POST /v1/responses/compact: the compacted items, an encrypted compaction item
    (its content: the step's "compaction", else "encrypted-summary")."""
    return {"id": "resp_fake_%d" % reply.n, "object": "response.compaction", "created_at": reply.created,
            "output": [{"type": "compaction", "id": "cmp_fake_%d" % reply.n,
                        "encrypted_content": reply.compaction or "encrypted-summary"}],
            "usage": responses_usage(reply)}
