"""Deliberately broken proxies the harness must catch, and one correct-but-different
proxy it must pass (``tests/project/test_mutants.py`` plays them).

Adding a mutant is adding one ``Mutant`` entry: what it breaks, the rule ids the
harness must report, the scenarios that expose it, and how it is built from the
reference proxy (``base.rewritten`` with a ``Rewriter`` for wire breakage,
``base.with_parts`` for a swapped piece of behaviour). Chat-completion mutants live
in ``mutants.openai``, Messages mutants (rewriters of ``SSEEvent``s with their
``event:`` names) in ``mutants.anthropic``, mutants of the proxy translating between
the two APIs in ``mutants.translation``, mutants of its Responses API (and a correct
variant of it) in ``mutants.responses``. ``mutants.fuzz_only`` holds mutants no
hand-written scenario exposes and only generated cases catch (``FUZZ_ONLY``); proxies
whose state is shared between exchanges or choices are in ``mutants.isolation``, and
per-format parser defects in ``mutants.formats``; mutants of the proxy as a Kiro gateway in
``mutants.kiro``, as an Ollama gateway in ``mutants.ollama``; ``mutants.clients`` holds those real clients' requests expose (played under
their profiles, some against a strict upstream).
"""

from mutants import anthropic, clients, formats, isolation, kiro, ollama, openai, responses, translation
from mutants.fuzz_only import ALL_AT_ONCE, FUZZ_ONLY
from mutants.base import Mutant
from mutants.different import CORRECT_BUT_DIFFERENT

MUTANTS: tuple[Mutant, ...] = (*openai.MUTANTS, *anthropic.MUTANTS, *translation.MUTANTS, *isolation.MUTANTS,
                              *formats.MUTANTS, *responses.MUTANTS, *kiro.MUTANTS, *ollama.MUTANTS,
                              *clients.MUTANTS)
CORRECT: tuple[Mutant, ...] = (CORRECT_BUT_DIFFERENT, anthropic.CORRECT_BUT_DIFFERENT_MESSAGES,
                               responses.CORRECT_BUT_DIFFERENT_RESPONSES)
# Correct in one respect where the reference made another choice: each passes its cases, with --strict too.
CORRECT_VARIANTS: tuple[Mutant, ...] = (openai.RELAYS_HALF_CALL, anthropic.RELAYS_HALF_TOOL_USE,
                                        openai.ERROR_AT_MALFORMED_EVENT, translation.TRANSLATES_OTHERWISE_FOR_OPENAI,
                                        translation.TRANSLATES_OTHERWISE_FOR_MESSAGES)
ALL: tuple[Mutant, ...] = (*MUTANTS, *CORRECT, *CORRECT_VARIANTS, *FUZZ_ONLY, ALL_AT_ONCE)
