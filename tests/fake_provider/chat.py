"""OpenAI Chat Completions: a Reply as a chat.completion JSON object, or as
the events of its stream (chat.completion.chunk ... data: [DONE])."""
from .common import FINGERPRINT, pieces, sse

CHAT_FINISH = {"stop": "stop", "length": "length", "tool": "tool_calls"}


def chat_finish(reply):
    return CHAT_FINISH.get(reply.finish, reply.finish)


def chat_usage(reply):
    return {
        "prompt_tokens": reply.input_tokens,
        "completion_tokens": reply.output_tokens,
        "total_tokens": reply.input_tokens + reply.output_tokens,
        "prompt_tokens_details": {"cached_tokens": reply.cached_tokens, "audio_tokens": 0,
                                  "cache_write_tokens": reply.cache_write_tokens},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def chat_tool_call(call):
    return {"id": call.openai_id, "type": "function",
            "function": {"name": call.name, "arguments": call.arguments}}


def chat_message(reply):
    content = reply.text if reply.text or not reply.calls else None
    if reply.refusal:
        content = None
    message = {"role": "assistant", "content": content, "refusal": reply.refusal, "annotations": []}
    if reply.calls:
        message["tool_calls"] = [chat_tool_call(c) for c in reply.calls]
    return message


def chat_id(reply):
    return "chatcmpl-fake-%d" % reply.n


def chat_json(reply):
    return {
        "id": chat_id(reply),
        "object": "chat.completion",
        "created": reply.created,
        "model": reply.model,
        "choices": [{"index": 0, "message": chat_message(reply), "logprobs": None,
                     "finish_reason": chat_finish(reply)}],
        "usage": chat_usage(reply),
        "service_tier": "default",
        "system_fingerprint": FINGERPRINT,
    }


def chat_chunk(reply, choices, include_usage, usage=None):
    chunk = {
        "id": chat_id(reply),
        "object": "chat.completion.chunk",
        "created": reply.created,
        "model": reply.model,
        "service_tier": "default",
        "system_fingerprint": FINGERPRINT,
        "choices": choices,
    }
    if include_usage:
        chunk["usage"] = usage
    return chunk


def chat_choice(delta, finish=None):
    return {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}


def chat_stream(reply):
    opts = reply.request.get("stream_options")
    include_usage = isinstance(opts, dict) and opts.get("include_usage") is True

    def event(delta, finish=None):
        return sse(chat_chunk(reply, [chat_choice(delta, finish)], include_usage))

    events = [event({"role": "assistant", "content": "", "refusal": None})]
    if reply.refusal:
        events += [event({"refusal": p}) for p in pieces(reply.refusal, reply.chunk)]
    else:
        events += [event({"content": p}) for p in pieces(reply.text, reply.chunk)]
    for i, call in enumerate(reply.calls):
        events.append(event({"tool_calls": [{
            "index": i, "id": call.openai_id, "type": "function",
            "function": {"name": call.name, "arguments": ""}}]}))
        # some compatible servers repeat the name in every chunk (step "repeat_names")
        again = {"name": call.name} if reply.repeat_names else {}
        events += [event({"tool_calls": [{"index": i, "function": dict(again, arguments=p)}]})
                   for p in pieces(call.arguments, reply.chunk)]
    events.append(event({}, chat_finish(reply)))
    if include_usage:
        events.append(sse(chat_chunk(reply, [], True, chat_usage(reply))))
    events.append(sse("[DONE]"))
    return events
