"""The text-format writers: byte-exact samples, and what a reader makes of their text.

The samples pin what each writer emits (as its public chat template renders it); the
round trips check that an independent reader (the reference proxy's rescuer, or the
XML reader Cline-style clients use) gets the same calls back, typed by the schema.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.generate.formats import FORMATS, Call, FormatError, TextFormat
from harness.judge.readers.xml_calls import parse_xml_calls
from reference_proxy.rescue import ToolSpec, rescue_text

READ = Call("read_file", {"path": "src/a.py"})
EDIT = Call("edit", {"path": "b.txt", "line": 3, "dry_run": False, "tags": ["x"], "note": None})

SAMPLES: dict[str, str] = {
    "qwen-tools": '<tools>\n{"name": "read_file", "arguments": {"path": "src/a.py"}}\n'
    '{"name": "edit", "arguments": {"path": "b.txt", "line": 3, "dry_run": false, "tags": ["x"], "note": null}}\n'
    "</tools>",
    "hermes": '<tool_call>\n{"name": "read_file", "arguments": {"path": "src/a.py"}}\n</tool_call>\n'
    '<tool_call>\n{"name": "edit", "arguments": {"path": "b.txt", "line": 3, "dry_run": false, "tags": ["x"], '
    '"note": null}}\n</tool_call>',
    "bare-json": '{"name": "read_file", "arguments": {"path": "src/a.py"}}\n'
    '{"name": "edit", "arguments": {"path": "b.txt", "line": 3, "dry_run": false, "tags": ["x"], "note": null}}',
    "tool-code": '```tool_code\n{"tool": "read_file", "path": "src/a.py"}\n```\n\n'
    '```tool_code\n{"tool": "edit", "path": "b.txt", "line": 3, "dry_run": false, "tags": ["x"], "note": null}\n```',
    "qwen-coder": "<tool_call>\n<function=read_file>\n<parameter=path>\nsrc/a.py\n</parameter>\n</function>\n"
    "</tool_call>\n<tool_call>\n<function=edit>\n<parameter=path>\nb.txt\n</parameter>\n<parameter=line>\n3\n"
    "</parameter>\n<parameter=dry_run>\nfalse\n</parameter>\n<parameter=tags>\n[\"x\"]\n</parameter>\n"
    "<parameter=note>\nnull\n</parameter>\n</function>\n</tool_call>",
    "invoke-xml": '<function_calls>\n<invoke name="read_file">\n<parameter name="path">src/a.py</parameter>\n'
    '</invoke>\n<invoke name="edit">\n<parameter name="path">b.txt</parameter>\n<parameter name="line">3'
    '</parameter>\n<parameter name="dry_run">false</parameter>\n<parameter name="tags">["x"]</parameter>\n'
    '<parameter name="note">null</parameter>\n</invoke>\n</function_calls>',
    "mistral": '[TOOL_CALLS] [{"name": "read_file", "arguments": {"path": "src/a.py"}}, {"name": "edit", "arguments": '
    '{"path": "b.txt", "line": 3, "dry_run": false, "tags": ["x"], "note": null}}]',
    "mistral-v11": '[TOOL_CALLS]read_file[ARGS]{"path": "src/a.py"}[TOOL_CALLS]edit[ARGS]{"path": "b.txt", "line": 3, '
    '"dry_run": false, "tags": ["x"], "note": null}',
    "llama3-json": '{"name": "read_file", "parameters": {"path": "src/a.py"}}; {"name": "edit", "parameters": '
    '{"path": "b.txt", "line": 3, "dry_run": false, "tags": ["x"], "note": null}}',
    "pythonic": '[read_file(path="src/a.py"), edit(path="b.txt", line=3, dry_run=False, tags=["x"], note=None)]',
    "glm": "<tool_call>read_file\n<arg_key>path</arg_key>\n<arg_value>src/a.py</arg_value>\n</tool_call>\n"
    "<tool_call>edit\n<arg_key>path</arg_key>\n<arg_value>b.txt</arg_value>\n<arg_key>line</arg_key>\n<arg_value>3"
    "</arg_value>\n<arg_key>dry_run</arg_key>\n<arg_value>false</arg_value>\n<arg_key>tags</arg_key>\n<arg_value>"
    '["x"]</arg_value>\n<arg_key>note</arg_key>\n<arg_value>null</arg_value>\n</tool_call>',
    "granite": '<|tool_call|>[{"name": "read_file", "arguments": {"path": "src/a.py"}}, {"name": "edit", "arguments": '
    '{"path": "b.txt", "line": 3, "dry_run": false, "tags": ["x"], "note": null}}]',
    "seed-oss": "<seed:tool_call>\n<function=read_file>\n<parameter=path>src/a.py</parameter>\n</function>\n"
    "</seed:tool_call>\n<seed:tool_call>\n<function=edit>\n<parameter=path>b.txt</parameter>\n<parameter=line>3"
    "</parameter>\n<parameter=dry_run>false</parameter>\n<parameter=tags>[\"x\"]</parameter>\n<parameter=note>null"
    "</parameter>\n</function>\n</seed:tool_call>",
    "kimi-k2": '<|tool_calls_section_begin|><|tool_call_begin|>functions.read_file:0<|tool_call_argument_begin|>'
    '{"path": "src/a.py"}<|tool_call_end|><|tool_call_begin|>functions.edit:1<|tool_call_argument_begin|>'
    '{"path": "b.txt", "line": 3, "dry_run": false, "tags": ["x"], "note": null}<|tool_call_end|><|tool_calls_section_end|>',
    "deepseek-v31": '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>read_file<｜tool▁sep｜>{"path": "src/a.py"}<｜tool▁call▁end｜>'
    '<｜tool▁call▁begin｜>edit<｜tool▁sep｜>{"path": "b.txt", "line": 3, "dry_run": false, "tags": ["x"], "note": null}'
    '<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
    "deepseek-v3": '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>read_file\n```json\n'
    '{"path": "src/a.py"}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>edit\n```json\n'
    '{"path": "b.txt", "line": 3, "dry_run": false, "tags": ["x"], "note": null}\n```<｜tool▁call▁end｜>'
    '<｜tool▁calls▁end｜>',
    "minimax-m2": '<minimax:tool_call>\n<invoke name="read_file">\n<parameter name="path">src/a.py</parameter>\n'
    '</invoke>\n<invoke name="edit">\n<parameter name="path">b.txt</parameter>\n<parameter name="line">3'
    '</parameter>\n<parameter name="dry_run">false</parameter>\n<parameter name="tags">["x"]</parameter>\n'
    '<parameter name="note">null</parameter>\n</invoke>\n</minimax:tool_call>',
    "gpt-oss": '<|start|>assistant<|channel|>commentary to=functions.read_file <|constrain|>json<|message|>'
    '{"path": "src/a.py"}<|call|><|start|>assistant<|channel|>commentary to=functions.edit <|constrain|>json'
    '<|message|>{"path": "b.txt", "line": 3, "dry_run": false, "tags": ["x"], "note": null}<|call|>',
    "deepseek-v32": '<｜DSML｜function_calls>\n<｜DSML｜invoke name="read_file">\n'
    '<｜DSML｜parameter name="path" string="true">src/a.py</｜DSML｜parameter>\n</｜DSML｜invoke>\n'
    '<｜DSML｜invoke name="edit">\n<｜DSML｜parameter name="path" string="true">b.txt</｜DSML｜parameter>\n'
    '<｜DSML｜parameter name="line" string="false">3</｜DSML｜parameter>\n'
    '<｜DSML｜parameter name="dry_run" string="false">false</｜DSML｜parameter>\n'
    '<｜DSML｜parameter name="tags" string="false">["x"]</｜DSML｜parameter>\n'
    '<｜DSML｜parameter name="note" string="false">null</｜DSML｜parameter>\n</｜DSML｜invoke>\n'
    '</｜DSML｜function_calls>',
    "phi4-mini": 'functools[{"name": "read_file", "arguments": {"path": "src/a.py"}}, {"name": "edit", "arguments": '
    '{"path": "b.txt", "line": 3, "dry_run": false, "tags": ["x"], "note": null}}]',
    "llama4-pythonic": '<|python_start|>[read_file(path="src/a.py"), edit(path="b.txt", line=3, dry_run=False, '
    'tags=["x"], note=None)]<|python_end|>',
    "cline-xml": "<read_file>\n<path>src/a.py</path>\n</read_file>\n\n<edit>\n<path>b.txt</path>\n<line>3</line>\n"
    '<dry_run>false</dry_run>\n<tags>["x"]</tags>\n<note>null</note>\n</edit>',
    "gemma4": '<|tool_call>call:read_file{path:<|"|>src/a.py<|"|>}<tool_call|><|tool_call>call:edit{path:<|"|>b.txt'
    '<|"|>,line:3,dry_run:false,tags:[<|"|>x<|"|>],note:null}<tool_call|>',
    "kimi-k3": '<|open|>tools<|sep|><|open|>call tool="read_file" index="1"<|sep|><|open|>argument key="path" '
    'type="string"<|sep|>src/a.py<|close|>argument<|sep|><|close|>call<|sep|><|open|>call tool="edit" index="2"<|sep|>'
    '<|open|>argument key="path" type="string"<|sep|>b.txt<|close|>argument<|sep|><|open|>argument key="line" '
    'type="integer"<|sep|>3<|close|>argument<|sep|><|open|>argument key="dry_run" type="boolean"<|sep|>false'
    '<|close|>argument<|sep|><|open|>argument key="tags" type="array"<|sep|>["x"]<|close|>argument<|sep|>'
    '<|open|>argument key="note" type="null"<|sep|>null<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>',
    "glm47": "<tool_call>read_file<arg_key>path</arg_key><arg_value>src/a.py</arg_value></tool_call>\n<tool_call>edit"
    "<arg_key>path</arg_key><arg_value>b.txt</arg_value><arg_key>line</arg_key><arg_value>3</arg_value>"
    "<arg_key>dry_run</arg_key><arg_value>false</arg_value><arg_key>tags</arg_key><arg_value>[\"x\"]</arg_value>"
    "<arg_key>note</arg_key><arg_value>null</arg_value></tool_call>",
    "deepseek-v4": '<｜DSML｜tool_calls>\n<｜DSML｜invoke name="read_file">\n'
    '<｜DSML｜parameter name="path" string="true">src/a.py</｜DSML｜parameter>\n</｜DSML｜invoke>\n'
    '<｜DSML｜invoke name="edit">\n<｜DSML｜parameter name="path" string="true">b.txt</｜DSML｜parameter>\n'
    '<｜DSML｜parameter name="line" string="false">3</｜DSML｜parameter>\n'
    '<｜DSML｜parameter name="dry_run" string="false">false</｜DSML｜parameter>\n'
    '<｜DSML｜parameter name="tags" string="false">["x"]</｜DSML｜parameter>\n'
    '<｜DSML｜parameter name="note" string="false">null</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>',
    "minimax-m3": ']<]minimax[>[<tool_call>\n]<]minimax[>[<invoke name="read_file">]<]minimax[>[<path>src/a.py'
    ']<]minimax[>[</path>]<]minimax[>[</invoke>\n]<]minimax[>[<invoke name="edit">]<]minimax[>[<path>b.txt'
    ']<]minimax[>[</path>]<]minimax[>[<line>3]<]minimax[>[</line>]<]minimax[>[<dry_run>false]<]minimax[>[</dry_run>'
    ']<]minimax[>[<tags>]<]minimax[>[<item>x]<]minimax[>[</item>]<]minimax[>[</tags>]<]minimax[>[</invoke>\n'
    ']<]minimax[>[</tool_call>',
    "narration": '[Called read_file with args: {"path": "src/a.py"}] [Called edit with args: {"path": "b.txt", '
    '"line": 3, "dry_run": false, "tags": ["x"], "note": null}]',
    "roo-tool-call": '[TOOL_CALL]\n{tool => "read_file", args => {\n  --path "src/a.py"\n}}\n[/TOOL_CALL]\n[TOOL_CALL]\n'
    '{tool => "edit", args => {\n  --path "b.txt"\n  --line 3\n  --dry_run false\n  --tags ["x"]\n  --note null\n}}\n'
    "[/TOOL_CALL]",
}

TOOLS = (
    ToolSpec("read_file", {"type": "object", "properties": {"path": {"type": "string"}}}),
    ToolSpec(
        "edit",
        {
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "line": {"type": "integer"},
                "dry_run": {"type": "boolean"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "note": {"type": ["integer", "null"]},
                "ticket": {"type": "string"},
            },
        },
    ),
)

# Formats the reference proxy rescues from an upstream's text; Cline XML is what
# XML-reading clients parse, read back here the way they read it.
RESCUED = sorted(set(FORMATS) - {"cline-xml"})


def test_every_format_has_a_sample() -> None:
    assert sorted(SAMPLES) == sorted(FORMATS)


def writable(fmt: TextFormat, calls: list[Call]) -> list[Call]:
    """``calls`` as the format can write them: a format whose template has no null
    (MiniMax M3's leaves the argument out) gets them without their null arguments."""
    try:
        fmt.write(calls)
    except FormatError:
        return [Call(c.name, {k: v for k, v in c.arguments.items() if v is not None}) for c in calls]
    return calls


@pytest.mark.parametrize("format_id", sorted(FORMATS))
def test_interface(format_id: str) -> None:
    fmt: TextFormat = FORMATS[format_id]
    assert fmt.id == format_id
    assert fmt.family and fmt.model and fmt.delimiters
    text = fmt.write(writable(fmt, [READ, EDIT]))
    missing = [d for d in fmt.delimiters if d not in text]
    assert not missing, f"{format_id}: delimiters it never writes: {missing}"


@pytest.mark.parametrize("format_id", sorted(FORMATS))
def test_sample(format_id: str) -> None:
    fmt = FORMATS[format_id]
    assert fmt.write(writable(fmt, [READ, EDIT])) == SAMPLES[format_id]


@pytest.mark.parametrize("format_id", sorted(FORMATS))
def test_no_calls_is_refused(format_id: str) -> None:
    with pytest.raises(FormatError):
        FORMATS[format_id].write([])


def test_tool_code_refuses_an_argument_named_tool() -> None:
    with pytest.raises(FormatError, match="tool"):
        FORMATS["tool-code"].write([Call("run", {"tool": "x"})])


NESTED = Call("edit", {"path": "é/日本.txt 🎉", "line": 0, "dry_run": True, "tags": [], "note": None, "ticket": "0042"})


@pytest.mark.parametrize("format_id", RESCUED)
@pytest.mark.parametrize("calls", [[READ], [READ, EDIT], [NESTED]], ids=["one", "two", "unicode"])
def test_rescued_back(format_id: str, calls: list[Call]) -> None:
    calls = writable(FORMATS[format_id], calls)
    text = "Let me look.\n\n" + FORMATS[format_id].write(calls)
    visible, rescued = rescue_text(text, TOOLS)
    assert visible.strip() == "Let me look."
    assert [(c.name, json.loads(c.arguments)) for c in rescued] == [(c.name, dict(c.arguments)) for c in calls]


@pytest.mark.parametrize("calls", [[READ], [READ, EDIT]], ids=["one", "two"])
def test_cline_xml_read_back(calls: list[Call]) -> None:
    text = FORMATS["cline-xml"].write(calls)
    vocabulary = {t.name: frozenset((t.parameters or {}).get("properties", {})) for t in TOOLS}
    parsed = parse_xml_calls(text, vocabulary)
    got: list[tuple[str, dict[str, Any]]] = [(c.name, dict(c.params)) for c in parsed.calls]
    expected = [(c.name, {k: v if isinstance(v, str) else json.dumps(v) for k, v in c.arguments.items()}) for c in calls]
    assert got == expected
    assert parsed.outside.strip() == ""
