"""Chat-completion answers that break the rules on the XML-tool client profile (VTC), case by case."""

from __future__ import annotations

import pytest
from support.chat_rules import (
    Case,
    INVOKE_READ,
    ROLE,
    S_XML_CLIENT,
    S_XML_CLIENT_WRITE,
    XML_CLIENT,
    XML_READ,
    XML_WRITE,
    args,
    case,
    chunk,
    failure_text,
    judge_case,
    own_excerpt,
    replace,
    shorten,
    sse,
    start,
    xml_client_stream,
)

BROKEN: list[Case] = [
    # xml-client (rule ids VTC-00N)
    case(
        "vtc-001-structured-calls",
        S_XML_CLIENT,
        sse(ROLE, chunk({"content": XML_READ}), chunk(start(name="read_file", args='{"path": "src/main.py"}')), chunk(finish="stop")),
        {"VTC-001"},
        profile=XML_CLIENT,
    ),
    case("vtc-002-wrong-path", S_XML_CLIENT, xml_client_stream(XML_READ.replace("main.py", "main.rs")), {"VTC-002"}, profile=XML_CLIENT),
    case("vtc-002-json-quoted-value", S_XML_CLIENT, xml_client_stream(XML_READ.replace("src/main.py", '"src/main.py"')), {"VTC-002"}, profile=XML_CLIENT),
    case("vtc-002-call-missing", S_XML_CLIENT, xml_client_stream("I will read it."), {"VTC-002"}, profile=XML_CLIENT),
    case(
        "vtc-002-unclosed",
        S_XML_CLIENT,
        xml_client_stream(XML_READ.removesuffix("</read_file>")),
        {"VTC-002"},
        profile=XML_CLIENT,
    ),
    case(
        "vtc-003-entity-escaped",
        S_XML_CLIENT_WRITE,
        xml_client_stream(XML_WRITE.replace("<p>1 < 2 &", "&lt;p&gt;1 &lt; 2 &amp;", 1)),
        {"VTC-003", "VTC-002"},
        profile=XML_CLIENT,
    ),
    case("vtc-004-finish-tool-calls", S_XML_CLIENT, xml_client_stream(XML_READ, finish="tool_calls"), {"VTC-004"}, profile=XML_CLIENT),
    case("xml-client-text-001-text-lost", S_XML_CLIENT, xml_client_stream(XML_READ.replace("I will read it.", "")), {"TEXT-001"}, profile=XML_CLIENT),
    case(
        "xml-client-text-003-stray-closing-tag",  # the call's own </parameter> comes first in the content
        S_XML_CLIENT,
        sse(ROLE, chunk({"content": "I will read it.\n\n"}), chunk({"content": INVOKE_READ}),
            chunk({"content": " </parameter>"}), chunk(finish="stop")),
        {"TEXT-001", "TEXT-003"},
        profile=XML_CLIENT,
    ),
]



@pytest.mark.parametrize("c", BROKEN, ids=[c.id for c in BROKEN])
def test_rule_case(c: Case) -> None:
    judge_case(c)


def test_failure_messages_are_readable() -> None:
    assert "&lt;" in failure_text(next(c for c in BROKEN if c.id == "vtc-003-entity-escaped"))


# (case, rule, the excerpt the rule itself gives)
OWN_EXCERPTS = [
    ("xml-client-text-003-stray-closing-tag", "TEXT-003", "I will read it.\n\n </parameter>"),
    ("vtc-002-wrong-path", "VTC-002", shorten(XML_READ.replace("main.py", "main.rs"), 300)),
]


@pytest.mark.parametrize(("case_id", "rule_id", "excerpt"), OWN_EXCERPTS, ids=[f"{c}-{r}" for c, r, _ in OWN_EXCERPTS])
def test_a_located_finding_keeps_its_own_excerpt(case_id: str, rule_id: str, excerpt: str) -> None:
    assert own_excerpt(next(c for c in BROKEN if c.id == case_id), rule_id) == excerpt
