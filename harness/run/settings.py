"""What a user passes for a run, parsed once (models, headers, claimed features) and the settings every
item of a session shares; the plugin, the CLI, the fuzzer and the soak read them the same way."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from harness.core.dialects.clients import Profile, current_name
from harness.core.frames.shrink import DEFAULT_SHRINK_BUDGET
from harness.core.scenario.model import Scenario

# --------------------------------------------------------------------------- user settings


@dataclass(frozen=True)
class ModelChoice:
    """``--model NAME`` for every scenario and ``--model FAMILY=NAME`` per family."""

    default: str | None = None
    per_family: Mapping[str, str] = field(default_factory=dict)

    def for_scenario(self, scenario: Scenario) -> str | None:
        """The model a case is sent with: its family's, else that of a format whose rescue its verdict relies
        on (a fault case carrying a Hermes call goes out under ``--model hermes=NAME``: a proxy that picks its
        parser by model name, as llm-toolcall-proxy's ``converters/factory.py`` does, reads it as Hermes
        only then), else the run's."""
        for family in (scenario.family, *scenario.rescues):
            if family in self.per_family:
                return self.per_family[family]
        return self.default

    def as_options(self) -> list[str]:
        out = [] if self.default is None else [self.default]
        return out + [f"{fam}={name}" for fam, name in self.per_family.items()]


def parse_models(values: Iterable[str]) -> ModelChoice:
    default: str | None = None
    per_family: dict[str, str] = {}
    for value in values:
        family, eq, name = value.partition("=")
        if eq:
            if not family.strip() or not name.strip():
                raise ValueError(f"--model {value!r}: expected NAME or FAMILY=NAME")
            per_family[family.strip()] = name.strip()
        elif value.strip():
            default = value.strip()
        else:
            raise ValueError("--model: the model name is empty")
    return ModelChoice(default, per_family)


def parse_header(value: str) -> tuple[str, str]:
    """``'Name: value'`` as given to ``--proxy-header``."""
    name, colon, rest = value.partition(":")
    name = name.strip()
    if not colon or not name or any(c.isspace() for c in name):
        raise ValueError(f"--proxy-header {value!r}: expected 'Name: value'")
    return name, rest.strip()


def parse_headers(values: Iterable[str]) -> dict[str, str]:
    return dict(parse_header(v) for v in values)


def parse_features(values: Iterable[str]) -> frozenset[str]:
    """``--features a,b --features c`` → {a, b, c}; an old spelling (``vtc``) is read as today's."""
    return frozenset(current_name(part.strip()) for value in values for part in value.split(",") if part.strip())


def with_profile_features(features: Iterable[str], profile: Profile | None) -> frozenset[str]:
    """The features claimed, plus those an explicit ``--client-profile`` implies: asking
    for the xml-client profile says the proxy serves XML-reading clients, so it claims ``xml-client``."""
    return frozenset(features) | frozenset(profile.features if profile is not None else ())


@dataclass(frozen=True)
class RunSettings:
    """What every item of a session shares."""

    proxy_url: str
    features: frozenset[str] = frozenset()
    strict: bool = False
    timeout: float = 10.0
    models: ModelChoice = field(default_factory=ModelChoice)
    proxy_headers: Mapping[str, str] = field(default_factory=dict)
    rechunk: int = 0
    seed: int = 0
    shrink_budget: int = DEFAULT_SHRINK_BUDGET
