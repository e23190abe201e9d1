"""What the test modules share, so that no test module imports another: builders of
answers and cases, readers of streams, and the fixtures that serve the packages.

- ``servers``: the ``servers`` fixture every live server is started through;
- ``mock_server``, ``proxy_rig``, ``mutant_rig``: the mock, the reference proxy and the
  mutants' mock-plus-reference, served for a module;
- ``chat_stream``, ``messages_stream``: a client's reading of each API's stream, with the
  grammar asserted;
- ``messages_answers``: Messages answers and scenarios built from plain data;
- ``messages_requests``: Messages requests built from plain data (system messages inside the conversation);
- ``scripted_rescuer``, ``rescue``, ``rescue_cases``: the rescue parser's test doubles,
  helpers and case table;
- ``processes``: a command's output read line by line;
- ``json_values``: every place in a JSON document, for tests that break one at each.
"""

from __future__ import annotations

from reference_proxy.config import ProxyConfig

# Seconds an exchange of a *correct* proxy may take in a test that checks verdicts, not
# speed (whole-library runs, correct-but-different proxies, fixed-seed fuzz budgets). On a
# starved CI machine one exchange can stall for many seconds; that says nothing about the
# proxy, and HTTP-002 (the timeout rule) is proven by its own cases and hanging mutants.
PATIENT_TIMEOUT = 60.0

# What the reference proxy claims, but for fails-fast, for the checks that play a whole
# library: HTTP-006 holds a proxy claiming fails-fast to each fault case's few seconds of
# its own time, and a machine loaded on purpose stretches any fixed bound (16.8 s seen at
# load 14). HTTP-006 itself is proven by its unit cases and the slow-on-upstream-error mutant.
WHOLE_LIBRARY_FEATURES: frozenset[str] = frozenset(
    ProxyConfig(upstream="http://127.0.0.1:1/v1").features() - {"fails-fast"}
)
