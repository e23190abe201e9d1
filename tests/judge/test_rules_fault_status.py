"""FAULT-001 takes a status the client's official SDK raises the same error class for.

llm-interactive-proxy answered the upstream's 500 with 502: openai-python 3.57.0 raises
InternalServerError for both and retries both, so no client acts differently; the Anthropic
SDK has classes of its own for 503, 504 and 529, so LiteLLM's 500 for an upstream 529 still fails.
"""

from __future__ import annotations

import json

import httpx
import pytest

from harness.core.dialects.clients import CLIENTS
from harness.core.dialects.anthropic import ANTHROPIC
from harness.core.dialects.openai import OPENAI
from harness.core.dialects.responses import RESPONSES
from harness.core.dialects.base import WireDialect
from harness.core.exchange import Exchange
from harness.judge.rules import Options, evaluate
from support.library import load_library
from support.sdk_http import anthropic_sdk, openai_sdk

LIBRARY = {s.id: s for s in load_library()}
BODY = json.dumps({"error": {"message": "upstream failed", "type": "server_error", "param": None, "code": None}})

# (scenario, client profile, the proxy's status, FAULT-001 fails)
CASES: dict[str, tuple[str, str, int, bool]] = {
    "openai-500-as-502": ("faults-openai-http-500", "openai", 502, False),
    "openai-503-as-500": ("faults-openai-http-503", "openai", 500, False),
    "openai-500-as-400": ("faults-openai-http-500", "openai", 400, True),
    "openai-429-as-503": ("faults-openai-http-429-retry-after", "openai", 503, True),
    "openai-401-as-503": ("faults-openai-http-401", "openai", 503, True),
    "anthropic-500-as-502": ("faults-anthropic-http-500", "anthropic", 502, False),
    "anthropic-529-as-500": ("faults-anthropic-http-529-overloaded", "anthropic", 500, True),
    "anthropic-503-as-500": ("faults-anthropic-http-503", "anthropic", 500, True),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_status_the_sdk_reads_alike_passes(case: str) -> None:
    scenario_id, profile_name, status, fails = CASES[case]
    scenario, profile = LIBRARY[scenario_id], CLIENTS[profile_name]
    answer = Exchange(scenario_id=scenario.id, profile=profile, stream=False,
                      request_body={**scenario.client.request, "stream": False}, request_headers={}, status=status,
                      response_headers={"content-type": "application/json"}, raw=BODY.encode())
    said = [f for f in evaluate(scenario, answer, Options(profile=profile)) if f.rule_id == "FAULT-001"]
    assert bool(said) is fails, said


@pytest.mark.parametrize("dialect", [OPENAI, RESPONSES, ANTHROPIC], ids=lambda d: d.name)
def test_the_classes_are_the_sdks_own(dialect: WireDialect) -> None:
    """``sdk_error`` says what the installed official SDK raises, status by status."""
    if dialect is ANTHROPIC:
        client: object = anthropic_sdk(api_key="k", base_url="http://127.0.0.1:9")
    else:
        client = openai_sdk(api_key="k", base_url="http://127.0.0.1:9")
    for status in (400, 401, 402, 403, 404, 408, 409, 413, 422, 429, 500, 501, 502, 503, 504, 529):
        response = httpx.Response(status, content=BODY.encode(), request=httpx.Request("POST", "http://x/v1"))
        raised = type(client._make_status_error_from_response(response)).__name__  # type: ignore[attr-defined]
        assert dialect.sdk_error(status) == (None if raised == "APIStatusError" else raised), status
