"""No secret in anything the harness writes or prints.

Credentials are planted everywhere a user's would be: ``--proxy-header`` values (an
``Authorization: Bearer sk-...``, an ``x-api-key``, a header of any other name), a key in
a request body field, a key pasted in a message, a key in a URL query. Real runs then
write every output there is (``--record``, the JSON and Markdown reports, junit XML,
failure output of a broken proxy, ``replay`` and ``import``), and no file written and
no line printed holds one of them. The redactor itself is checked case by case below.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpcore._backends.anyio  # noqa: F401  (see tests/pytest/test_plugin.py)
import httpcore._backends.sync  # noqa: F401
import pytest
import yaml
from click.testing import CliRunner
from mutants import MUTANTS

from harness.cli.main import main
from harness.core.dialects.clients import OPENAI_CLIENT
from harness.core.exchange import Exchange, RecordedRequest
from harness.core.redact import REDACTED, Redactor, redact_headers, redact_json, redact_text, redact_url
from harness.report.record import har
from mock_backends.app import create_app as create_mock
from support.library import load_library

ServeFn = Callable[[Any], Any]
LIBRARY = {s.id: s for s in load_library()}

AUTH_KEY = "sk-test-PLANTED0a1b2c3d4e5f6a7b8c9d"  # Authorization: Bearer ...
X_API_KEY = "xk-PLANTED-4f5e6d7c8b9a0f1e2d3c"  # x-api-key (not shaped like any known key)
TENANT = "tenant-PLANTED-5566778899"  # a header whose name says nothing: the harness knows it is the user's
BODY_KEY = "body-PLANTED-a1b2c3d4e5f6"  # a request body's api_key field
PASTED_KEY = "sk-ant-api03-PLANTEDpasted0123456789"  # pasted in a message
QUERY_KEY = "query-PLANTED-0f9e8d7c6b5a"  # a URL's ?key=
URL_PASSWORD = "urlpass-PLANTED-77aa88bb99"  # the proxy URL's user:password@
PLANTED = (AUTH_KEY, X_API_KEY, TENANT, BODY_KEY, PASTED_KEY, QUERY_KEY, URL_PASSWORD)
HEADERS = (f"Authorization: Bearer {AUTH_KEY}", f"x-api-key: {X_API_KEY}", f"X-Tenant: {TENANT}")


def _planted_scenario(base: str, new_id: str) -> str:
    """A bundled scenario whose request carries a key in a field and one pasted in its message."""
    source = LIBRARY[base].path
    assert source is not None
    data = yaml.safe_load(Path(source).read_text("utf-8"))
    data["id"] = new_id
    request = data["client"]["request"]
    request["api_key"] = BODY_KEY
    request["messages"][0]["content"] += f" (my key is {PASTED_KEY})"
    return yaml.safe_dump(data, sort_keys=False)


def _library(root: Path, *cases: tuple[str, str]) -> Path:
    folder = root / "scenarios" / "planted"
    folder.mkdir(parents=True)
    for base, new_id in cases:
        (folder / f"{new_id}.yaml").write_text(_planted_scenario(base, new_id), "utf-8")
    return folder.parent


def _leaks(root: Path, *printed: str) -> list[str]:
    """Where a planted secret shows: file paths under ``root``, or 'output'."""
    found: list[str] = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        if path.suffix == ".yaml" and path.parent.name == "planted":
            continue  # the scenarios planted them
        text = path.read_bytes().decode("utf-8", "replace")
        found += [f"{path.relative_to(root)}: {s}" for s in PLANTED if s in text]
    for n, text in enumerate(printed):
        found += [f"output {n}: {s}" for s in PLANTED if s in text]
    return found


def _written(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def _proxy_headers() -> list[str]:
    return [arg for header in HEADERS for arg in ("--conformance-proxy-header", header)]


@pytest.fixture(autouse=True)
def _quiet_ini(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")


def test_a_passing_run_writes_no_secret(pytester: pytest.Pytester) -> None:
    """The bundled reference proxy forwards the headers to the mock: the upstream entries
    of the HAR files hold them too, and are redacted like the client's."""
    folder = _library(pytester.path, ("plain-native-single", "planted-streamed"),
                      ("plain-text-non-stream", "planted-whole"))
    out = pytester.path / "out"
    result = pytester.runpytest(
        "--conformance", "--conformance-scenarios", str(folder), "--conformance-upstream-dialect", "natural",
        *_proxy_headers(), "--conformance-record", str(out / "record"), "--conformance-report-json",
        str(out / "r.json"), "--conformance-report-md", str(out / "r.md"), f"--junitxml={out / 'junit.xml'}",
        "-k", "planted", "-rA", "-v",
    )
    result.assert_outcomes(passed=2)
    assert {"record/har/planted-streamed.har", "record/har/planted-whole.har", "record/report.html", "r.json",
            "r.md", "junit.xml"} <= set(_written(out))
    log = json.loads((out / "record" / "har" / "planted-streamed.har").read_text("utf-8"))["log"]
    client, upstream = log["entries"][0]["request"], log["entries"][1]["request"]
    for request in (client, upstream):  # the shape stays readable
        headers = {h["name"].lower(): h["value"] for h in request["headers"]}
        assert headers["authorization"] == f"Bearer {REDACTED}" and headers["x-api-key"] == REDACTED
        assert headers["x-tenant"] == REDACTED
    assert json.loads(client["postData"]["text"])["api_key"] == REDACTED
    assert _leaks(pytester.path, result.stdout.str(), result.stderr.str()) == []


def test_a_failing_run_prints_and_writes_no_secret(pytester: pytest.Pytester, servers: ServeFn) -> None:
    """A broken proxy (a mutant that drops ``data: [DONE]``): the failure's transcript, in
    the terminal, the junit XML, the record folder and the reports, holds no secret,
    also not the password in the proxy URL; nor does the grouped view of the ``run``
    command, with its replay command."""
    folder = _library(pytester.path, ("plain-native-single", "planted-streamed"))
    mock_url = servers(create_mock()).url
    mutant = next(m for m in MUTANTS if m.id == "no-done")
    served = servers(mutant.app(f"{mock_url}/v1")).url
    proxy_url = served.replace("http://", f"http://planted:{URL_PASSWORD}@", 1) + "/v1"
    out = pytester.path / "out"
    grouped = pytester.runpytest("--conformance-only", "-q", "--conformance-proxy-url", proxy_url,
                                 "--conformance-mock-url", mock_url, "--conformance-strict",
                                 "--conformance-scenarios", str(folder), *_proxy_headers())
    grouped.assert_outcomes(failed=1)
    grouped.stdout.fnmatch_lines(["*1 failed scenario(s), one cause*", "*replay: *"])
    result = pytester.runpytest(
        "--conformance-proxy-url", proxy_url, "--conformance-mock-url", mock_url, "--conformance-strict",
        "--conformance-scenarios", str(folder), *_proxy_headers(), "--conformance-record", str(out / "record"),
        "--conformance-report-json", str(out / "r.json"), "--conformance-report-md", str(out / "r.md"),
        "--conformance-write-known-failures", str(out / "known.yaml"), f"--junitxml={out / 'junit.xml'}",
        "--tb=long", "-rA",
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*SSE-004*", "*answer as received*"])
    assert "record/failures/planted-streamed.txt" in _written(out)
    assert "SSE-004" in (out / "junit.xml").read_text("utf-8")
    assert _leaks(pytester.path, result.stdout.str(), result.stderr.str(), grouped.stdout.str(),
                  grouped.stderr.str()) == []


def test_replay_prints_no_secret() -> None:
    """``replay --proxy-header``: the answer and the verdicts, the headers' values redacted."""
    args = ["replay", "plain-native-single"] + [a for h in HEADERS for a in ("--proxy-header", h)]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert "verdict: every applicable rule holds" in result.output, result.output
    assert _leaks(Path("/nonexistent"), result.output) == []


def test_import_writes_no_secret(tmp_path: Path) -> None:
    """A HAR capture holding keys in its headers, its request body, its URL and a message."""
    capture = tmp_path / "planted.har"
    body = {"model": "gpt-4o-mini", "stream": False, "api_key": BODY_KEY,
            "messages": [{"role": "user", "content": f"Hi, my key is {PASTED_KEY}"}]}
    answer = {"id": "c1", "object": "chat.completion", "model": "gpt-4o-mini",
              "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello"}, "finish_reason": "stop"}]}
    entry = {"request": {"method": "POST", "url": f"https://llm.example/v1/chat/completions?key={QUERY_KEY}",
                         "headers": [{"name": "Authorization", "value": f"Bearer {AUTH_KEY}"},
                                     {"name": "x-api-key", "value": X_API_KEY}],
                         "postData": {"mimeType": "application/json", "text": json.dumps(body)}},
             "response": {"status": 200, "content": {"mimeType": "application/json", "text": json.dumps(answer)}}}
    capture.write_text(json.dumps({"log": {"version": "1.2", "entries": [entry]}}), "utf-8")
    out = tmp_path / "out"
    from harness.cli.importing import import_command

    result = CliRunner().invoke(import_command, [str(capture), "-o", f"{out}/", "--id", "planted-import"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert _written(out) == ["planted-import.yaml"]
    assert "dropped credential header(s) Authorization, X-Api-Key" in result.output
    text = (out / "planted-import.yaml").read_text("utf-8")
    assert "Hi, my key is [redacted]" in text and "api_key" not in text
    assert _leaks(out, result.output) == []


# --------------------------------------------------------------------------- the redactor

KNOWING = Redactor.for_headers({"Authorization": f"Bearer {AUTH_KEY}", "X-Tenant": TENANT})


@pytest.mark.parametrize(("text", "expected"), [
    (f"Bearer {AUTH_KEY}", f"Bearer {REDACTED}"),
    (f"the tenant is {TENANT}.", f"the tenant is {REDACTED}."),
    ("key sk-proj-abcdefghijklmnop0123 here", f"key {REDACTED} here"),
    ("sk-ant-api03-abcdefghij0123456789", REDACTED),
    ("AIzaSyA1234567890abcdefghijklmnopqrstuv", REDACTED),
    ("ghp_abcdefghijklmnopqrstuvwxyz0123456789", REDACTED),
    ("xoxb-123456789012-abcdefghij", REDACTED),
    ("AKIAIOSFODNN7EXAMPLE", REDACTED),
    ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl", REDACTED),
    ("authorization: bearer abc.def-ghi_jkl", f"authorization: bearer {REDACTED}"),
    ("Basic dXNlcjpwYXNzd29yZA==", f"Basic {REDACTED}"),
    ("GET https://h/v1/models?api_key=abc123&limit=2", f"GET https://h/v1/models?api_key={REDACTED}&limit=2"),
    ("see https://user:pass@h.example/v1", f"see https://{REDACTED}@h.example/v1"),
    (f"Bearer {REDACTED}", f"Bearer {REDACTED}"),  # redacting twice changes nothing
    # Not secrets: prose and the usual request fields stay as they are.
    ("basic functionality of a task-runner", "basic functionality of a task-runner"),
    ('{"max_tokens": 100, "model": "gpt-4o"}', '{"max_tokens": 100, "model": "gpt-4o"}'),
    ("the mock at http://127.0.0.1:9000/v1?stream=1", "the mock at http://127.0.0.1:9000/v1?stream=1"),
])
def test_text(text: str, expected: str) -> None:
    assert KNOWING.text(text) == expected


@pytest.mark.parametrize(("headers", "expected"), [
    ({"Authorization": "Bearer abcdefgh"}, {"Authorization": f"Bearer {REDACTED}"}),
    ({"Proxy-Authorization": "Basic Zm9vOmJhcg=="}, {"Proxy-Authorization": f"Basic {REDACTED}"}),
    ({"x-api-key": "k", "api-key": "k", "x-goog-api-key": "k"},
     {"x-api-key": REDACTED, "api-key": REDACTED, "x-goog-api-key": REDACTED}),
    ({"Cookie": "a=b", "Set-Cookie": "s=t; Path=/"}, {"Cookie": REDACTED, "Set-Cookie": REDACTED}),
    ({"X-Session-Token": "t", "X-Client-Secret": "s", "X-Auth-User": "u"},
     {"X-Session-Token": REDACTED, "X-Client-Secret": REDACTED, "X-Auth-User": REDACTED}),
    ({"X-Tenant": TENANT, "Content-Type": "application/json"},
     {"X-Tenant": REDACTED, "Content-Type": "application/json"}),
    ({"Authorization": ""}, {"Authorization": ""}),
])
def test_headers(headers: dict[str, str], expected: dict[str, str]) -> None:
    assert KNOWING.headers(headers) == expected


@pytest.mark.parametrize(("url", "expected"), [
    ("https://h/v1/chat/completions?key=abc", f"https://h/v1/chat/completions?key={REDACTED}"),
    ("https://h/v1?api_key=a&token=b&access_token=c&model=m",
     f"https://h/v1?api_key={REDACTED}&token={REDACTED}&access_token={REDACTED}&model=m"),
    ("https://h/v1?apiKey=a", f"https://h/v1?apiKey={REDACTED}"),
    ("https://u:p@h/v1", f"https://{REDACTED}@h/v1"),
    (f"https://h/v1/{TENANT}/chat", f"https://h/v1/{REDACTED}/chat"),
    ("http://127.0.0.1:8080/v1/chat/completions", "http://127.0.0.1:8080/v1/chat/completions"),
])
def test_url(url: str, expected: str) -> None:
    assert KNOWING.url(url) == expected


@pytest.mark.parametrize(("value", "expected"), [
    ({"api_key": "a", "apiKey": "b", "token": "c", "secret": "d", "password": "e", "authorization": "f"},
     {k: REDACTED for k in ("api_key", "apiKey", "token", "secret", "password", "authorization")}),
    ({"access_token": "a", "client_secret": "b", "nested": [{"x-api-key": "c"}]},
     {"access_token": REDACTED, "client_secret": REDACTED, "nested": [{"x-api-key": REDACTED}]}),
    ({"messages": [{"role": "user", "content": f"key {AUTH_KEY}"}]},
     {"messages": [{"role": "user", "content": f"key {REDACTED}"}]}),
    ({"max_tokens": 10, "max_completion_tokens": 5, "token": None, "usage": {"total_tokens": 3}},
     {"max_tokens": 10, "max_completion_tokens": 5, "token": None, "usage": {"total_tokens": 3}}),
    (["sk-abcdefghij0123", 1, True], [REDACTED, 1, True]),
])
def test_json(value: Any, expected: Any) -> None:
    assert KNOWING.json(value) == expected


@pytest.mark.parametrize(("body", "expected"), [
    ('{"api_key": "abc", "model": "m"}', json.dumps({"api_key": REDACTED, "model": "m"})),
    ('{ "model": "m" }', '{ "model": "m" }'),  # kept as it is when nothing is secret
    ('data: {"token": "t"}\n\ndata: [DONE]\n\n', f'data: {{"token": "{REDACTED}"}}\n\ndata: [DONE]\n\n'),
    (f"event: x\ndata: {TENANT}\n", f"event: x\ndata: {REDACTED}\n"),
    ("not json {", "not json {"),
])
def test_body(body: str, expected: str) -> None:
    assert KNOWING.body(body) == expected


def test_known_values_are_pieces_of_the_headers_long_enough_to_be_keys() -> None:
    redactor = Redactor.for_headers([("Authorization", "Bearer abcdefgh12"), ("X-Org", "acme"),
                                     ("Cookie", "session=0123456789; theme=dark")])
    assert redactor.known == ("session=0123456789; theme=dark", "0123456789", "abcdefgh12")  # longest first


def test_module_functions_know_no_value() -> None:
    assert redact_text(TENANT) == TENANT and redact_text(f"Bearer {TENANT}") == f"Bearer {REDACTED}"
    assert redact_headers({"X-Tenant": TENANT}) == {"X-Tenant": TENANT}
    assert redact_url("https://h/?token=a") == f"https://h/?token={REDACTED}"
    assert redact_json({"password": "p"}) == {"password": REDACTED}


def test_a_har_file_redacts_upstream_queries_and_undecodable_bodies() -> None:
    """What the proxy sent the mock: a query holding a key, a body that is no UTF-8."""
    recorded = RecordedRequest("POST", "/v1/chat/completions", f"key={QUERY_KEY}&alt=sse",
                               {"authorization": f"Bearer {AUTH_KEY}"}, {"model": "m"},
                               raw_body=None, received_at=0.0)
    exchange = Exchange(scenario_id="s", profile=OPENAI_CLIENT, stream=True, request_headers={"X-Tenant": TENANT},
                        request_body={"token": "t"}, status=200, raw=b"\xff" + TENANT.encode(), upstream=(recorded,))
    log = har([("streamed", exchange)], proxy_url="http://p/v1", mock_url="http://m", redactor=KNOWING)
    text = json.dumps(log)
    assert all(s not in text for s in PLANTED), text
    assert f"key={REDACTED}&alt=sse" in text
    content = log["log"]["entries"][0]["response"]["content"]
    assert content["encoding"] == "base64" and base64.b64decode(content["text"]) == b"\xff" + REDACTED.encode()
