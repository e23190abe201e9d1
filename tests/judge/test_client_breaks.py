"""The client rules' citations of the official Python SDKs, checked against the installed releases.

A ``client`` rule says which real clients break and how (``Breaks``), and in ``versions`` which releases
that was checked on. For every rule whose ``versions`` names an openai-python or anthropic-sdk-python
release, a claim below feeds an answer that breaks the rule (one of the rule cases, or one built the same
way) to that SDK through its public API (``support.sdk_clients``) and asserts the breakage the citation
describes: the exception the application gets, or the text, call or field it loses. A citation that stops
being true on a new release fails here, and says which rule to re-grade.

The earlier releases a ``versions`` names were checked the same way, with this file run by an interpreter that
has those releases installed ahead of the project's (openai 1.109.1 and 2.54.0, anthropic 0.75.0 and 1.17.0);
where one of them behaves otherwise, ``versions`` says how.
"""

from __future__ import annotations

import re

import pytest
from support import sdk_clients as sdk
from support.chat_rules import ROLE, S_SINGLE, S_TEXT, chunk, completion, sse
from support.sdk_claims import ANTHROPIC, OPENAI, SDKS, Answer, Claim, built, case, default_reader, delivers, raises

from harness.judge.rules import RULES
from harness.judge.rules.citations import CURRENT
from harness.judge.rules.registry import ENTRIES


def _expected_content(answer: Answer) -> str:
    return answer.scenario.expect.content or ""


def _first_call(reading: sdk.Reading) -> sdk.Call:
    return reading.first.calls[0]


CLAIMS: tuple[Claim, ...] = (
    # ----------------------------------------------------------------- openai-python, Chat Completions
    Claim("BODY-001", OPENAI, case("body-001-no-choices"), "the application's completion.choices fails",
          raises(r"^TypeError: .*'NoneType'")),
    Claim("BODY-001", OPENAI, case("body-001-error-with-200"), "an error report with 200 is no completion",
          raises(r"^TypeError: .*'NoneType'")),
    Claim("BODY-003", OPENAI, case("body-003-no-id"), "a call without id: nothing to answer it with",
          delivers(lambda r: not _first_call(r).id)),
    Claim("CALLS-001", OPENAI, case("calls-001-wrong-value"), "an altered argument reaches the application",
          delivers(lambda r: '"paris"' in _first_call(r).arguments)),
    Claim("CHUNK-001", OPENAI, case("chunk-001-not-json"), "JSONDecodeError", raises(r"^JSONDecodeError: Expecting value")),
    Claim("CHUNK-002", OPENAI, case("chunk-002-no-choices"), "TypeError without choices",
          raises(r"^TypeError: 'NoneType' object is not iterable")),
    Claim("CHUNK-002", OPENAI, case("chunk-002-wrong-object"), "a chunk of another object is skipped",
          delivers(lambda r: not r.first.content)),
    Claim("CHUNK-006", OPENAI, case("chunk-006-two-role-chunks"), "role assistantassistant",
          delivers(lambda r: r.first.role == "assistantassistant")),
    Claim("ERR-001", OPENAI, case("err-001-error-without-message"), "the upstream's message is lost",
          raises(r"^APIError: An error occurred during streaming$")),
    Claim("FAULT-001", OPENAI, case("fault-001-no-error-reached-client", "faults"), "a cut answer looks complete",
          lambda r, _: r.error is None),
    Claim("FAULT-002", OPENAI, case("fault-002-stream-error-forbidden", "faults"), "a plain APIError, not a status class",
          lambda r, _: type(r.error).__name__ == "APIError"),
    Claim("FAULT-003", OPENAI, case("fault-003-html-traceback-page", "faults"), "Error code: 502 alone, code and type None",
          lambda r, _: r.raised == "InternalServerError: Error code: 502"
          and r.attributes["code"] is None and r.attributes["type"] is None),
    Claim("FAULT-006", OPENAI, case("fault-006-held-back-text-lost", "faults"), "the held-back text is missing",
          lambda r, a: len(r.first.content or "") < len(_expected_content(a))),
    Claim("FAULT-007", OPENAI, case("http-001-refused"), "APIConnectionError", raises(r"^APIConnectionError: Connection error\.")),
    Claim("HTTP-001", OPENAI, case("http-001-refused"), "APIConnectionError", raises(r"^APIConnectionError: Connection error\.")),
    Claim("HTTP-002", OPENAI, case("http-002-timeout"), "APITimeoutError", raises(r"^APITimeoutError: Request timed out\.")),
    Claim("HTTP-003", OPENAI, case("http-003-status-500"), "the status's error class",
          raises(r"^InternalServerError: Error code: 500")),
    Claim("HTTP-005", OPENAI, case("http-005-json-for-stream"), "the stream ends empty without an error",
          delivers(lambda r: not r.choices), reader=sdk.openai_chunks),
    Claim("ISO-001", OPENAI, built(S_TEXT, sse(ROLE, chunk({"content": "Hello world. Order xqt1 shipped."}),
                                             chunk(finish="stop"))),
          "another conversation's text is shown", delivers(lambda r: "xqt1" in (r.first.content or ""))),
    Claim("ISO-005", OPENAI, case("iso-005-choices-swapped"), "choice 1's call lands in choices[0]",
          delivers(lambda r: "Bergen-1" in _first_call(r).arguments)),
    Claim("EQ-001", OPENAI, built(S_SINGLE, completion({"role": "assistant", "content": "Hello"}, "stop")),
          "the whole answer holds other text than the streamed one (Hello world)",
          delivers(lambda r: r.first.content == "Hello")),
    Claim("SDK-001", OPENAI, case("chunk-001-not-json"), "the SDK raises", raises(r"^JSONDecodeError")),
    Claim("SDK-002", OPENAI, case("calls-001-wrong-value"), "the accumulated call is not the expected one",
          delivers(lambda r: '"paris"' in _first_call(r).arguments)),
    Claim("SSE-001", OPENAI, case("sse-001-line-without-data-field"), "the line's payload (the role) never arrives",
          delivers(lambda r: r.first.role is None)),
    Claim("SSE-002", OPENAI, case("sse-002-missing-blank-line"), "JSONDecodeError: Extra data",
          raises(r"^JSONDecodeError: Extra data: line 2 column 1")),
    Claim("SSE-006", OPENAI, case("sse-006-chunk-after-done"), "text after [DONE] is lost",
          delivers(lambda r: "again" not in (r.first.content or ""))),
    Claim("SSE-008", OPENAI, case("sse-008-invalid-utf8"), "UnicodeDecodeError",
          raises(r"^UnicodeDecodeError: 'utf-8' codec can't decode byte")),
    Claim("SSE-009", OPENAI, case("sse-009-unterminated-last-event"), "the message has no finish_reason",
          delivers(lambda r: r.first.finish is None and r.first.content == "Hello world")),
    Claim("TEXT-001", OPENAI, case("text-001-different"), "the altered text is the message's content",
          delivers(lambda r: r.first.content == "Hello there")),
    Claim("TEXT-002", OPENAI, case("text-002-regex"), "the text that fails the pattern is the message's content",
          delivers(lambda r: r.first.content == "Well, Hello")),
    Claim("TEXT-003", OPENAI, case("text-003-leaked-closing-tag"), "the markup is the message's content, beside the call",
          delivers(lambda r: r.first.content == "</tools>" and len(r.first.calls) == 1)),
    Claim("TEXT-004", OPENAI, case("text-004-broken-call-dropped"), "neither the call nor its text",
          delivers(lambda r: not r.first.calls and not r.first.content)),
    Claim("TOOL-001", OPENAI, case("tool-001-no-index"), "RuntimeError without index",
          raises(r"^RuntimeError: Expected list delta entry to have an `index` key")),
    Claim("TOOL-001", OPENAI, case("tool-001-no-function"), "an assertion without function", raises(r"^AssertionError")),
    Claim("TOOL-003", OPENAI, case("tool-003-id-repeated"), "call_1call_1",
          delivers(lambda r: _first_call(r).id == "call_1call_1")),
    Claim("TOOL-003", OPENAI, case("tool-003-name-repeated"), "get_weatherget_weather",
          delivers(lambda r: _first_call(r).name == "get_weatherget_weather")),
    Claim("TOOL-003", OPENAI, case("tool-003-type-null"), "an assertion on type null", raises(r"^AssertionError")),
    Claim("TOOL-004", OPENAI, case("tool-004-starts-at-one"), "IndexError", raises(r"^IndexError: list index out of range")),
    Claim("TOOL-006", OPENAI, case("tool-006-unclosed-arguments"), "the application's json.loads fails",
          delivers(lambda r: sdk.arguments_error(_first_call(r).arguments) is not None)),
    Claim("TOOL-006", OPENAI, case("tool-006-unclosed-arguments"), "stream() raises ValidationError for a typed tool",
          raises(r"^ValidationError: .*Invalid JSON"), reader=sdk.openai_parse),
    Claim("TOOL-007", OPENAI, case("tool-007-placeholder-first"), "json.loads: Extra data",
          delivers(lambda r: (sdk.arguments_error(_first_call(r).arguments) or "").startswith("JSONDecodeError: Extra data"))),
    Claim("TOOL-008", OPENAI, case("tool-008-empty-arguments"), "stream() raises ValidationError for a typed tool",
          raises(r"^ValidationError: .*Invalid JSON: EOF while parsing a value"), reader=sdk.openai_parse),
    Claim("TOOL-008", OPENAI, case("tool-008-empty-arguments-single"), "parse() raises ValidationError for a typed tool",
          raises(r"^ValidationError: .*Invalid JSON: EOF while parsing a value"), reader=sdk.openai_parse),
    # ----------------------------------------------------------------- openai-python, Responses
    Claim("RESP-002", OPENAI, case("call-added-at-the-messages-index", "responses"), "Duplicate response output index",
          raises(r"^RuntimeError: Duplicate response output index 0\.")),
    Claim("RESP-003", OPENAI, case("arguments-delta-at-the-messages-index", "responses"),
          "a delta at a message's output_index fails the type assertion", raises(r"^AssertionError")),
    Claim("RESP-003", OPENAI, case("text-delta-before-its-item", "responses"), "a delta at an index with no item",
          raises(r"^(RuntimeError: Received a content event for output index 7 before receiving its output item"
                 r"|IndexError: list index out of range)")),
    Claim("RESP-003", OPENAI, case("text-done-at-the-calls-index", "responses"),
          "a text .done at a call's output_index fails the type assertion", raises(r"^AssertionError")),
    Claim("RESP-003", OPENAI, case("item-done-with-another-id", "responses"), "a done item with another id",
          raises(r"^RuntimeError: Completed output item identity changed\.")),
    Claim("RESP-005", OPENAI, case("call-ids-repeated", "responses"), "conflicting output identities",
          raises(r"^RuntimeError: Response snapshot has conflicting output identities\.")),
    Claim("RESP-005", OPENAI, case("call-without-call-id", "responses"), "a call without call_id: nothing to answer it with",
          delivers(lambda r: not _first_call(r).id)),
    Claim("RESP-007", OPENAI, case("completed-output-without-the-calls", "responses"), "the final response lacks the call",
          delivers(lambda r: not r.first.calls)),
    Claim("RESP-008", OPENAI, case("no-response-completed", "responses"), "no response.completed",
          raises(r"^RuntimeError: Didn't receive a `response\.completed` event\.")),
    Claim("RESP-009", OPENAI, case("call-added-at-the-messages-index", "responses"), "responses.stream() raises",
          raises(r"^(RuntimeError|AssertionError)\b")),
    Claim("RESP-012", OPENAI, case("completed-output-without-the-calls", "responses"), "the final response lacks the call",
          delivers(lambda r: not r.first.calls and r.first.content == "Let me check.")),
    # ----------------------------------------------------------------- anthropic-sdk-python
    Claim("ABODY-001", ANTHROPIC, case("abody-001-error-with-200", "anthropic"), "the loop over message.content fails",
          raises(r"^TypeError: 'NoneType' object is not iterable")),
    Claim("ABODY-003", ANTHROPIC, case("abody-003-input-as-string", "anthropic"), "ToolUseBlock.input is a str",
          delivers(lambda r: isinstance(_first_call(r).arguments, str))),
    Claim("AERR-001", ANTHROPIC, case("aerr-001-error-event-misnamed", "anthropic"), "a misnamed error is skipped",
          delivers(lambda r: r.first.content == "Hello")),
    Claim("AEV-001", ANTHROPIC, case("aev-001-data-only-event", "anthropic"), "an event without a name is skipped",
          delivers(lambda r: r.first.content == "Hello")),
    Claim("AEV-002", ANTHROPIC, case("aev-002-not-json", "anthropic"), "JSONDecodeError", raises(r"^JSONDecodeError")),
    Claim("AEV-002", ANTHROPIC, case("aev-002-array-data", "anthropic"), "TypeError on JSON that is no object",
          raises(r"^TypeError: Unexpected event runtime type")),
    Claim("AEV-004", ANTHROPIC, case("aev-004-block-before-message-start", "anthropic"), "IndexError",
          raises(r"^IndexError: list index out of range")),
    Claim("AEV-005", ANTHROPIC, case("aev-005-first-block-at-index-one", "anthropic"), "IndexError",
          raises(r"^IndexError: list index out of range")),
    Claim("AEV-007", ANTHROPIC, case("aev-007-text-delta-in-tool-block", "anthropic"), "the text delta is dropped",
          delivers(lambda r: "oops" not in (r.first.content or ""))),
    Claim("AEV-008", ANTHROPIC, case("aev-008-no-usage", "anthropic"), "AttributeError: output_tokens",
          raises(r"^AttributeError: 'NoneType' object has no attribute 'output_tokens'")),
    Claim("AEV-008", ANTHROPIC, case("aev-008-no-message-delta", "anthropic"), "no stop_reason",
          delivers(lambda r: r.first.finish is None)),
    Claim("AEV-010", ANTHROPIC, case("aev-010-invalid-json", "anthropic"), "Unable to parse tool parameter JSON",
          raises(r"^ValueError: Unable to parse tool parameter JSON from model")),
    Claim("AEV-011", ANTHROPIC, case("aev-011-input-as-string", "anthropic"), "the input stays a str",
          delivers(lambda r: isinstance(_first_call(r).arguments, str))),
    Claim("ASDK-001", ANTHROPIC, case("aev-002-not-json", "anthropic"), "the SDK raises", raises(r"^JSONDecodeError")),
    Claim("ASDK-002", ANTHROPIC, case("calls-001-wrong-value", "anthropic"), "the accumulated input is not the expected one",
          delivers(lambda r: _first_call(r).arguments == {"city": "paris", "unit": "celsius"})),
    Claim("FAULT-001", ANTHROPIC, case("fault-001-anthropic-no-error", "faults"), "a cut answer looks complete",
          lambda r, _: r.error is None),
    Claim("FAULT-007", ANTHROPIC, case("http-001-refused"), "APIConnectionError",
          raises(r"^APIConnectionError: Connection error\."), reader=sdk.anthropic_body),
    Claim("HTTP-001", ANTHROPIC, case("http-001-refused"), "APIConnectionError",
          raises(r"^APIConnectionError: Connection error\."), reader=sdk.anthropic_body),
    Claim("HTTP-003", ANTHROPIC, case("http-003-anthropic-overloaded", "anthropic"), "the status's error class",
          raises(r"^OverloadedError: Error code: 529")),
    Claim("ISO-001", ANTHROPIC, case("text-001-different", "anthropic"), "the text that arrived is shown",
          delivers(lambda r: r.first.content != "Hello world")),
    Claim("SSE-002", ANTHROPIC, case("sse-002-glued-events", "anthropic"), "JSONDecodeError: Extra data",
          raises(r"^JSONDecodeError: Extra data: line 2 column 1")),
)


def names_current(versions: str, client: str) -> bool:
    """Whether a citation's ``versions`` says it was checked on the current release of ``client``: one of its
    ``;``-separated parts names the client and the release (``openai-python 2.54.0 and 3.57.0 (current)``)."""
    release = CURRENT[client].split()[-1]
    return any(client in part and re.search(rf"(?<![\d.]){re.escape(release)}(?![\d.])", part)
               for part in versions.split(";"))


@pytest.mark.parametrize("claim", CLAIMS, ids=[c.id for c in CLAIMS])
def test_the_current_release_breaks_as_cited(claim: Claim) -> None:
    answer = claim.answer()
    reader = claim.reader or default_reader(answer.exchange)
    reading = reader(answer.exchange)
    assert claim.holds(reading, answer), (
        f"{claim.rule}: the citation says {claim.client} {_installed(claim.client)} breaks ({claim.says}), but it "
        f"read the answer as: raised {reading.raised or 'nothing'}; {reading.choices}. Re-grade the rule: say in "
        f"`versions` which releases break, or move it to `spec`."
    )


def _installed(client: str) -> str:
    import anthropic
    import openai

    return {OPENAI: openai.__version__, ANTHROPIC: anthropic.__version__}[client]


def _cited(client: str) -> list[str]:
    """The client rules whose ``versions`` say they were checked on the current release of ``client``."""
    return [i for i in RULES if (b := ENTRIES[i].rule.breaks) is not None and names_current(b.versions, client)]


@pytest.mark.parametrize("client", SDKS)
def test_every_release_a_citation_names_is_checked_here(client: str) -> None:
    claimed = {c.rule for c in CLAIMS if c.client == client}
    assert set(_cited(client)) - claimed == set()


@pytest.mark.parametrize("client", SDKS)
def test_every_claim_is_on_a_rule_that_names_the_release(client: str) -> None:
    claimed = {c.rule for c in CLAIMS if c.client == client}
    assert claimed - set(_cited(client)) == set()
    assert all(client in ENTRIES[c.rule].rule.breaks.clients for c in CLAIMS  # type: ignore[union-attr]
               if c.client == client)


# Client rules citing a Python SDK whose breakage is another rule's: the answer that differs breaks its client
# the way the rule it breaks says, and that rule's claims check it.
AS_THE_RULE_IT_BREAKS = frozenset({"ISO-002", "ISO-003", "ISO-004"})


def test_every_client_rule_citing_a_python_sdk_says_which_releases_break() -> None:
    unchecked = [i for i in RULES
                 if (b := ENTRIES[i].rule.breaks) is not None and set(b.clients) & set(SDKS)
                 and i not in AS_THE_RULE_IT_BREAKS
                 and not any(names_current(b.versions, c) for c in b.clients if c in SDKS)]
    assert unchecked == []
