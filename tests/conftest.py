"""The fixtures every test module may use, defined in ``tests/support``."""

from support.servers import servers  # noqa: F401  (every live server in the tests is started through it)

from hypothesis import settings

# The project's own suite gates every change, so its property tests play the same examples
# on every run (derived from each test): a failure is the change's, never the draw's. New
# examples are searched for by `toolcall-conformance fuzz` and the long runs, which print
# their seed.
settings.register_profile("gate", derandomize=True, database=None)
settings.load_profile("gate")
