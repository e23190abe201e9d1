"""The backend's own error page, relayed unchanged with its status, is what the client would read from the
backend itself: no client rule fails it. A page the proxy makes up still fails FAULT-003."""

from __future__ import annotations

import pytest

from harness.core.dialects.clients import CLIENTS
from harness.core.exchange import Exchange
from harness.judge.rules import Options, evaluate
from support.library import load_library

PAGE_502 = {s.id: s for s in load_library()}["faults-openai-http-502-html"]
OWN_PAGE = "<html><body><h1>500 Internal Server Error</h1><pre>Traceback ...</pre></body></html>"


@pytest.mark.parametrize(("status", "body", "fails"), [
    (502, str(PAGE_502.backend.fault.body if PAGE_502.backend.fault else ""), False),  # relayed unchanged
    (500, str(PAGE_502.backend.fault.body if PAGE_502.backend.fault else ""), True),  # not with its own status
    (502, OWN_PAGE, True),  # a page the proxy made
])
def test_a_relayed_error_page_is_the_backends_not_the_proxys(status: int, body: str, fails: bool) -> None:
    answer = Exchange(scenario_id=PAGE_502.id, profile=CLIENTS["openai"], stream=True,
                      request_body=dict(PAGE_502.client.request), request_headers={}, status=status,
                      response_headers={"content-type": "text/html"}, raw=body.encode(), survived=True)
    rules = {f.rule_id for f in evaluate(PAGE_502, answer, Options(profile=CLIENTS["openai"]))}
    assert ("FAULT-003" in rules) is fails, rules
