"""Playing scenarios against a proxy: everything one test item runs, and one replay.

``play`` runs the exchanges of one test item: as written, without streaming, and
re-chunked, shrinking a re-chunk failure to the boundary that causes it. Each exchange
is ``proxy_client.run_exchange``, the only place the harness talks to the proxy under
test; what the user passes is parsed in ``run_settings``. Both are re-exported here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness.core.dialects.clients import Profile
from harness.core.errors import ConformanceFailure
from harness.core.exchange import Exchange
from harness.core.frames.rechunk import Variant, apply_variant, variants
from harness.core.frames.shrink import Shrunk, shrink
from harness.core.records import Attempt, ScenarioRun
from harness.core.scenario.model import Scenario
from harness.judge.rules import Options, compare_answers, compare_item, compare_round, evaluate
from harness.run import isolation
from harness.run.proxy_client import run_exchange
from harness.run.settings import RunSettings
from mock_backends.control import Control

# --------------------------------------------------------------------------- one test item


def _exchange(scenario: Scenario, settings: RunSettings, mock: Control, profile: Profile, stream: bool) -> Exchange:
    return run_exchange(
        scenario,
        proxy_url=settings.proxy_url,
        mock=mock,
        stream=stream,
        profile=profile,
        model=settings.models.for_scenario(scenario),
        proxy_headers=settings.proxy_headers,
        timeout=settings.timeout,
    )


def play(
    scenario: Scenario,
    *,
    settings: RunSettings,
    mock: Control,
    profile: Profile,
) -> ScenarioRun:
    """Every exchange of one item; all failures are collected, none stops the others."""
    options = Options(profile=profile, strict=settings.strict, features=settings.features)
    attempts: list[Attempt] = []
    template = scenario
    if isolation.wants_round(scenario):
        scenario = isolation.tag(scenario, isolation.new_token())
    streamed = _exchange(scenario, settings, mock, profile, scenario.streams)
    kind = "stream" if scenario.streams else "non-stream"
    label = f"{'streaming' if scenario.streams else 'non-streaming'}, as the scenario's request says"
    attempts.append(Attempt(kind, label, scenario, streamed, tuple(evaluate(scenario, streamed, options))))

    replayable = scenario.client.raw_body is None and not scenario.client.truncate_body  # the JSON request is sent
    if scenario.streams and scenario.stream_equivalence and replayable:
        plain = _exchange(scenario, settings, mock, profile, False)
        attempts.append(
            Attempt("non-stream", "the same request with stream: false", scenario, plain,
                    tuple(evaluate(scenario, plain, options)))
        )
        attempts.append(
            Attempt("equivalence", "streamed vs non-streamed answer", scenario, plain,
                    tuple(compare_answers(scenario, streamed, plain, options)), other=streamed)
        )

    # A fault is placed by frame number, so re-split frames would move it: such cases keep their frames.
    if settings.rechunk > 0 and scenario.streams and scenario.rechunk and replayable and scenario.backend.fault is None:
        main_rules = {f.rule_id for f in attempts[0].failures}
        shrunk_once = False
        for variant in variants(scenario, settings.rechunk, settings.seed):
            played = apply_variant(scenario, variant)
            exchange = _exchange(played, settings, mock, profile, True)
            failures = tuple(evaluate(played, exchange, options))
            new_rules = tuple(dict.fromkeys(f.rule_id for f in failures if f.rule_id not in main_rules))
            shrunk: Shrunk | None = None
            if new_rules and not shrunk_once and not exchange.timed_out:
                # Only the first failing variant is shrunk: each shrink step is a full exchange.
                shrunk_once = True
                shrunk = _shrink(scenario, variant, new_rules, settings, mock, profile, options)
            attempts.append(
                Attempt("rechunk", variant.label, played, exchange, failures, variant=variant,
                        shrunk=shrunk, shrunk_rules=new_rules if shrunk else ())
            )
    answers = [(a.label, a.scenario, a.exchange) for a in attempts
               if a.kind != "equivalence" and a.exchange is not None]
    together = tuple(compare_item(answers, options))
    if together:
        attempts.append(Attempt("item", "all the answers of this item together", scenario, None, together))
    if isolation.wants_round(template):
        def one(tagged: Scenario, **how: Any) -> Exchange:
            return run_exchange(tagged, proxy_url=settings.proxy_url, mock=mock, stream=tagged.streams, profile=profile,
                                model=settings.models.for_scenario(tagged), proxy_headers=settings.proxy_headers,
                                timeout=settings.timeout, **how)

        round_ = isolation.play_round(template, one, options, profile, settings.timeout)
        failures = tuple(compare_round(round_, options))
        note = round_.lockstep_note()
        label = f"{isolation.LABEL} ({note})" if note else isolation.LABEL
        attempts.append(Attempt("isolation", label, scenario, None, failures))
    return ScenarioRun(template, profile, tuple(attempts))


def _shrink(
    scenario: Scenario,
    variant: Variant,
    rules: Sequence[str],
    settings: RunSettings,
    mock: Control,
    profile: Profile,
    options: Options,
) -> Shrunk:
    wanted = set(rules)

    def fails(splits: tuple[int, ...]) -> bool:
        played = apply_variant(scenario, variant, splits)
        exchange = _exchange(played, settings, mock, profile, True)
        return any(f.rule_id in wanted for f in evaluate(played, exchange, options))

    return shrink(variant.splits, fails, budget=settings.shrink_budget)


# --------------------------------------------------------------------------- one replay


@dataclass(frozen=True)
class Replay:
    """One exchange replayed on request, with what the rules say about it."""

    scenario: Scenario  # as played (re-split when asked)
    profile: Profile
    exchange: Exchange
    failures: tuple[ConformanceFailure, ...]
    variant: Variant | None = None


def replay(
    scenario: Scenario,
    *,
    settings: RunSettings,
    mock: Control,
    profile: Profile,
    stream: bool | None = None,
    variant_index: int | None = None,
    splits: Sequence[int] | None = None,
) -> Replay:
    """Replay one exchange of ``scenario``: as written, without streaming, one
    re-chunked variant (``settings.seed`` + ``variant_index``) or an explicit split."""
    streaming = scenario.streams if stream is None else stream
    variant: Variant | None = None
    played = scenario
    if variant_index is not None:
        variant = variants(scenario, variant_index + 1, settings.seed)[variant_index]
        played = apply_variant(scenario, variant, splits)
    elif splits is not None:
        played = apply_variant(scenario, Variant(-1, "explicit", settings.seed, tuple(splits)))
    exchange = _exchange(played, settings, mock, profile, streaming)
    options = Options(profile=profile, strict=settings.strict, features=settings.features)
    return Replay(played, profile, exchange, tuple(evaluate(played, exchange, options)), variant)
