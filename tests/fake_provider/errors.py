"""The providers' error answers: the body for a status (fields the step left
out default by status), the rate-limit headers of a 429, and the error event
that ends a stream early (__init__.py, step forms 2 and 6)."""
from .common import ANTHROPIC, RESPONSES, rfc3339, sse


# status -> (type, code, message) for the OpenAI error form (Chat and Responses).
OPENAI_ERRORS = {
    400: ("invalid_request_error", None, "fake provider: invalid request"),
    401: ("invalid_request_error", "invalid_api_key", "fake provider: incorrect API key provided"),
    403: ("permission_error", None, "fake provider: permission denied"),
    404: ("not_found_error", None, "fake provider: not found"),
    429: ("requests", "rate_limit_exceeded", "fake provider: rate limit reached for requests"),
    500: ("server_error", None, "fake provider: the server had an error while processing your request"),
    503: ("server_error", None, "fake provider: the engine is currently overloaded"),
}
OPENAI_ERROR_4XX = ("invalid_request_error", None, "fake provider: request failed")
OPENAI_ERROR_5XX = ("server_error", None, "fake provider: server error")

# status -> (type, message) for the Anthropic error form.
ANTHROPIC_ERRORS = {
    400: ("invalid_request_error", "fake provider: invalid request"),
    401: ("authentication_error", "fake provider: invalid x-api-key"),
    403: ("permission_error", "fake provider: permission denied"),
    404: ("not_found_error", "fake provider: not found"),
    413: ("request_too_large", "fake provider: request exceeds the maximum allowed size"),
    429: ("rate_limit_error", "fake provider: rate limit exceeded"),
    500: ("api_error", "fake provider: internal server error"),
    503: ("api_error", "fake provider: service unavailable"),
    529: ("overloaded_error", "Overloaded"),
}
ANTHROPIC_ERROR_4XX = ("invalid_request_error", "fake provider: request failed")
ANTHROPIC_ERROR_5XX = ("api_error", "fake provider: internal server error")

OPENAI_RATELIMIT = {"limit": "500", "remaining": "0", "reset": "1s"}
ANTHROPIC_RATELIMIT = {"limit": "50", "remaining": "0", "reset_seconds": 1}


def openai_error(status, err):
    etype, code, message = OPENAI_ERRORS.get(
        status, OPENAI_ERROR_4XX if status < 500 else OPENAI_ERROR_5XX)
    return {"error": {"message": err.get("message", message),
                      "type": err.get("type", etype),
                      "param": err.get("param"),
                      "code": err.get("code", code)}}


def anthropic_error(status, err, request_id):
    etype, message = ANTHROPIC_ERRORS.get(
        status, ANTHROPIC_ERROR_4XX if status < 500 else ANTHROPIC_ERROR_5XX)
    return {"type": "error",
            "error": {"type": err.get("type", etype), "message": err.get("message", message)},
            "request_id": request_id}


def ratelimit_headers(provider):
    if provider == ANTHROPIC:
        rl = ANTHROPIC_RATELIMIT
        return {"anthropic-ratelimit-requests-limit": rl["limit"],
                "anthropic-ratelimit-requests-remaining": rl["remaining"],
                "anthropic-ratelimit-requests-reset": rfc3339(rl["reset_seconds"])}
    rl = OPENAI_RATELIMIT
    return {"x-ratelimit-limit-requests": rl["limit"],
            "x-ratelimit-remaining-requests": rl["remaining"],
            "x-ratelimit-reset-requests": rl["reset"]}


def stream_error_event(provider, err, seq):
    etype = err.get("type", "api_error" if provider == ANTHROPIC else "server_error")
    message = err.get("message", "fake provider: stream error")
    if provider == ANTHROPIC:
        return sse({"type": "error", "error": {"type": etype, "message": message}}, "error")
    if provider == RESPONSES:
        return sse({"type": "error", "code": err.get("code", etype), "message": message,
                    "param": None, "sequence_number": seq}, "error")
    return sse({"error": {"message": message, "type": etype, "param": None,
                          "code": err.get("code")}})
