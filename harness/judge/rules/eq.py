"""Equivalence rules: one request, streamed or not, gets the same answer."""

from __future__ import annotations

from collections.abc import Iterator

from harness.judge.compare import diff_calls, fold_ws, render, shorten
from harness.judge.rules.context import Context
from harness.judge.rules.registry import EVERY_PROFILE, Violation, rule_group

rule = rule_group("equivalence", "EQ")


@rule.pair("EQ-001", profiles=EVERY_PROFILE)
def stream_matches_single(streamed: Context, plain: Context) -> Iterator[Violation]:
    if streamed.error_accepted or plain.error_accepted:
        return  # the content rules judge what an error-ended answer must still hold
    differences: list[str] = []
    expected = [(c.name, c.arguments if c.arguments is not None else {}) for c in plain.received_calls]
    call_lines = diff_calls(expected, streamed.received_calls, words=("non-streamed", "streamed"))
    if any(c.arguments is None for c in plain.received_calls):
        raws_s = [(c.name, c.raw) for c in streamed.received_calls]
        raws_p = [(c.name, c.raw) for c in plain.received_calls]
        call_lines = [] if raws_s == raws_p else [f"calls: streamed {render(raws_s)}, non-streamed {render(raws_p)}"]
    if call_lines:
        differences.append("calls: " + "; ".join(call_lines))
    text_s, text_p = fold_ws(streamed.visible_text), fold_ws(plain.visible_text)
    if text_s != text_p:
        differences.append(f"content: streamed {shorten(text_s, 120)}, non-streamed {shorten(text_p, 120)}")
    fin_s, fin_p = streamed.answer.finish_reason, plain.answer.finish_reason
    if fin_s != fin_p:
        differences.append(f"finish_reason: streamed {render(fin_s)}, non-streamed {render(fin_p)}")
    if differences:
        yield Violation(
            " | ".join(differences),
            {
                "streamed": {"content": streamed.visible_text, "finish_reason": fin_s},
                "non_streamed": {"content": plain.visible_text, "finish_reason": fin_p},
            },
        )
