"""The rules table, generated from the registry (docs/rules.md is this text)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache

from harness.core.dialects.servers import SERVERS
from harness.judge.rules.citations import CURRENT, Breaks
from harness.judge.rules.registry import ENTRIES, Rule

_GROUP_ORDER = (
    "transport",
    "framing",
    "chunks",
    "body",
    "tool_calls",
    "calls",
    "content",
    "usage",
    "xml-client",
    "upstream",
    "sdk",
    "errors",
    "equivalence",
    "isolation",
)


def _sort_key(rule_id: str) -> tuple[int, str]:
    group = ENTRIES[rule_id].rule.group
    return (_GROUP_ORDER.index(group) if group in _GROUP_ORDER else len(_GROUP_ORDER), rule_id)


def ordered_ids() -> tuple[str, ...]:
    """The rule ids in table order. Every judged answer walks them, so the sort is kept until a
    rule is added (rules are only ever added, never replaced: a second registration raises, so
    their count tells the table apart)."""
    return _ordered(len(ENTRIES))


@cache
def _ordered(count: int) -> tuple[str, ...]:
    return tuple(sorted(ENTRIES, key=_sort_key))


@dataclass(frozen=True)
class Proof:
    """Where a rule is shown to work: the unit cases that break it and the mutant proxies
    it catches, each keyed by the file that holds them (paths from the repository root)."""

    cases: Mapping[str, Sequence[str]]
    mutants: Mapping[str, Sequence[str]]


def check_location(rule_id: str) -> tuple[str, str]:
    """The file (from the repository root) and the function that judge a rule."""
    entry = ENTRIES[rule_id]
    check = entry.check or entry.pair_check or entry.item_check or entry.round_check
    assert check is not None, rule_id
    return check.__module__.replace(".", "/") + ".py", check.__qualname__


def _by_file(found: Mapping[str, Sequence[str]], most: int = 4) -> str:
    parts = []
    for path, names in found.items():
        shown = ", ".join(f"`{n}`" for n in names[:most])
        more = f" and {len(names) - most} more" if len(names) > most else ""
        parts.append(f"[{path.rsplit('/', 1)[-1]}](../{path}): {shown}{more}")
    return "; ".join(parts) or "none"


def _who(rule: Rule) -> str:
    """The table's short answer to "who breaks": the clients a client rule names."""
    return ", ".join(rule.breaks.clients) if isinstance(rule.breaks, Breaks) else ""


def _links(urls: Sequence[str]) -> str:
    return ", ".join(f"<{url}>" for url in urls)


def _why(rule: Rule) -> list[str]:
    """The rule's citation, as the lines of its section."""
    cited = rule.breaks
    lines = []
    if isinstance(cited, Breaks):
        lines.append(f"- **Breaks:** {', '.join(cited.clients)}")
        lines.append(f"- **How:** {cited.how.rstrip('.')}.")
        if cited.versions:
            lines.append(f"- **Versions that break:** {cited.versions.rstrip('.')}.")
        if cited.source:
            lines.append(f"- **Sources:** {_links(cited.source)}")
    if rule.source:
        lines.append(f"- **Specification:** {_links(rule.source)}")
    return lines


def rules_markdown(proofs: Mapping[str, Proof] | None = None) -> str:
    """The Markdown table of every rule: id, severity, group, statement and the clients it
    breaks; with ``proofs``, a section per rule giving who breaks and how (with sources),
    its function, breaking cases and mutants."""
    lines = [
        "# Conformance rules",
        "",
        "Generated from `harness/judge/rules` (`harness.judge.rules.rules_markdown()`, with the proofs collected by",
        "`python tests/rule_proofs.py`, which rewrites this file); do not edit by hand.",
        "",
        "Severity **client**: at least one named real client breaks or silently misbehaves; always checked.",
        "Severity **spec**: only the specification requires it; checked with `--strict`.",
        "Severity **feature**: a promise only some proxies make; checked when the proxy claims the feature",
        "(`--features`, listed in docs/scenarios.md).",
        "Every client rule cites who breaks: the table's last column names the clients, and the rule's own",
        "section below says what each one does (the error it raises, quoted where it is known) and where to",
        "read it (an SDK's source file or an issue). The registry refuses a client rule without such a",
        "citation (`breaks:` in the rule catalogue, `harness/judge/rules/<group>.yaml`): a rule no named client",
        "breaks on is a spec rule, a feature, or no rule at all. Spec rules name the specification page they come",
        "from.",
        "Where a citation has been checked against the clients' current releases it also names the versions",
        "that break (a claim true only of old releases says so); the releases checked: "
        + "; ".join(f"{client}: {release}" for client, release in CURRENT.items()) + ".",
        "For the Python SDKs this is a test: `tests/judge/test_client_breaks.py` feeds each such rule's breaking",
        "answer to the installed openai and anthropic packages and fails when they no longer break as cited.",
        "Rule ids are stable: a rule keeps its id for good, and a retired id is never reused (so the rules of",
        "the `xml-client` profile, for clients that read tool calls as XML in the content, keep the `VTC` prefix",
        "of its first name, \"virtual tool calling\").",
        "",
        "| id | severity | group | statement | breaks |",
        "| --- | --- | --- | --- | --- |",
    ]
    for rule_id in ordered_ids():
        rule = ENTRIES[rule_id].rule
        statement = rule.statement.replace("|", "\\|")
        shown = f"[{rule.id}](#{rule.id.lower()})" if proofs is not None else rule.id
        lines.append(f"| {shown} | {rule.severity} | {rule.group} | {statement} | {_who(rule)} |")
    if proofs is not None:
        lines += [
            "",
            "## Each rule: who breaks, and where it is proven",
            "",
            "For each rule: the clients it breaks and how (client rules), its check (the function in",
            "`harness/judge/rules` that judges it), the unit cases that break it (an answer the rule must reject, next",
            "to a correct answer it accepts), and the mutant proxies in `tests/mutants` it catches when the",
            "harness plays them live (`tests/project/test_mutants.py`).",
        ]
        for rule_id in ordered_ids():
            rule = ENTRIES[rule_id].rule
            path, function = check_location(rule_id)
            proof = proofs.get(rule_id, Proof({}, {}))
            lines += [
                "",
                f"### {rule_id}",
                "",
                *_why(rule),
                f"- **Check:** [`{function}`](../{path})",
                f"- **Breaking cases:** {_by_file(proof.cases)}",
                f"- **Mutants caught:** {_by_file(proof.mutants)}",
            ]
    return "\n".join(lines + _habits()) + "\n"


def _habits() -> list[str]:
    """Each real server's habits (``harness.core.dialects.servers``): what a proxy must do with each."""
    lines = [
        "",
        "## Real servers' habits: tolerate or normalise",
        "",
        "Played with `--upstream-profile` (docs/mock-backend.md, \"Upstream server profiles\"). **tolerate**: a proxy",
        "must not crash on it, lose text, or lose or split a call, and relaying it unchanged never fails a rule;",
        "**normalise**: a named client breaks on it, so a proxy must rewrite it before its client sees it. The rules",
        "above judge both (a proxy that breaks on a habit fails them only under that server's profile:",
        "`tests/mutants/servers.py`, proven by `tests/core/test_upstream_profiles.py`).",
        "",
        "| server | habit | what it does | verdict | who reads it / who breaks | seen in |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for server in SERVERS.values():
        for dialect, habits in server.habits.items():
            for habit in habits:
                seen = ", ".join(f"<{url}>" for url in habit.sources)
                cells = [f"{server.name} ({dialect.name})", f"`{habit.name}`", habit.says, f"**{habit.verdict}**",
                         habit.why, seen]
                lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return lines
