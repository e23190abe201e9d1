"""``toolcall-conformance import``: captured exchanges in, scenario files out.

The shell around ``captures`` (reading formats) and ``importer`` (building the
scenario): it reads the files, picks where to write and turns every problem into one
``error:`` line with exit status 2.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

import click

from harness.capture.detect import read_captures
from harness.capture.errors import CaptureError
from harness.capture.model import FORMATS, Capture, CaptureFormat
from harness.core.errors import ConformanceError
from harness.capture.importer import ImportedScenario, ImportOptions, check_names, import_capture

EXIT_BAD_INPUT = 2


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except IsADirectoryError as exc:
        raise CaptureError(f"{path}: is a folder, not a capture file") from exc
    except OSError as exc:
        raise CaptureError(f"{path}: cannot read: {exc.strerror or exc}") from exc


def _is_folder(output: Path, raw: str, count: int) -> bool:
    return output.is_dir() or raw.endswith(("/", "\\")) or count > 1


def _ids(captures: Sequence[Capture], options: ImportOptions) -> list[str | None]:
    """The id of each scenario: ``--id`` as given for one capture, numbered for several;
    repeated defaults (two files with one stem) get a suffix."""
    if options.id is None:
        return [None] * len(captures)
    if len(captures) == 1:
        return [options.id]
    return [f"{options.id}-{c.entry if c.entry is not None else n}" for n, c in enumerate(captures, start=1)]


def _unique(
    results: list[ImportedScenario], captures: Sequence[Capture], options: ImportOptions
) -> list[ImportedScenario]:
    seen: dict[str, int] = {}
    out: list[ImportedScenario] = []
    for result, capture in zip(results, captures):
        sid = result.scenario.id
        seen[sid] = seen.get(sid, 0) + 1
        if seen[sid] > 1:
            result = import_capture(capture, dataclasses.replace(options, id=f"{sid}-{seen[sid]}"))
        out.append(result)
    return out


def _write(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="\n")
    except OSError as exc:
        raise CaptureError(f"{path}: cannot write: {exc.strerror or exc}") from exc


def run_import(
    paths: Sequence[Path],
    *,
    fmt: CaptureFormat | None,
    request_file: Path | None,
    entry: int | None,
    output: str | None,
    options: ImportOptions,
    force: bool,
) -> None:
    """Read every capture, build every scenario, then write them all. Warnings are
    printed only once everything could be imported: a bad input gets its one error line."""
    check_names(options)
    if request_file is not None and len(paths) != 1:
        raise CaptureError("--request goes with exactly one capture file")
    request = _read(request_file) if request_file is not None else None
    captures: list[Capture] = []
    warnings: list[str] = []
    for path in paths:
        found = read_captures(
            _read(path),
            path.name,
            fmt=fmt,
            request=request,
            request_name=request_file.name if request_file is not None else None,
            entry=entry,
        )
        warnings.extend(found.warnings)
        captures.extend(found.captures)
    if len(captures) > 1 and output is None:
        listed = ", ".join(c.origin for c in captures[:8]) + (", ..." if len(captures) > 8 else "")
        raise CaptureError(
            f"{len(captures)} exchanges found ({listed}): choose one with --entry N, or write one file each with -o DIR"
        )
    results = [
        import_capture(capture, dataclasses.replace(options, id=sid))
        for capture, sid in zip(captures, _ids(captures, options))
    ]
    results = _unique(results, captures, options)
    for warning in [*warnings, *(w for r in results for w in r.warnings)]:
        click.echo(f"warning: {warning}", err=True)
    if output is None:
        click.echo(results[0].text, nl=False)
        click.echo(f"{results[0].scenario.id}: review required (see the comments at the top)", err=True)
        return
    target = Path(output)
    folder = _is_folder(target, output, len(results))
    planned = [(target / f"{r.scenario.id}.yaml" if folder else target, r) for r in results]
    taken = [str(dest) for dest, _ in planned if dest.exists()]
    if taken and not force:
        raise CaptureError(f"{', '.join(taken)}: already exists (pass --force to overwrite)")
    for dest, result in planned:
        _write(dest, result.text)
        calls = len(result.scenario.expect.tool_calls)
        click.echo(
            f"wrote {dest}: {len(result.scenario.backend.frames)} frame(s), {calls} expected call(s); "
            "review required (see the comments at the top)",
            err=True,
        )


@click.command("import")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--format", "fmt", type=click.Choice(["auto", *FORMATS]), default="auto", show_default=True,
    help="Capture format: SSE transcript, JSON answer (chat.completion or Messages), HAR, or JSON lines of "
         "request/response pairs.",
)
@click.option("--request", "request_file", type=click.Path(path_type=Path),
              help="The JSON request body, for an SSE or JSON capture saved without it.")
@click.option("--entry", type=click.IntRange(min=1),
              help="Only this exchange: a HAR entry number or a JSON-lines line number.")
@click.option("-o", "--output", metavar="FILE_OR_DIR",
              help="Write here (a folder gets one <id>.yaml per exchange); default: standard output.")
@click.option("--id", "scenario_id", help="Scenario id (default: <family>-<file name>[-<entry>]).")
@click.option("--family", default="imported", show_default=True, help="Scenario family.")
@click.option("--title", help="Scenario title (default: a summary of the capture).")
@click.option("--force", is_flag=True, help="Overwrite existing files.")
def import_command(
    paths: tuple[Path, ...],
    fmt: str,
    request_file: Path | None,
    entry: int | None,
    output: str | None,
    scenario_id: str | None,
    family: str,
    title: str | None,
    force: bool,
) -> None:
    """Turn captured exchanges, OpenAI chat completions or Anthropic Messages (curl SSE
    output, JSON answers, HAR, JSON-lines logs), into scenario files, with the frames
    exactly as captured and an expectation to review."""
    options = ImportOptions(
        id=scenario_id,
        family=family,
        title=title,
        imported_on=datetime.now(timezone.utc).date().isoformat(),
    )
    chosen: CaptureFormat | None = next((f for f in FORMATS if f == fmt), None)
    try:
        run_import(
            paths, fmt=chosen, request_file=request_file, entry=entry, output=output, options=options, force=force
        )
    except ConformanceError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_BAD_INPUT)
