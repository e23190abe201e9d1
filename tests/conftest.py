"""The fixtures every test module may use, defined in ``tests/support``."""

from support.servers import servers  # noqa: F401  (every live server in the tests is started through it)
