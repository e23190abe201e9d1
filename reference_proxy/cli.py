"""``toolcall-conformance proxy``: run the reference proxy."""

from __future__ import annotations

import click


@click.command()
def proxy() -> None:
    """Run the reference proxy (not built yet)."""
    raise click.ClickException("the reference proxy is not built yet")
