"""The rule catalogue (``harness/judge/rules/<group>.yaml``): every entry belongs to a check of the
module beside it and every registered rule has its entry there; a bad entry is refused, located."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

import harness.judge.rules  # noqa: F401 - registers every rule
from harness.core.errors import ConformanceError
from harness.judge.rules import catalogue
from harness.judge.rules.catalogue import RuleCatalogueError
from harness.judge.rules.citations import SOURCES
from harness.judge.rules.registry import ENTRIES, rule_group

RULES_DIR = Path(catalogue.__file__).parent


def _module_of(rule_id: str) -> str:
    entry = ENTRIES[rule_id]
    check: Any = entry.check or entry.pair_check or entry.item_check or entry.round_check
    return str(check.__module__)


def test_each_catalogue_entry_has_a_check_in_its_module_and_each_rule_an_entry_beside_its_check() -> None:
    described: dict[str, str] = {}
    for path in sorted(RULES_DIR.glob("*.yaml")):
        for rule_id in yaml.safe_load(path.read_text(encoding="utf-8")):
            described[rule_id] = f"harness.judge.rules.{path.stem}"
    assert described, "no catalogue found"
    unregistered = sorted(set(described) - set(ENTRIES))
    undescribed = sorted(set(ENTRIES) - set(described))
    elsewhere = sorted(i for i in set(described) & set(ENTRIES) if _module_of(i) != described[i])
    assert not unregistered, f"catalogue entries without a registered check: {unregistered}"
    assert not undescribed, f"registered rules without a catalogue entry: {undescribed}"
    assert not elsewhere, f"entries not beside their check's module: {elsewhere}"


def test_every_catalogue_file_is_valid_and_cites_named_sources_by_name() -> None:
    by_url = {url: name for name, url in SOURCES.items()}
    for path in sorted(RULES_DIR.glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        catalogue.parse(data, path.name)
        for rule_id, entry in data.items():
            cited = [*entry.get("source", ()), *entry.get("breaks", {}).get("source", ())]
            spelled = [url for url in cited if url in by_url]
            assert not spelled, f"{path.name}: {rule_id} writes out {spelled}: cite by name ({by_url[spelled[0]]})"


_CITED = {"clients": ["openai-python"], "how": "raises on it"}


@pytest.mark.parametrize(
    ("entry", "refusal"),
    [
        ({"statement": "A rule.", "severity": "client"}, r"CITE-001: 'breaks' is a required property"),
        ({"statement": "A rule.", "severity": "client", "breaks": {"clients": [], "how": "it breaks"}},
         r"CITE-001\.breaks\.clients: \[\] should be non-empty"),
        ({"statement": "A rule.", "severity": "client",
          "breaks": {"clients": ["a client nobody can look up"], "how": "it breaks"}},
         r"CITE-001\.breaks\.clients\.0: 'a client nobody can look up' is not one of"),
        ({"statement": "A rule.", "severity": "client", "breaks": {"clients": ["openai-python"], "how": " "}},
         r"CITE-001\.breaks\.how: ' ' does not match"),
        ({"statement": "A rule.", "severity": "client", "breaks": {**_CITED, "source": ["see the SDK"]}},
         r"CITE-001\.breaks\.source\.0: 'see the SDK' does not match '\^https://'"),
        ({"statement": "A rule.", "severity": "spec", "breaks": _CITED},
         r"CITE-001: only a .client. rule cites the clients it breaks"),
        ({"statement": "A rule.", "severity": "spec", "source": ["the spec"]},
         r"CITE-001\.source\.0: .*a source is a public https URL or the name of one"),
        ({"statement": "A rule.", "severity": "must"}, r"CITE-001\.severity: 'must' is not one of"),
        ({"statement": "A rule.", "severity": "spec", "stage": "stream"},
         r"CITE-001: Additional properties are not allowed \('stage'"),
        ({"severity": "spec"}, r"CITE-001: 'statement' is a required property"),
    ],
    ids=["client-uncited", "no-client", "unknown-client", "no-how", "source-not-url", "spec-citing-clients",
         "spec-source-not-url", "unknown-severity", "behaviour-in-data", "no-statement"],
)
def test_a_bad_entry_is_refused_naming_the_file_the_rule_and_the_field(entry: dict[str, Any], refusal: str) -> None:
    """A client rule names the real clients it breaks and how, or its group does not import,
    so no client rule ships uncited; the error says where to look."""
    with pytest.raises(RuleCatalogueError, match=rf"^cite\.yaml: {refusal}") as refused:
        catalogue.parse({"CITE-001": entry}, "cite.yaml")
    assert isinstance(refused.value, ConformanceError)


def test_a_rule_id_not_of_the_form_prefix_number_is_refused() -> None:
    with pytest.raises(RuleCatalogueError, match=r"^cite\.yaml: \(top level\): 'CITE-1' does not match"):
        catalogue.parse({"CITE-1": {"statement": "A rule.", "severity": "spec"}}, "cite.yaml")


def test_a_named_source_is_read_as_its_url() -> None:
    (described,) = catalogue.parse({"CITE-001": {"statement": "A rule.", "severity": "client", "breaks": {
        **_CITED, "source": ["OPENAI_SSE", "https://example.org/x"], "versions": "all"}}}, "cite.yaml").values()
    assert described.breaks is not None
    assert described.breaks.source == (SOURCES["OPENAI_SSE"], "https://example.org/x")
    assert described.breaks.versions == "all"


def test_a_registered_rule_without_an_entry_is_refused_naming_the_catalogue() -> None:
    rule = rule_group("citations", "CITE", described={})
    with pytest.raises(RuleCatalogueError, match=r"^harness/judge/rules/cite\.yaml: CITE-001: .*no entry"):
        rule("CITE-001")(lambda ctx: iter(()))
    assert "CITE-001" not in ENTRIES


def test_a_group_without_a_catalogue_file_is_refused_naming_it() -> None:
    with pytest.raises(RuleCatalogueError, match=r"^harness/judge/rules/nosuch\.yaml: "):
        rule_group("nothing", "NOSUCH")


def test_the_feature_rules_and_only_they_name_features_in_code() -> None:
    rule = rule_group("citations", "CITE", described=catalogue.parse(
        {"CITE-001": {"statement": "A rule.", "severity": "feature"}}, "cite.yaml"))
    with pytest.raises(ValueError, match="names the features it judges"):
        rule("CITE-001")(lambda ctx: iter(()))
    assert "CITE-001" not in ENTRIES
