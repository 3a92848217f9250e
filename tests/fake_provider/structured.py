"""Structured answers (a step's "json") and the checks the real services make
of a structured request (__init__.py, step form 8 and "Structured requests")."""
from .common import ANTHROPIC, CHAT, DEFAULT_FINISH, NAME, RESPONSES, dumps
from .reply import Call
from .state import STORE


SCHEMA_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


def openai_format(provider, body):
    """The json_schema format a Chat Completions or Responses request asks for, or None."""
    if not isinstance(body, dict):
        return None
    if provider == CHAT:
        rf = body.get("response_format")
        if isinstance(rf, dict) and rf.get("type") == "json_schema":
            return rf.get("json_schema") if isinstance(rf.get("json_schema"), dict) else {}
    elif provider == RESPONSES:
        text = body.get("text")
        fmt = text.get("format") if isinstance(text, dict) else None
        if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
            return fmt
    return None


def strict_problem(schema, context=()):
    """Where a strict schema breaks OpenAI's rules, as its 400 message words it, or None."""
    if not isinstance(schema, dict):
        return None
    is_object = schema.get("type") == "object" or "properties" in schema
    if is_object:
        if schema.get("additionalProperties") is not False:
            return ("In context=%s, 'additionalProperties' is required to be supplied and to be false."
                    % (context,))
        props = schema.get("properties") or {}
        missing = [k for k in props if k not in (schema.get("required") or [])]
        if missing:
            return ("In context=%s, 'required' is required to be supplied and to be an array including "
                    "every key in properties. Missing '%s'." % (context, missing[0]))
    for key in ("properties", "$defs", "definitions"):
        for name, sub in (schema.get(key) or {}).items():
            found = strict_problem(sub, context + (key, name))
            if found:
                return found
    for i, sub in enumerate(schema.get("anyOf") or []):
        found = strict_problem(sub, context + ("anyOf", str(i)))
        if found:
            return found
    if "items" in schema:
        return strict_problem(schema["items"], context + ("items",))
    return None


def structured_request_error(provider, body):
    """The 400 message a structured request gets from the real service, or None."""
    if provider == ANTHROPIC:
        choice = body.get("tool_choice") if isinstance(body, dict) else None
        if isinstance(choice, dict) and choice.get("type") == "tool":
            names = [t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)]
            if choice.get("name") not in names:
                return "tool_choice.name: tool '%s' was not found in tools" % choice.get("name")
        return None
    fmt = openai_format(provider, body)
    if fmt is None:
        return None
    name = fmt.get("name")
    where = "response_format" if provider == CHAT else "text.format"
    if not isinstance(name, str) or not name or len(name) > 64 or not set(name) <= SCHEMA_NAME_CHARS:
        return "Invalid '%s.name': must match the pattern ^[a-zA-Z0-9_-]{1,64}$." % where
    schema = fmt.get("schema")
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return "Invalid schema for %s '%s': schema must be a JSON Schema of 'type: \"object\"'." % (where, name)
    if fmt.get("strict") is True:
        problem = strict_problem(schema)
        if problem:
            return "Invalid schema for %s '%s': %s" % (where, name, problem)
    return None


def anthropic_answer_tool(step, body):
    """The tool a structured answer is a call of, in an Anthropic request, or None."""
    choice = body.get("tool_choice") if isinstance(body, dict) else None
    if isinstance(choice, dict) and choice.get("type") == "tool":
        return choice.get("name")
    if step.get("tool"):
        return step["tool"]
    tools = body.get("tools") if isinstance(body, dict) else None
    if isinstance(tools, list) and len(tools) == 1 and isinstance(tools[0], dict):
        return tools[0].get("name")
    return None


def add_structured_answer(provider, step, body, reply, queue):
    """Puts a step's "json" value into the reply; an error message when it cannot."""
    value = step["json"]
    if provider != ANTHROPIC:
        reply.text = dumps(value)
        return None
    name = anthropic_answer_tool(step, body)
    if not name:
        return ("%s: a json step needs a forced tool_choice, a \"tool\" name or a request with one tool"
                % NAME)
    reply.calls.append(Call({"name": name, "arguments": value}, STORE.next_call(queue)))
    if reply.finish == DEFAULT_FINISH:
        reply.finish = "tool"
    return None
