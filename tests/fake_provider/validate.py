"""Request checks as strict as the services': OpenAI requests against the
official OpenAPI spec (../shared/specs/openai-openapi.yaml, read as JSON that
tests/run makes with luagent's own YAML reader), Anthropic requests against
the rules of the official SDK's types. A request that fails gets the
service's 400 error body (server.py).

The JSON Schema subset here is what the spec uses: $ref, allOf, anyOf, oneOf
(at least one branch must match: overlapping branches would make an exact
oneOf refuse what the service takes), type (with OpenAPI's nullable), enum,
const, properties, required, additionalProperties, items, min/maxItems,
min/maxLength, minimum, maximum, exclusiveMinimum/Maximum. Unknown keywords
(discriminator, x-*) are ignored."""
import json
import os

OPENAI_SCHEMAS = {"chat": "CreateChatCompletionRequest", "responses": "CreateResponse",
                  "compact": "CompactResponseMethodPublicBody"}

_SPEC = None


def spec():
    """The OpenAPI document, loaded once: $FAKE_PROVIDER_OPENAPI (JSON), else
    the YAML beside the repository with PyYAML. None when neither is there."""
    global _SPEC
    if _SPEC is None:
        path = os.environ.get("FAKE_PROVIDER_OPENAPI")
        if path and os.path.exists(path):
            with open(path) as f:
                _SPEC = json.load(f)
        else:
            here = os.path.dirname(os.path.abspath(__file__))
            yaml_path = os.path.join(here, "..", "..", "..", "shared", "specs", "openai-openapi.yaml")
            try:
                import yaml
                with open(yaml_path) as f:
                    _SPEC = yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
            except (ImportError, OSError):
                _SPEC = False
    return _SPEC or None


TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


class Invalid(Exception):
    def __init__(self, path, message):
        super().__init__(message)
        self.path = path
        self.message = message


def _resolve(doc, ref):
    node = doc
    for part in ref.lstrip("#/").split("/"):
        node = node[part]
    return node


def _where(path):
    return ".".join(str(p) for p in path) or "body"


def check(doc, schema, value, path=()):
    """Raises Invalid(path, message) where value breaks schema."""
    if not isinstance(schema, dict):
        return
    if "$ref" in schema:
        check(doc, _resolve(doc, schema["$ref"]), value, path)
        rest = {k: v for k, v in schema.items() if k not in ("$ref", "description")}
        if rest:
            check(doc, rest, value, path)
        return
    if value is None and schema.get("nullable"):
        return
    for sub in schema.get("allOf", []):
        check(doc, sub, value, path)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            errors = []
            for sub in schema[key]:
                try:
                    check(doc, sub, value, path)
                    break
                except Invalid as e:
                    errors.append(e)
            else:
                deepest = max(errors, key=lambda e: len(e.path)) if errors else None
                if deepest is not None and len(deepest.path) > len(path):
                    raise deepest
                raise Invalid(path, "%s matches none of the allowed forms" % _where(path))
    kind = schema.get("type")
    if kind is not None:
        kinds = kind if isinstance(kind, list) else [kind]
        if not any(TYPES.get(k, lambda v: True)(value) for k in kinds):
            raise Invalid(path, "%s: expected %s, got %s" % (_where(path), " or ".join(kinds),
                                                             type(value).__name__))
    if "enum" in schema and value not in schema["enum"]:
        raise Invalid(path, "%s: %s is not one of %s" % (_where(path), json.dumps(value),
                                                         ", ".join(json.dumps(e) for e in schema["enum"])))
    if "const" in schema and value != schema["const"]:
        raise Invalid(path, "%s: expected %s" % (_where(path), json.dumps(schema["const"])))
    if isinstance(value, dict):
        _check_object(doc, schema, value, path)
    elif isinstance(value, list):
        _check_array(doc, schema, value, path)
    elif isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            raise Invalid(path, "%s: shorter than %d" % (_where(path), schema["minLength"]))
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            raise Invalid(path, "%s: longer than %d" % (_where(path), schema["maxLength"]))
    elif TYPES["number"](value):
        _check_number(schema, value, path)


def _check_object(doc, schema, value, path):
    for name in schema.get("required", []):
        if name not in value:
            raise Invalid(path + (name,), "Missing required parameter: '%s'." % _where(path + (name,)))
    props = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    for name, item in value.items():
        if name in props:
            check(doc, props[name], item, path + (name,))
        elif extra is False:
            raise Invalid(path + (name,), "Unrecognized request argument supplied: %s" % _where(path + (name,)))
        elif isinstance(extra, dict):
            check(doc, extra, item, path + (name,))


def _check_array(doc, schema, value, path):
    if "minItems" in schema and len(value) < schema["minItems"]:
        raise Invalid(path, "%s: expected at least %d items, got %d" % (_where(path), schema["minItems"], len(value)))
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        raise Invalid(path, "%s: expected at most %d items, got %d" % (_where(path), schema["maxItems"], len(value)))
    if "items" in schema:
        for i, item in enumerate(value):
            check(doc, schema["items"], item, path + (i,))


def _check_number(schema, value, path):
    if "minimum" in schema and value < schema["minimum"]:
        raise Invalid(path, "%s: below the minimum %s" % (_where(path), schema["minimum"]))
    if "maximum" in schema and value > schema["maximum"]:
        raise Invalid(path, "%s: above the maximum %s" % (_where(path), schema["maximum"]))
    if "exclusiveMinimum" in schema and not isinstance(schema["exclusiveMinimum"], bool) \
            and value <= schema["exclusiveMinimum"]:
        raise Invalid(path, "%s: must be above %s" % (_where(path), schema["exclusiveMinimum"]))


def openai_problem(kind, body):
    """None, or (param, message) for a request the OpenAI API would refuse."""
    if kind not in OPENAI_SCHEMAS:
        return None
    if not isinstance(body, dict):
        return (None, "We could not parse the JSON body of your request.")
    doc = spec()
    if doc is None:
        return None
    schema = doc["components"]["schemas"][OPENAI_SCHEMAS[kind]]
    try:
        check(doc, schema, body)
    except Invalid as e:
        return (_where(e.path), e.message)
    return unstored_item_problem(kind, body)


def unstored_item_problem(kind, body):
    """A request that passes back a reasoning item by id alone: the service
    looks the item up and, when it was made under store false (this fake
    stores none), finds nothing and answers 404."""
    if kind not in ("responses", "compact"):
        return None
    items = body.get("input") if isinstance(body.get("input"), list) else []
    for item in items:
        if isinstance(item, dict) and item.get("type") == "reasoning" and not item.get("encrypted_content"):
            return ("input", "Item with id '%s' not found. Items are not persisted when `store` is set to false. "
                    "Try again with `store` set to true, or remove this item from your input." % item.get("id"), 404)
    return None


# ---- Anthropic: the rules of the SDK's MessageCreateParams ----

def _blocks(content):
    return [{"type": "text", "text": content}] if isinstance(content, str) else (content or [])


def _text_problem(block, where):
    if block.get("type") == "text" and not block.get("text"):
        return "%s: text content blocks must be non-empty" % where
    return None


def _message_problems(messages, thinking_on):
    previous_uses = set()
    for i, msg in enumerate(messages):
        where = "messages.%d" % i
        role = msg.get("role") if isinstance(msg, dict) else None
        if role not in ("user", "assistant"):
            return "%s.role: Input should be 'user' or 'assistant'" % where
        if i == 0 and role != "user":
            return "messages: the first message must use the \"user\" role"
        if i > 0 and messages[i - 1].get("role") == role:
            return "messages: roles must alternate between \"user\" and \"assistant\" (%s)" % where
        content = msg.get("content")
        if isinstance(content, str) and content == "" and not (role == "assistant" and i == len(messages) - 1):
            return "%s: text content blocks must be non-empty" % where
        blocks = _blocks(content)
        if not blocks and not (role == "assistant" and i == len(messages) - 1):
            return "%s: all messages must have non-empty content except for the optional final assistant message" % where
        uses = set()
        for j, block in enumerate(blocks):
            bwhere = "%s.content.%d" % (where, j)
            problem = _text_problem(block, bwhere)
            if problem:
                return problem
            if block.get("type") == "tool_result":
                if block.get("tool_use_id") not in previous_uses:
                    return ("%s: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` "
                            "block must have a corresponding `tool_use` block in the previous message."
                            % (bwhere, block.get("tool_use_id")))
                for k, inner in enumerate(_blocks(block.get("content"))):
                    problem = _text_problem(inner, "%s.content.%d" % (bwhere, k))
                    if problem:
                        return problem
            if block.get("type") == "tool_use":
                uses.add(block.get("id"))
            if block.get("type") == "thinking" and not block.get("signature"):
                return "%s.signature: Field required" % bwhere
        last_assistant = all(m.get("role") != "assistant" for m in messages[i + 1:] if isinstance(m, dict))
        if role == "assistant" and thinking_on and uses and last_assistant and \
                (not blocks or blocks[0].get("type") not in ("thinking", "redacted_thinking")):
            return ("%s.content.0.type: Expected `thinking` or `redacted_thinking`, but found `%s`. When `thinking` "
                    "is enabled, a final `assistant` message must start with a thinking block" %
                    (where, blocks[0].get("type") if blocks else "nothing"))
        if role == "assistant":
            previous_uses = uses
        if role == "user":
            previous_uses = set()
    return None


def _count_breakpoints(value):
    if isinstance(value, dict):
        return (1 if "cache_control" in value else 0) + sum(_count_breakpoints(v) for v in value.values())
    if isinstance(value, list):
        return sum(_count_breakpoints(v) for v in value)
    return 0


# Anthropic's own (client) tools: the type -> the one name it takes
ANTHROPIC_TOOL_TYPES = {"text_editor_20250728": "str_replace_based_edit_tool", "text_editor_20250429":
                        "str_replace_based_edit_tool", "text_editor_20250124": "str_replace_editor",
                        "bash_20250124": "bash"}


def _tools_problem(tools):
    """(param, message) for a tools list the Messages API refuses: an unknown tool type, an
    own tool under another name, a custom tool without input_schema, a name given twice."""
    if tools is None:
        return None
    names = set()
    for i, tool in enumerate(tools if isinstance(tools, list) else []):
        kind = tool.get("type", "custom") if isinstance(tool, dict) else None
        where = "tools.%d" % i
        if kind == "custom":
            if not isinstance(tool.get("input_schema"), dict):
                return (where + ".input_schema", "%s.custom.input_schema: Field required" % where)
        elif kind in ANTHROPIC_TOOL_TYPES:
            if tool.get("name") != ANTHROPIC_TOOL_TYPES[kind]:
                return (where + ".name", "%s.%s.name: Input should be '%s'" % (where, kind, ANTHROPIC_TOOL_TYPES[kind]))
        else:
            return (where, "%s: Input tag '%s' found using 'type' does not match any of the expected tags" % (where, kind))
        if tool.get("name") in names:
            return (where + ".name", "tools: Tool names must be unique.")
        names.add(tool.get("name"))
    return None


def anthropic_problem(body):
    """None, or (param, message) for a request the Messages API would refuse."""
    if not isinstance(body, dict):
        return (None, "the request body is not JSON")
    for name in ("model", "max_tokens", "messages"):
        if name not in body:
            return (name, "%s: Field required" % name)
    messages = body["messages"]
    if not isinstance(messages, list) or not messages:
        return ("messages", "messages: at least one message is required")
    thinking = body.get("thinking")
    thinking_on = isinstance(thinking, dict) and thinking.get("type") == "enabled"
    if thinking_on:
        if not isinstance(thinking.get("budget_tokens"), int) or thinking["budget_tokens"] < 1024:
            return ("thinking.budget_tokens", "thinking.budget_tokens: Input should be greater than or equal to 1024")
        if body.get("temperature") not in (None, 1):
            return ("temperature", "`temperature` may only be set to 1 when thinking is enabled")
        if isinstance(body.get("max_tokens"), int) and body["max_tokens"] <= thinking["budget_tokens"]:
            return ("max_tokens", "`max_tokens` must be greater than `thinking.budget_tokens`")
    problem = _message_problems(messages, thinking_on)
    if problem:
        return ("messages", problem)
    system = body.get("system")
    if isinstance(system, str) and system == "":
        return ("system", "system: text content blocks must be non-empty")
    problem = _tools_problem(body.get("tools"))
    if problem:
        return problem
    if _count_breakpoints(body) > 4:
        return ("cache_control", "A maximum of 4 blocks with cache_control may be provided. Found %d."
                % _count_breakpoints(body))
    return None
