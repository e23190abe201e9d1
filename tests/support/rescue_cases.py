"""The rescue parser's table of cases: a text a model wrote, the text a client must see
and the calls it must get. ``tests/proxy/test_rescue.py`` plays each whole and split; the
property tests draw from the same table."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from reference_proxy.rescue import ToolSpec
from reference_proxy.rescue.families.code import MAX_FENCE_LINE
from support.rescue import ALL, Calls

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
    Case(
        "bare-opening-call-then-sentence",
        '{"name": "get_weather", "arguments": {"city": "Paris"}} The arguments I passed were {"city": "Paris"}',
        'The arguments I passed were {"city": "Paris"}',
        [W_PARIS],
    ),
    # ---------------------------------------------------------------- Mistral NAME{json}, no [ARGS]
    Case("mistral-name-then-json", '[TOOL_CALLS]get_weather{"city": "Paris"}', "", [W_PARIS]),
    Case(
        "mistral-name-then-json-twice",
        '[TOOL_CALLS]get_weather{"city": "Paris"}[TOOL_CALLS]get_weather{}',
        "",
        [W_PARIS, ("get_weather", {})],
    ),
    Case("mistral-undeclared-name-then-json", '[TOOL_CALLS]nope{"city": "Paris"}', None),
    Case("bare-sentence-call-later-in-line", 'Done: {"name": "get_weather", "arguments": {"city": "Paris"}} The end', None),
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
    # vllm#21571: both closing tags forgotten, the value runs into </tool_call>.
    Case(
        "coder-value-runs-into-end-call",
        "<tool_call>\n<function=get_weather>\n<parameter=days>\n3\n\n\n</tool_call>",
        "",
        [("get_weather", {"days": 3})],
    ),
    Case(
        "coder-value-runs-into-end-call-then-another",
        "<tool_call>\n<function=read_file>\n<parameter=path>\na.txt\n</tool_call>\n" + coder("read_file", path="b.txt"),
        "\n",
        [("read_file", {"path": "a.txt"}), ("read_file", {"path": "b.txt"})],
    ),
    Case(
        "coder-value-quotes-end-call",
        "<tool_call>\n<function=run>\n<parameter=script>\necho '\n</tool_call>\n' done\n</parameter>\n</function>\n</tool_call>",
        "",
        [("run", {"script": "echo '\n</tool_call>\n' done"})],
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
    # Claude's leaks also corrupt the wrapper to "court" (claude-code#64922, #69529).
    Case(
        "invoke-court-line",
        "Checking.\n\ncourt\n" + invoke("read_file", path="a"),
        "Checking.\n\n",
        [("read_file", {"path": "a"})],
    ),
    Case(
        "invoke-court-is-a-word-after-a-blank",
        "Take it to court\n" + invoke("read_file", path="a"),
        "Take it to court\n",
        [("read_file", {"path": "a"})],
    ),
    Case("court-at-end", "the court  ", None),
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
    Case("harmony-json-glued-to-name", '<|channel|>commentary to=functions.get_weatherjson<|message|>{"city": "Paris"}<|call|>', "", [W_PARIS]),
    Case("harmony-undeclared-name-ending-json", '<|channel|>commentary to=functions.nopejson<|message|>{}<|call|>', None),
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
    Case("harmony-final-is-its-body", "<|start|>assistant<|channel|>final<|message|>Sunny.<|return|>", "Sunny."),
    Case(
        "harmony-final-after-analysis",
        "<|channel|>analysis<|message|>Easy.<|end|><|start|>assistant<|channel|>final<|message|>Sunny, 20 °C.",
        "<|channel|>analysis<|message|>Easy.<|end|>Sunny, 20 °C.",
    ),
    Case(
        "harmony-final-body-is-not-scanned",
        "<|channel|>final<|message|>Write <tool_call>{\"name\": \"get_weather\"}</tool_call> to call it.<|return|>",
        "Write <tool_call>{\"name\": \"get_weather\"}</tool_call> to call it.",
    ),
    Case("harmony-final-header-only", "<|channel|>final<|message|>", ""),
    Case("harmony-final-return-cut-at-end", "<|channel|>final<|message|>Done.<|ret", "Done.<|ret"),
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
        '{"name": "get_weather", "arguments": {"city": "Paris"}}',
    ),
    Case(
        "harmony-final-addressed-to-a-function-is-text",
        '<|channel|>final to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}<|call|>',
        '{"city": "Paris"}',
    ),
    Case(
        "harmony-preamble-then-call",
        "<|start|>assistant<|channel|>commentary<|message|>Checking the weather.<|end|>" + harmony("get_weather", {"city": "Paris"}),
        "Checking the weather.",
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
