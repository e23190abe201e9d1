"""``toolcall-conformance mock``: run the mock backend."""

from __future__ import annotations

import click


@click.command()
def mock() -> None:
    """Run the mock backend (not built yet)."""
    raise click.ClickException("the mock backend is not built yet")
