"""The rescue parser against a table of cases, the scenario library, and its contracts.

Every case runs whole, in 1-character frames and in random splits; all must give the
same visible text and calls, and the events must keep the event contract.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from typing import Any

import pytest

from harness.scenario import ContentFrame, RawFrame, Scenario, ToolCallFrame, load_library
from reference_proxy.rescue import scanner
from reference_proxy.rescue.families.code import MAX_FENCE_LINE
from reference_proxy.rescue.family import Call
from reference_proxy.rescue import (
    ArgumentsDelta,
    Rescuer,
    Text,
    ToolCallEnd,
    ToolCallStart,
    ToolSpec,
    collect,
    rescue_text,
    tools_from_request,
)
from test_rescue_support import (
    ALL,
    Calls,
    check_events,
    feed_frames,
    folded,
    outcome,
    random_frames,
    same_calls,
)


@dataclass(frozen=True)
class Case:
    id: str
    text: str
    text_out: str | None  # None: the input comes back unchanged
    calls: Calls = field(default_factory=list)
    tools: tuple[ToolSpec, ...] = ALL

    @property
    def visible(self) -> str:
        return self.text if self.text_out is None else self.text_out


def hermes(name: str, arguments: Any, key: str = "arguments") -> str:
    return "<tool_call>\n" + json.dumps({"name": name, key: arguments}) + "\n</tool_call>"


def invoke(name: str, **params: str) -> str:
    body = "".join(f'<parameter name="{k}">{v}</parameter>\n' for k, v in params.items())
    return f'<invoke name="{name}">\n{body}</invoke>'


def coder(name: str, **params: str) -> str:
    body = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in params.items())
    return f"<tool_call>\n<function={name}>\n{body}</function>\n</tool_call>"


def harmony(name: str, arguments: Any) -> str:
    return (f"<|start|>assistant<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>"
            + json.dumps(arguments) + "<|call|>")


def deepseek_v3(name: str, arguments: Any) -> str:
    return f"<｜tool▁call▁begin｜>function<｜tool▁sep｜>{name}\n```json\n{json.dumps(arguments)}\n```<｜tool▁call▁end｜>"


W_PARIS = ("get_weather", {"city": "Paris"})

CASES = [
    # ---------------------------------------------------------------- Qwen <tools>
    Case(
        "tools-single",
        'Hi <tools>{"name": "get_weather", "arguments": {"city": "Paris"}}</tools> there',
        "Hi  there",
        [W_PARIS],
    ),
    Case(
        "tools-one-per-line",
        '<tools>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
        '{"name": "read_file", "arguments": {"path": "a.txt"}}\n</tools>',
        "",
        [W_PARIS, ("read_file", {"path": "a.txt"})],
    ),
    Case(
        "tools-array",
        '<tools>[{"name": "get_weather", "arguments": {"city": "Paris"}}, '
        '{"name": "read_file", "arguments": {"path": "b"}}]</tools>',
        "",
        [W_PARIS, ("read_file", {"path": "b"})],
    ),
    Case(
        "tools-closing-tag-in-string",
        '<tools>{"name": "read_file", "arguments": {"path": "</tools>"}}</tools>',
        "",
        [("read_file", {"path": "</tools>"})],
    ),
    Case("tools-undeclared", '<tools>{"name": "nope", "arguments": {}}</tools>', None),
    Case("tools-prose", "Put the JSON between <tools> and </tools> tags.", None),
    Case("tools-unclosed", '<tools>{"name": "get_weather", "arguments": {"city": "Paris"}}', None),
    Case("tools-one-bad-of-two", '<tools>\n{"name": "get_weather", "arguments": {}}\n{"name": "x"}\n</tools>', None),
    # ---------------------------------------------------------------- bare JSON
    Case("bare-whole", '{"name": "get_weather", "arguments": {"city": "Paris"}}', "", [W_PARIS]),
    Case(
        "bare-lines-with-prose",
        'Checking.\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
        '{"name": "read_file", "parameters": {"path": "b"}}\nDone.',
        "Checking.\nDone.",
        [W_PARIS, ("read_file", {"path": "b"})],
    ),
    Case(
        "bare-two-on-one-line",
        '{"name": "get_weather", "arguments": {"city": "Paris"}} {"name": "read_file", "arguments": {"path": "b"}}',
        "",
        [W_PARIS, ("read_file", {"path": "b"})],
    ),
    Case(
        "bare-pretty-printed",
        'Sure:\n{\n  "name": "get_weather",\n  "arguments": {\n    "city": "Paris"\n  }\n}\n',
        "Sure:\n",
        [W_PARIS],
    ),
    Case("bare-array", '[{"name": "get_weather", "arguments": {"city": "Paris"}}]', "", [W_PARIS]),
    Case(
        "bare-indented",
        'Result:\n    {"name": "read_file", "arguments": {"path": "x"}}',
        "Result:\n    ",
        [("read_file", {"path": "x"})],
    ),
    Case(
        "bare-arguments-as-string",
        '{"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}',
        "",
        [W_PARIS],
    ),
    Case("bare-no-arguments", '{"name": "get_weather"}', "", [("get_weather", {})]),
    Case("bare-namespaced-name", '{"name": "ns:tool:read_file", "arguments": {}}', "", [("read_file", {})]),
    Case(
        "bare-undeclared-in-prose",
        'Write {"name": "nope"} like this.\n{"name": "nope", "arguments": {}}\nok',
        None,
    ),
    Case(
        "bare-mid-line-is-prose",
        'Call it as {"name": "get_weather", "arguments": {"city": "Paris"}} please.',
        None,
    ),
    Case("bare-prose-after", '{"name": "get_weather", "arguments": {"city": "Paris"}} is the call', None),
    Case("bare-extra-key", '{"name": "get_weather", "arguments": {}, "note": "x"}', None),
    Case("bare-unbalanced", '{"name": "get_weather", "arguments": {"city": "Paris"}\nmore text', None),
    Case("bare-braces-in-prose", "{ this is a set }\n[link](http://x)\n[]\n[1, 2]\n{}\n", None),
    Case("bare-later-line-only", 'a {\n{"name": "run", "arguments": {"x": 1}}', "a {\n", [("run", {"x": 1})]),
    # ---------------------------------------------------------------- Hermes
    Case(
        "hermes-single",
        "Let me look.\n" + hermes("read_file", {"path": "a.txt"}),
        "Let me look.\n",
        [("read_file", {"path": "a.txt"})],
    ),
    Case(
        "hermes-arguments-as-string",
        hermes("get_weather", json.dumps({"city": "Paris", "days": 2})),
        "",
        [("get_weather", {"city": "Paris", "days": 2})],
    ),
    Case("hermes-parameters-key", hermes("get_weather", {"city": "Paris"}, "parameters"), "", [W_PARIS]),
    Case(
        "hermes-closing-tag-in-string",
        hermes("read_file", {"path": "x</tool_call>y"}) + "after",
        "after",
        [("read_file", {"path": "x</tool_call>y"})],
    ),
    Case(
        "hermes-parallel",
        hermes("get_weather", {"city": "Paris"}) + "\n" + hermes("read_file", {"path": "b"}),
        "\n",
        [W_PARIS, ("read_file", {"path": "b"})],
    ),
    Case(
        "hermes-nested-and-unicode",
        hermes("run", {"cmd": {"argv": ["ls", "-l"], "env": {"A": "é世"}}, "n": 1.5, "ok": True, "none": None}),
        "",
        [("run", {"cmd": {"argv": ["ls", "-l"], "env": {"A": "é世"}}, "n": 1.5, "ok": True, "none": None})],
    ),
    Case("hermes-empty-block", "Done.<tool_call></tool_call>", "Done."),
    Case("hermes-undeclared", hermes("nope", {}), None),
    Case("hermes-garbage-after-json", '<tool_call>{"name": "read_file", "arguments": {}} oops</tool_call>', None),
    # The closer missing at the very end (vLLM's Hermes2ProToolParser reads it as a call too).
    Case("hermes-unclosed", '<tool_call>\n{"name": "read_file", "arguments": {"path": "a"}}\n', "",
         [("read_file", {"path": "a"})]),
    Case("hermes-unclosed-then-text", '<tool_call>\n{"name": "read_file", "arguments": {"path": "a"}}\nok', None),
    Case("hermes-arguments-not-object", '<tool_call>{"name": "read_file", "arguments": [1]}</tool_call>', None),
    Case("hermes-prose-tag", "Wrap calls in <tool_call> tags, like <tool_call>this</tool_call>.", None),
    # ---------------------------------------------------------------- Qwen3-Coder
    Case(
        "coder-typed",
        coder("get_weather", city="Paris", days="3"),
        "",
        [("get_weather", {"city": "Paris", "days": 3})],
    ),
    Case(
        "coder-string-stays-string",
        coder("get_weather", city="42", days="x"),
        "",
        [("get_weather", {"city": "42", "days": "x"})],
    ),
    Case(
        "coder-multiline-value",
        coder("run", script="\n  line one\n\n  line two\n"),
        "",
        [("run", {"script": "\n  line one\n\n  line two\n"})],
    ),
    Case(
        "coder-missing-end-parameter",
        "<tool_call>\n<function=read_file>\n<parameter=path>\na.txt\n</function>\n</tool_call>",
        "",
        [("read_file", {"path": "a.txt"})],
    ),
    Case("coder-no-parameters", "<tool_call>\n<function=get_weather>\n</function>\n</tool_call>", "", [("get_weather", {})]),
    Case(
        "coder-two-calls-text-around",
        "First " + coder("read_file", path="a") + " then " + coder("list_files", path=".", recursive="true") + ".",
        "First  then .",
        [("read_file", {"path": "a"}), ("list_files", {"path": ".", "recursive": True})],
    ),
    Case("coder-undeclared", coder("nope", a="1"), None),
    Case("coder-unclosed", "<tool_call>\n<function=read_file>\n<parameter=path>\na\n</parameter>\n</function>\n", None),
    # ---------------------------------------------------------------- invoke XML
    Case(
        "invoke-wrapped-text-around",
        "I will check.\n\n<function_calls>\n" + invoke("list_files", path="/project") + "\n</function_calls>\nDone.",
        "I will check.\n\n\nDone.",
        [("list_files", {"path": "/project"})],
    ),
    Case(
        "invoke-count-wrapper",
        "Checking now.\ncount\n" + invoke("read_file", path="/etc/hosts") + "\n</function_calls>",
        "Checking now.\n",
        [("read_file", {"path": "/etc/hosts"})],
    ),
    Case(
        "invoke-count-right-after-text",
        "Checking now.count\n" + invoke("read_file", path="a"),
        "Checking now.",
        [("read_file", {"path": "a"})],
    ),
    Case("invoke-bare", invoke("read_file", path="a") + "\nok", "\nok", [("read_file", {"path": "a"})]),
    Case(
        "invoke-namespaced",
        invoke("antml:tool:read_file", path="a") + invoke("ns:tool:list_files", path="b"),
        "",
        [("read_file", {"path": "a"}), ("list_files", {"path": "b"})],
    ),
    Case(
        "invoke-two-in-wrapper",
        "<function_calls>\n" + invoke("read_file", path="a") + "\n" + invoke("list_files", path="b") + "\n</function_calls>",
        "",
        [("read_file", {"path": "a"}), ("list_files", {"path": "b"})],
    ),
    Case(
        "invoke-raw-values",
        invoke("read_file", path="  &lt;b&gt; & \"q\" <i>\n x  "),
        "",
        [("read_file", {"path": '  &lt;b&gt; & "q" <i>\n x  '})],
    ),
    Case(
        "invoke-value-with-partial-close",
        '<invoke name="read_file"><parameter name="path">a</param b</para</parameter></invoke>',
        "",
        [("read_file", {"path": "a</param b</para"})],
    ),
    Case(
        "invoke-untyped-literals",
        invoke("run", t="true", f=" false ", i="42", neg="-7", fl="-1.5", e="1e3", z="null", lead="007", s=" hi ", w="True"),
        "",
        [
            (
                "run",
                {"t": True, "f": False, "i": 42, "neg": -7, "fl": -1.5, "e": 1000.0, "z": None, "lead": "007", "s": " hi ", "w": "True"},
            )
        ],
    ),
    Case(
        "invoke-schema-typed",
        invoke(
            "typed",
            s="42",
            i=" 7 ",
            n="2.5",
            b="false",
            z="null",
            o='{"a": 1}',
            a="[1, 2]",
            u="five",
            l="9",
            e="true",
        ),
        "",
        [
            (
                "typed",
                {"s": "42", "i": 7, "n": 2.5, "b": False, "z": None, "o": {"a": 1}, "a": [1, 2], "u": "five", "l": "9", "e": True},
            )
        ],
    ),
    Case(
        "invoke-schema-mismatch-keeps-raw",
        invoke("typed", i="seven", b="yes", o="[1]", u="5"),
        "",
        [("typed", {"i": "seven", "b": "yes", "o": "[1]", "u": 5})],
    ),
    Case("invoke-undeclared", "<function_calls>\n" + invoke("nope", a="1") + "\n</function_calls>", None),
    Case("invoke-empty-wrapper", "a<function_calls>\n</function_calls>b", "ab"),
    Case(
        "invoke-wrapper-then-prose",
        "<function_calls>\n" + invoke("read_file", path="a") + "\nThen more.",
        "\nThen more.",
        [("read_file", {"path": "a"})],
    ),
    Case("invoke-prose-count", "I count 3 apples, <b>bold</b>, a < b, and <invoked> it; count\n<br>", None),
    # "count" is the wrapper only where the tag stood: a line start, glued to the text before
    # it, or glued to the <invoke>; after a blank mid-line it is the word.
    Case(
        "invoke-count-is-a-word-after-a-blank",
        "Lines to count\n" + invoke("read_file", path="a"),
        "Lines to count\n",
        [("read_file", {"path": "a"})],
    ),
    Case(
        "invoke-count-glued-to-invoke",
        "Lines to count" + invoke("read_file", path="a"),
        "Lines to ",
        [("read_file", {"path": "a"})],
    ),
    Case(
        "invoke-count-indented-line",
        "Checking.\n  count\n" + invoke("read_file", path="a"),
        "Checking.\n  ",
        [("read_file", {"path": "a"})],
    ),
    Case(
        "invoke-count-word-then-tab",
        "we count\t" + invoke("read_file", path="a"),
        "we count\t",
        [("read_file", {"path": "a"})],
    ),
    Case(
        "invoke-count-with-colon-is-prose",
        "count: 3\n" + invoke("read_file", path="a"),
        "count: 3\n",
        [("read_file", {"path": "a"})],
    ),
    Case(
        "invoke-account-is-a-word",
        "Check the account\n" + invoke("read_file", path="a"),
        "Check the account\n",
        [("read_file", {"path": "a"})],
    ),
    Case("invoke-unclosed", "<function_calls>\n<invoke name=\"read_file\">\n<parameter name=\"path\">a", None),
    # ---------------------------------------------------------------- Roo tool_code
    Case(
        "tool-code",
        'Let me look:\n\n```tool_code\n{"tool": "list_files", "path": ".", "recursive": false}\n```\nok',
        "Let me look:\n\n\nok",
        [("list_files", {"path": ".", "recursive": False})],
    ),
    Case(
        "tool-code-mid-line",
        'Let me look: ```tool_code\n{"tool": "read_file", "path": "a"}\n``` ok',
        "Let me look:  ok",
        [("read_file", {"path": "a"})],
    ),
    Case("tool-code-malformed", '```tool_code\n{"tool": "list_files", "path": .}\n```', None),
    Case("tool-code-undeclared", '```tool_code\n{"tool": "rm_rf", "path": "/"}\n```', None),
    Case("tool-code-not-json", '```tool_code\nprint(list_files("."))\n```', None),
    # A failed tool_code block ends at its own fence: the next fence opens a new block.
    Case(
        "tool-code-malformed-then-fenced-call",
        '```tool_code\n{"tool": "list_files", path: .}\n```\n```\n' + hermes("read_file", {"path": "a"}) + "\n```",
        '```tool_code\n{"tool": "list_files", path: .}\n```\n',
        [("read_file", {"path": "a"})],
    ),
    Case(
        "tool-code-unclosed-call-inside",
        '```tool_code\n{"tool": "list_files",\n```\n' + hermes("read_file", {"path": "a"}),
        '```tool_code\n{"tool": "list_files",\n```\n',
        [("read_file", {"path": "a"})],
    ),
    # ---------------------------------------------------------------- code: no calls in examples
    Case("fence-bash", "Run:\n```bash\nnpm test\n```\n", None),
    Case("fence-json-call-like", '```json\n{"tool": "list_files", "path": "."}\n```', None),
    Case("fence-empty", "a\n```\n\n```\nb", None),
    Case("fence-unclosed-code", "```python\nprint('<tools>')\n", None),
    Case("inline-invoke", 'Write `<invoke name="read_file"><parameter name="path">a</parameter></invoke>` to read.', None),
    Case("inline-hermes-one-line", 'Like `<tool_call>{"name": "read_file", "arguments": {}}</tool_call>` here', None),
    Case("inline-double-backticks", "Use ``a ` <invoke name=\"run\"></invoke> b`` here", None),
    Case(
        "inline-unclosed-backtick-then-call",
        "A stray ` here\n" + hermes("read_file", {"path": "a"}),
        "A stray ` here\n",
        [("read_file", {"path": "a"})],
    ),
    Case(
        "inline-call-across-lines-is-no-span",
        "`" + hermes("read_file", {"path": "a"}) + "`",
        "``",
        [("read_file", {"path": "a"})],
    ),
    Case(
        "inline-span-too-long-for-a-span",
        "`" + "x" * 300 + invoke("read_file", path="a") + "`",
        "`" + "x" * 300 + "`",
        [("read_file", {"path": "a"})],
    ),
    Case("fence-comment-and-call", "```xml\n<!-- like this -->\n" + invoke("read_file", path="a") + "\n```", None),
    Case("fence-call-then-prose", "```xml\n" + invoke("read_file", path="a") + "\nthen this\n```", None),
    Case("fence-prose-then-call", "```\nexample:\n" + hermes("read_file", {"path": "a"}) + "\n```", None),
    Case("fence-call-unclosed", "```xml\n" + invoke("read_file", path="a") + "\n", None),
    Case("fence-info-with-backtick", "```a`b\n" + invoke("read_file", path="a"), "```a`b\n", [("read_file", {"path": "a"})]),
    Case("fence-no-call-only-empty-markup", "```\n<tool_call></tool_call>\n```", None),
    # A fence holding nothing but calls is the calls' markup, fences included.
    Case(
        "fence-json-with-call-line",
        '```json\n{"name": "read_file", "arguments": {"path": "a"}}\n```',
        "",
        [("read_file", {"path": "a"})],
    ),
    Case(
        "fence-only-calls",
        "Reading both.\n\n```xml\n<function_calls>\n" + invoke("read_file", path="a") + "\n"
        + invoke("list_files", path="b") + "\n</function_calls>\n```\nDone.",
        "Reading both.\n\n\nDone.",
        [("read_file", {"path": "a"}), ("list_files", {"path": "b"})],
    ),
    Case(
        "fence-only-calls-of-two-families",
        "  ```\n  " + hermes("read_file", {"path": "a"}) + "\n\n  " + invoke("run", x="1") + "\n  ```",
        "  ",
        [("read_file", {"path": "a"}), ("run", {"x": 1})],
    ),
    Case(
        "fence-call-holding-fences",
        "````xml\n" + invoke("run", script="```bash\nls\n```") + "\n````",
        "",
        [("run", {"script": "```bash\nls\n```"})],
    ),
    # A fence ends at its first closing line, as Markdown shows it: a call holding one
    # needs a longer outer fence (above).
    Case("fence-value-with-a-fence-line", "```xml\n" + invoke("run", script="a\n```\nb") + "\n```", None),
    Case(
        "fence-failed-call-ends-at-first-fence",
        "```xml\n<invoke name=\"run\"><parameter name=\"x\">a\n```\n" + hermes("read_file", {"path": "a"}),
        "```xml\n<invoke name=\"run\"><parameter name=\"x\">a\n```\n",
        [("read_file", {"path": "a"})],
    ),
    Case(
        "code-then-call-after-the-fence",
        "```python\nx = '<tool_call>'\n```\n" + hermes("read_file", {"path": "a"}),
        "```python\nx = '<tool_call>'\n```\n",
        [("read_file", {"path": "a"})],
    ),
    # A closing line is short: a longer one (backticks or blanks) is code, newline or not.
    Case(
        "fence-closing-line-at-the-limit",
        "```\nx\n" + "`" * MAX_FENCE_LINE + "\n" + hermes("read_file", {"path": "a"}),
        "```\nx\n" + "`" * MAX_FENCE_LINE + "\n",
        [("read_file", {"path": "a"})],
    ),
    Case("fence-closing-line-too-long", "```\nx\n" + "`" * (MAX_FENCE_LINE + 1) + "\n" + hermes("read_file", {"path": "a"}), None),
    Case("fence-closing-line-indented-too-far", "```\nx\n" + " " * (MAX_FENCE_LINE - 2) + "```\n" + hermes("run", {}), None),
    Case("fence-opened-by-a-run-too-long-to-close", "`" * (MAX_FENCE_LINE + 1) + "\n" + hermes("run", {}) + "\n" + "`" * (MAX_FENCE_LINE + 1), None),
    # ---------------------------------------------------------------- DeepSeek V3.2 DSML
    Case(
        "dsml-typed-by-attribute",
        "<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"read_file\">\n"
        "<｜DSML｜parameter name=\"path\" string=\"true\">0042</｜DSML｜parameter>\n"
        "<｜DSML｜parameter name=\"limit\" string=\"false\">20</｜DSML｜parameter>\n"
        "</｜DSML｜invoke>\n</｜DSML｜function_calls>",
        "",
        [("read_file", {"path": "0042", "limit": 20})],
    ),
    Case(
        "dsml-tool-calls-wrapper-no-attribute",
        "<｜DSML｜tool_calls><｜DSML｜invoke name=\"get_weather\"><｜DSML｜parameter name=\"city\">Paris"
        "</｜DSML｜parameter></｜DSML｜invoke></｜DSML｜tool_calls> ok",
        " ok",
        [W_PARIS],
    ),
    Case(
        "dsml-closer-in-value",
        "<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"read_file\">\n"
        "<｜DSML｜parameter name=\"path\" string=\"true\">a</｜DSML｜parameter>b</｜DSML｜parameter>\n"
        "</｜DSML｜invoke>\n</｜DSML｜function_calls>",
        "",
        [("read_file", {"path": "a</｜DSML｜parameter>b"})],
    ),
    Case(
        "dsml-undeclared",
        "<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"nope\">\n</｜DSML｜invoke>\n</｜DSML｜function_calls>",
        None,
    ),
    # ---------------------------------------------------------------- DeepSeek V3 fenced JSON
    Case(
        "deepseek-v3-two-calls",
        "Sure.<｜tool▁calls▁begin｜>" + deepseek_v3("get_weather", {"city": "Paris"}) + "\n"
        + deepseek_v3("read_file", {"path": "a"}) + "<｜tool▁calls▁end｜> ok",
        "Sure. ok",
        [W_PARIS, ("read_file", {"path": "a"})],
    ),
    Case(
        "deepseek-v3-fence-in-value",
        "<｜tool▁calls▁begin｜>" + deepseek_v3("read_file", {"path": "```\n```<｜tool▁call▁end｜>"})
        + "<｜tool▁calls▁end｜>",
        "",
        [("read_file", {"path": "```\n```<｜tool▁call▁end｜>"})],
    ),
    Case(
        "deepseek-v3-distilled-opener",
        "<｜tool▁calls｜>" + deepseek_v3("get_weather", {"city": "Paris"}) + "<｜tool▁calls▁end｜>",
        "",
        [W_PARIS],
    ),
    Case(
        "deepseek-v3-no-fence-tag",
        "<｜tool▁calls▁begin｜>" + deepseek_v3("get_weather", {"city": "Paris"}).replace("```json", "```")
        + "<｜tool▁calls▁end｜>",
        "",
        [W_PARIS],
    ),
    Case(
        "deepseek-v3-type-is-not-function",
        "<｜tool▁calls▁begin｜>" + deepseek_v3("get_weather", {"city": "Paris"}).replace(">function<", ">tool<")
        + "<｜tool▁calls▁end｜>",
        None,
    ),
    Case("deepseek-v3-undeclared", "<｜tool▁calls▁begin｜>" + deepseek_v3("nope", {}) + "<｜tool▁calls▁end｜>", None),
    Case(
        "deepseek-v3-unclosed-fence",
        "<｜tool▁calls▁begin｜>" + deepseek_v3("get_weather", {"city": "Paris"}).removesuffix("```<｜tool▁call▁end｜>"),
        None,
    ),
    # ---------------------------------------------------------------- Phi-4-mini functools
    Case(
        "phi4-mini-list",
        'On it.\n  functools[{"name": "get_weather", "arguments": {"city": "Paris"}}] Done.',
        "On it.\n   Done.",
        [W_PARIS],
    ),
    Case("phi4-mini-python-module", "Use functools.partial, or import functools; functools [is] a module.\nfunctools [x]", None),
    Case("phi4-mini-mid-line", 'Call functools[{"name": "get_weather", "arguments": {"city": "Paris"}}]', None),
    Case("phi4-mini-glued-to-a-word", 'myfunctools[{"name": "get_weather", "arguments": {"city": "Paris"}}]', None),
    # ---------------------------------------------------------------- Llama 4 <|python_start|>
    Case(
        "llama4-pythonic-mid-line",
        'Sure. <|python_start|>[get_weather(city="Paris")]<|python_end|> Done.',
        "Sure.  Done.",
        [W_PARIS],
    ),
    Case("llama4-pythonic-end-token-missing-at-end", '<|python_start|>[get_weather(city="Paris")]', "", [W_PARIS]),
    Case("llama4-pythonic-prose-after-the-list", '<|python_start|>[get_weather(city="Paris")] and more', None),
    Case("llama4-pythonic-prose", "The <|python_start|> token opens [code] blocks.", None),
    # ---------------------------------------------------------------- gpt-oss Harmony
    Case("harmony-call", "Checking.\n" + harmony("get_weather", {"city": "Paris"}), "Checking.\n", [W_PARIS]),
    Case(
        "harmony-first-message-without-start",
        harmony("get_weather", {"city": "Paris"}).removeprefix("<|start|>assistant"),
        "",
        [W_PARIS],
    ),
    Case(
        "harmony-recipient-in-role",
        '<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Paris"}<|call|>',
        "",
        [W_PARIS],
    ),
    Case(
        "harmony-call-token-in-value",
        harmony("read_file", {"path": "<|call|><|end|>"}) + "\n" + harmony("get_weather", {"city": "Paris"}),
        "\n",
        [("read_file", {"path": "<|call|><|end|>"}), W_PARIS],
    ),
    Case(
        "harmony-analysis-holds-no-call",
        "<|channel|>analysis<|message|>Maybe " + harmony("read_file", {"path": "a"}) + " first.<|end|>",
        None,
    ),
    Case("harmony-final-is-text", "<|start|>assistant<|channel|>final<|message|>Sunny.<|return|>", None),
    Case(
        "harmony-call-from-the-analysis-channel",
        "<|channel|>analysis<|message|>Need the weather.<|end|>"
        '<|start|>assistant<|channel|>analysis to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}<|call|>',
        "<|channel|>analysis<|message|>Need the weather.<|end|>",
        [W_PARIS],
    ),
    Case(
        "harmony-analysis-to-a-builtin-is-text",
        '<|channel|>analysis to=python code<|message|>print(1)<|call|>',
        None,
    ),
    Case(
        "harmony-final-constrained-json-is-no-call",
        '<|channel|>final <|constrain|>json<|message|>{"name": "get_weather", "arguments": {"city": "Paris"}}<|return|>',
        None,
    ),
    Case(
        "harmony-final-addressed-to-a-function-is-text",
        '<|channel|>final to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}<|call|>',
        None,
    ),
    Case(
        "harmony-preamble-then-call",
        "<|start|>assistant<|channel|>commentary<|message|>Checking the weather.<|end|>" + harmony("get_weather", {"city": "Paris"}),
        "<|start|>assistant<|channel|>commentary<|message|>Checking the weather.<|end|>",
        [W_PARIS],
    ),
    Case("harmony-undeclared", harmony("nope", {}), None),
    Case(
        "harmony-builtin-recipient",
        '<|channel|>analysis to=browser.search code<|message|>{"query": "x"}<|call|>'
        '<|start|>assistant<|channel|>commentary to=python code<|message|>print(1)<|call|>',
        None,
    ),
    Case("harmony-unclosed", harmony("get_weather", {"city": "Paris"}).removesuffix("<|call|>"), None),
    Case("harmony-prose", "Its headers start with <|channel|> and end with <|message|>, then the body.", None),
    # ---------------------------------------------------------------- mixed and edges
    Case(
        "mixed-families-in-order",
        "A " + hermes("read_file", {"path": "1"}) + " B\n" + invoke("list_files", path="2")
        + "\n```tool_code\n{\"tool\": \"read_file\", \"path\": \"3\"}\n```\n"
        + '{"name": "get_weather", "arguments": {"city": "4"}}\nZ',
        "A  B\n\n\nZ",
        [("read_file", {"path": "1"}), ("list_files", {"path": "2"}), ("read_file", {"path": "3"}), ("get_weather", {"city": "4"})],
    ),
    Case("partial-opener-at-end", "text that ends with <tool_c", None),
    Case("lone-angle-at-end", "a <", None),
    Case("count-at-end", "let me count  ", None),
    Case("unicode-prose", "Привет, 世界! ünïcödé <tools> not a call 🚀", None),
    Case("no-tools-passthrough", hermes("read_file", {"path": "a"}), None, [], ()),
]


def _run(case: Case, frames: list[str]) -> tuple[str, Calls]:
    _, events = feed_frames(frames, case.tools)
    check_events(events)
    return outcome(events)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case_whole_and_split(case: Case) -> None:
    expected = (case.visible, case.calls)
    whole = _run(case, [case.text])
    assert whole[0] == expected[0]
    assert same_calls(whole[1], expected[1]), whole[1]
    assert _run(case, list(case.text)) == whole, "1-character frames"
    rng = random.Random(case.id)
    for _ in range(8):
        frames = random_frames(case.text, rng)
        assert _run(case, frames) == whole, f"frames {frames!r}"
    assert rescue_text(case.text, case.tools) == collect(feed_frames(list(case.text), case.tools)[1])


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_general_scanner_agrees_with_shortcuts(case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the plain-text shortcuts off (as when a new family does not fit them), the
    general scanner alone gives the same results."""
    monkeypatch.setattr(scanner, "SHORTCUTS", False)
    monkeypatch.setattr(scanner, "_WORD_OPENER", None)
    rng = random.Random(case.id)
    for frames in ([case.text], list(case.text), random_frames(case.text, rng)):
        visible, calls = _run(case, frames)
        assert visible == case.visible and same_calls(calls, case.calls), frames


BACKTICK_CASES = [c for c in CASES if "`" in c.text] + [
    Case("inline-then-tool-code", '` ```tool_code{"tool": "read_file", "path": "a"}\n```', "` ", [("read_file", {"path": "a"})]),
    Case("inline-pair-then-fence-run", "`a` ```` `b`\n", None),
]


@pytest.mark.parametrize("case", BACKTICK_CASES, ids=[c.id for c in BACKTICK_CASES])
def test_every_cut_of_code_gives_the_same_result(case: Case) -> None:
    """Backtick runs are decided by what follows them: no cut may change that."""
    whole = _run(case, [case.text])
    assert whole == (case.visible, whole[1]) and same_calls(whole[1], case.calls)
    for k in range(1, len(case.text)):
        assert _run(case, [case.text[:k], case.text[k:]]) == whole, k


def test_case_ids_are_unique() -> None:
    assert len({c.id for c in CASES}) == len(CASES)


# --------------------------------------------------------------------------- letter-initial openers, fast path

# Openers that begin with a letter: the fast path's signal characters ("<", "[", "`")
# never see them coming, so the shortcuts must find them by their first letters instead.
LETTER_OPENERS = sorted(literal for literal in scanner._OPENERS.specs if literal[0].isalpha())
LETTER_CASES = [
    Case(
        "functools-after-prose",
        'I will look it up for you.\nfunctools[{"name": "get_weather", "arguments": {"city": "Paris"}}]\nDone.',
        "I will look it up for you.\n\nDone.",
        [W_PARIS],
    ),
    Case("functools-mid-line-is-prose", 'The cache comes from functools[{"name": "get_weather"}] here.', None),
    Case(
        "count-glued-to-prose",
        'Checking the weather now.count\n<invoke name="get_weather">\n<parameter name="city">Paris</parameter>\n'
        "</invoke>\n</count> after",
        None,  # decided by the whole-text run below; the cuts must agree with it
        [W_PARIS],
    ),
    Case("count-the-word", "Let me count the files: there are six of them.\nAnd counting.", None),
    Case(
        "pythonic-after-prose",
        'Sure, one moment please.\n[get_weather(city="Paris")]\nThat is all.',
        "Sure, one moment please.\n\nThat is all.",
        [W_PARIS],
    ),
]


def _fed(frames: list[str], tools: tuple[ToolSpec, ...]) -> tuple[tuple[str, Calls], bool]:
    """The outcome of ``frames``, and whether the plain-text fast path was open before
    one of them (so that the shortcuts, not only the general scanner, saw the text)."""
    rescuer = Rescuer(tools)
    events = []
    fast = False
    for frame in frames:
        fast = fast or rescuer._plain
        events += rescuer.feed(frame)
    events += rescuer.finish()
    check_events(events)
    return outcome(events), fast


def test_the_letter_initial_openers_are_the_ones_these_cases_cover() -> None:
    assert LETTER_OPENERS == ["count", "functools"], "a new letter-initial opener needs its cases here"
    assert scanner.SHORTCUTS, "the shortcuts are off: these cases would not test them"


@pytest.mark.parametrize("case", LETTER_CASES, ids=[c.id for c in LETTER_CASES])
def test_the_fast_path_finds_letter_initial_openers_at_every_cut(case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cut at every frame boundary (two frames at every position, and three frames with
    both cuts near the opener), the shortcuts give what the whole text gives, and that is
    what the general scanner alone gives."""
    whole, _ = _fed([case.text], case.tools)
    if case.text_out is not None:
        assert whole[0] == case.text_out
    assert same_calls(whole[1], case.calls), whole[1]
    start = max((case.text.find(o) for o in LETTER_OPENERS + ["\n["]), default=0)
    fast_seen = False
    for k in range(1, len(case.text)):
        got, fast = _fed([case.text[:k], case.text[k:]], case.tools)
        assert got == whole, k
        fast_seen = fast_seen or fast
    near = range(max(1, start - 6), min(len(case.text), start + 12))
    for a in near:
        for b in near:
            if a < b:
                got, fast = _fed([case.text[:a], case.text[a:b], case.text[b:]], case.tools)
                assert got == whole, (a, b)
                fast_seen = fast_seen or fast
    assert fast_seen, "no frame reached the fast path"
    assert _fed(list(case.text), case.tools)[0] == whole, "1-character frames"
    monkeypatch.setattr(scanner, "SHORTCUTS", False)
    monkeypatch.setattr(scanner, "_WORD_OPENER", None)
    assert _fed([case.text], case.tools)[0] == whole, "the general scanner"


# --------------------------------------------------------------------------- hold-back


@dataclass(frozen=True)
class Holding:
    id: str
    frames: list[str]
    released: list[str]  # joined text of the events each feed returned
    tools: tuple[ToolSpec, ...] = ALL


HOLDING = [
    Holding("plain-goes-out-at-once", ["Hello ", "world, ", "a > b"], ["Hello ", "world, ", "a > b"]),
    Holding("angle-released-when-not-a-tag", ["a <", " b"], ["a ", "< b"]),
    Holding("partial-tag-held", ["Hi <to", "ol", "s>"], ["Hi ", "", ""]),
    Holding("word-c-held-then-released", ["I will c", "ount", " ", "the sheep"], ["I will ", "", "", "count the sheep"]),
    Holding("c-inside-word-not-held", ["publi", "c", " music"], ["publi", "c", " music"]),
    Holding("account-not-held", ["the account", " is"], ["the account", " is"]),
    Holding("brace-mid-line-not-held", ["a {", "b}"], ["a {", "b}"]),
    Holding("brace-at-line-start-held", ["x\n", "{", " hi"], ["x\n", "", "{ hi"]),
    # A fence is held until its content shows it is code, then let through as it comes.
    Holding(
        "fence-held-until-its-content-is-code",
        ["`", "``", "bash\n", "\n", "npm test\n", "npm run lint\n", "``", "`\n"],
        ["", "", "", "", "```bash\n\nnpm test\n", "npm run lint\n", "", "```\n"],
    ),
    Holding("inline-code-released", ["use `git` ", "now"], ["use `git` ", "now"]),
    Holding("inline-code-held-to-its-close", ["use `", "git", " status` now"], ["use ", "", "`git status` now"]),
    Holding("lone-backtick-released-at-line-end", ["a ` b", " c\n", "d"], ["a ", "` b c\n", "d"]),
    Holding(
        "text-before-call-sent-before-it-completes",
        ["Let me check. <tool_call>\n", '{"name": "read_file", ', '"arguments": {}}\n</tool_call>', " ok"],
        ["Let me check. ", "", "", " ok"],
    ),
    Holding(
        "no-tools-no-hold-back",
        ["<tool_c", "all>", "x\n{", "I will c", "ount", " `", "`"],
        ["<tool_c", "all>", "x\n{", "I will c", "ount", " `", "`"],
        (),
    ),
]


@pytest.mark.parametrize("case", HOLDING, ids=[c.id for c in HOLDING])
def test_text_released_as_early_as_possible(case: Holding) -> None:
    rescuer = Rescuer(case.tools)
    released = []
    for frame in case.frames:
        events = rescuer.feed(frame)
        released.append("".join(e.text for e in events if isinstance(e, Text)))
    assert released == case.released


def test_call_events_come_whole_and_in_order() -> None:
    text = "a " + hermes("read_file", {"path": "x"}) + " b " + coder("get_weather") + " c"
    _, events = feed_frames(list(text), ALL)
    kinds = [type(e).__name__ for e in events]
    collapsed = [k for i, k in enumerate(kinds) if i == 0 or k != kinds[i - 1] or k != "Text"]
    assert collapsed == [
        "Text",
        "ToolCallStart",
        "ArgumentsDelta",
        "ToolCallEnd",
        "Text",
        "ToolCallStart",
        "ArgumentsDelta",
        "ToolCallEnd",
        "Text",
    ]
    starts = [e for e in events if isinstance(e, ToolCallStart)]
    assert [(s.index, s.name) for s in starts] == [(0, "read_file"), (1, "get_weather")]
    deltas = [e for e in events if isinstance(e, ArgumentsDelta)]
    assert [(d.index, d.fragment) for d in deltas] == [(0, '{"path":"x"}'), (1, "{}")]
    assert [e.index for e in events if isinstance(e, ToolCallEnd)] == [0, 1]


def test_kept_calls_are_taken_once() -> None:
    """A rescuer made with ``keep_calls`` hands each call over once, as recognised; one
    made without says it keeps none."""
    rescuer = Rescuer(ALL, keep_calls=True)
    rescuer.feed(hermes("read_file", {"path": "x"}) + " and " + invoke("run", a="b"))
    rescuer.finish()
    assert rescuer.take_calls() == (Call("read_file", {"path": "x"}), Call("run", {"a": "b"}))
    assert rescuer.take_calls() == ()
    with pytest.raises(ValueError, match="keep_calls"):
        Rescuer(ALL).take_calls()


def test_counters() -> None:
    rescuer = Rescuer(ALL)
    rescuer.feed(hermes("read_file", {"path": "x"}) + invoke("run", a="1"))
    rescuer.finish()
    assert rescuer.calls_emitted == 2 and not rescuer.overflowed


# --------------------------------------------------------------------------- buffer cap


def test_marker_longer_than_cap_is_released_and_scanning_goes_on() -> None:
    long_call = hermes("read_file", {"path": "x" * 300})
    later = invoke("list_files", path=".")
    text = "before " + long_call + " middle " + later + " after"
    for size in (1, 7, 64, 100, 101, len(text)):
        frames = [text[i : i + size] for i in range(0, len(text), size)]
        rescuer, events = feed_frames(frames, ALL, buffer_cap=100)
        check_events(events)
        visible, calls = outcome(events)
        assert rescuer.overflowed, size
        assert calls == [("list_files", {"path": "."})]
        assert visible == "before " + long_call + " middle " + " after"


def test_cap_releases_promptly() -> None:
    rescuer = Rescuer(ALL, buffer_cap=50)
    assert collect(rescuer.feed("<tool_call>\n{\"name\": \"read_file\", "))[0] == ""
    released = collect(rescuer.feed('"arguments": {"path": "' + "y" * 40))[0]
    assert rescuer.overflowed and released.startswith("<tool_call>") and released.endswith("y" * 40)


def test_cap_applies_within_one_big_frame() -> None:
    rescuer = Rescuer(ALL, buffer_cap=50)
    text = 'a <tools>{"name": "read_file", "arguments": {"path": "' + "z" * 200
    released = collect(rescuer.feed(text))[0]
    assert rescuer.overflowed and released == text
    assert collect(rescuer.finish())[0] == ""


@pytest.mark.parametrize(
    ("text", "cap", "overflowed"),
    [
        # The call ends exactly at the cap: recognised, in one piece or many.
        (hermes("read_file", {"path": "x" * 60}), len(hermes("read_file", {"path": "x" * 60})), False),
        (hermes("read_file", {"path": "x" * 60}), len(hermes("read_file", {"path": "x" * 60})) - 1, True),
        # Each call of an invoke run restarts the count, as do the lines of a code block.
        ("<function_calls>\n" + "\n".join([invoke("read_file", path="x" * 40)] * 20), 150, False),
        ("```python\n" + "print('x')\n" * 100 + "```", 64, False),
        # A fence holding only calls is held whole, so all of it counts.
        ("```\n" + "\n".join([invoke("read_file", path="x" * 40)] * 20) + "\n```", 400, True),
    ],
    ids=["call-at-the-cap", "call-one-past-the-cap", "invoke-run", "code-block", "fenced-calls"],
)
def test_cap_counts_positions_not_pieces(text: str, cap: int, overflowed: bool) -> None:
    """The cap decides by where a marker's text lies, never by how it was split: whole,
    in 1-character frames and in random frames, the answer is the same."""
    whole_rescuer, whole = feed_frames([text], ALL, buffer_cap=cap)
    assert whole_rescuer.overflowed is overflowed
    rng = random.Random(text)
    for frames in (list(text), random_frames(text, rng, max_size=200), random_frames(text, rng, max_size=2)):
        rescuer, events = feed_frames(frames, ALL, buffer_cap=cap)
        check_events(events)
        assert (outcome(events), rescuer.overflowed) == (outcome(whole), overflowed)


def test_call_within_cap_is_recognised() -> None:
    call = hermes("read_file", {"path": "x" * 60})
    rescuer, events = feed_frames(list(call), ALL, buffer_cap=len(call))
    assert not rescuer.overflowed
    assert outcome(events)[1] == [("read_file", {"path": "x" * 60})]


# --------------------------------------------------------------------------- scenario library


def _rescuable(scenario: Scenario) -> bool:
    # Scenarios where the proxy answers without calling upstream (the loop guard) never
    # show the backend's text to a parser, so there is nothing to rescue.
    return (
        scenario.client.profile == "openai"
        and not any(isinstance(f, ToolCallFrame) for f in scenario.backend.frames)
        and scenario.expect.upstream_requests != 0
    )


LIBRARY = [s for s in load_library() if _rescuable(s)]


def _delivered(scenario: Scenario) -> list[str]:
    """The content frames that reach the proxy's parser, which the expectation
    describes. An upstream HTTP error sends none; a drop ends the upstream after
    ``after_frame`` frames (the half event of a mid-event drop cannot be parsed, so none
    of it is used) and the parser is then finished, as when the upstream ends; so does
    an error event written in the stream. A stall or a missing terminator still
    delivers every frame."""
    frames = scenario.backend.frames
    fault = scenario.backend.fault
    if fault is not None and fault.kind == "http_error":
        frames = ()
    elif fault is not None and fault.kind == "drop":
        frames = frames[: fault.after_frame or 0]
    stop = next((k for k, f in enumerate(frames) if isinstance(f, RawFrame) and _is_error_event(f.raw)), len(frames))
    return [f.content for f in frames[:stop] if isinstance(f, ContentFrame)]


def _is_error_event(raw: str) -> bool:
    for line in raw.splitlines():
        if line.startswith("data:"):
            try:
                data = json.loads(line[5:])
            except ValueError:
                continue
            if isinstance(data, dict) and "error" in data:
                return True
    return False


@pytest.mark.parametrize("scenario", LIBRARY, ids=[s.id for s in LIBRARY])
def test_scenario_library(scenario: Scenario) -> None:
    tools = tools_from_request(scenario.client.request)
    frames = _delivered(scenario)
    rescuer, events = feed_frames(frames, tools)
    check_events(events)
    text, calls = outcome(events)
    expected = [(c.name, c.arguments) for c in scenario.expect.tool_calls]
    assert same_calls(calls, expected), f"calls {calls} != {expected}"
    if scenario.expect.content is not None:
        if scenario.expect.content_exact:
            assert text == scenario.expect.content
        else:
            assert folded(text) == folded(scenario.expect.content)
    if scenario.expect.content_regex is not None:
        assert re.search(scenario.expect.content_regex, text, re.DOTALL), text
    # The buffer cap counts positions, so a whole body (the non-streaming path) gets the
    # same answer as the stream, past the cap too.
    whole_rescuer, whole = feed_frames(["".join(frames)], tools)
    assert outcome(whole) == (text, calls)
    assert whole_rescuer.overflowed == rescuer.overflowed


def test_library_has_rescue_scenarios() -> None:
    assert LIBRARY, "no openai-profile text scenarios found in the library"
