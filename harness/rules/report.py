"""The rules table, generated from the registry (docs/rules.md is this text)."""

from __future__ import annotations

from harness.rules.registry import ENTRIES

_GROUP_ORDER = (
    "transport",
    "framing",
    "chunks",
    "body",
    "tool_calls",
    "calls",
    "content",
    "usage",
    "vtc",
    "upstream",
    "sdk",
    "errors",
    "equivalence",
    "isolation",
)


def _sort_key(rule_id: str) -> tuple[int, str]:
    group = ENTRIES[rule_id].rule.group
    return (_GROUP_ORDER.index(group) if group in _GROUP_ORDER else len(_GROUP_ORDER), rule_id)


def ordered_ids() -> list[str]:
    return sorted(ENTRIES, key=_sort_key)


def rules_markdown() -> str:
    """The Markdown table of every rule: id, severity, group, statement."""
    lines = [
        "# Conformance rules",
        "",
        "Generated from `harness/rules` (`harness.rules.rules_markdown()`); do not edit by hand.",
        "",
        "Severity **client**: at least one real client breaks or silently misbehaves; always checked.",
        "Severity **spec**: only the specification requires it; checked with `--strict`.",
        "Rule ids are stable: a rule keeps its id for good, and a retired id is never reused.",
        "",
        "| id | severity | group | statement |",
        "| --- | --- | --- | --- |",
    ]
    for rule_id in ordered_ids():
        rule = ENTRIES[rule_id].rule
        statement = rule.statement.replace("|", "\\|")
        lines.append(f"| {rule.id} | {rule.severity} | {rule.group} | {statement} |")
    return "\n".join(lines) + "\n"
