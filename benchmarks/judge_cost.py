"""The CPU the rules cost per event of a streamed answer, this tree against another, side by side.

    python benchmarks/judge_cost.py [--before PATH] [--rounds 2] [--formats hermes,qwen-tools]
    python benchmarks/judge_cost.py --quick    (a smoke run of this tree alone, two answers)

An answer cut one character a frame is where the rules' cost per event shows: the whole-library
runs re-split every streamed case that way, and each of its events is read by the rules, by the
official SDK the rules read it with, and validated against the wire schema. Each tree (``PATH``,
another checkout of the project, and this one), in turn and in a process of its own with the
tree first on ``PYTHONPATH``, builds the same answers (the generated cells of ``--formats``
written for Chat Completions clients, in their ``per-char`` re-chunked variant, as the mock
streams them, relayed unchanged), judges each once with every rule (``--strict``) to warm up,
then again under a CPU clock. Printed per run, as a Markdown table: answers, events, CPU seconds
and microseconds per event, the load average (1-minute) before and after, and a digest of every
answer's broken rules (the same digest from both trees is the same verdicts).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent


def measure(formats: list[str], limit: int) -> dict[str, Any]:
    """Build the answers, then judge them under a CPU clock, in this process (the tree on ``sys.path``)."""
    import resource

    from harness.core.exchange import Exchange
    from harness.core.frames.rechunk import apply_variant, variants
    from harness.core.replay.planned import wire_events
    from harness.core.scenario.loading import load_library
    from harness.judge.rules import Options, evaluate

    answers = []
    for scenario in load_library():
        fmt = next((t.removeprefix("format-") for t in scenario.tags if t.startswith("format-")), None)
        if (fmt not in formats or "generated" not in scenario.tags or not scenario.streams
                or scenario.backend.dialect.name != "openai" or scenario.backend.fault is not None):
            continue
        played = apply_variant(scenario, variants(scenario, 1, 20261123)[0])
        raw = b"".join(event.data for event in wire_events(played))
        exchange = Exchange(scenario_id=scenario.id, profile=scenario.client.profile, stream=True,
                            request_body=dict(scenario.client.request), request_headers={}, status=200,
                            response_headers={"content-type": "text/event-stream"}, raw=raw)
        answers.append((played, exchange, Options(profile=scenario.client.profile, strict=True)))
        if len(answers) == limit:
            break

    def cpu() -> float:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    verdicts = [sorted({f.rule_id for f in evaluate(s, ex, opts)}) for s, ex, opts in answers]  # warm-up
    load_before = os.getloadavg()[0]
    start = cpu()
    for scenario, exchange, options in answers:
        evaluate(scenario, exchange, options)
    spent = cpu() - start
    events = sum(ex.raw.count(b"\n\ndata:") for _, ex, _ in answers)
    return {"answers": len(answers), "events": events, "cpu": spent, "load": (load_before, os.getloadavg()[0]),
            "digest": hashlib.sha256(json.dumps(verdicts).encode()).hexdigest()[:12]}


def run_tree(tree: Path, formats: list[str], limit: int) -> dict[str, Any]:
    """``measure`` in a process of its own, with ``tree`` first on the path."""
    code = (f"import json, sys; sys.path.insert(0, {str(tree)!r}); sys.path.insert(0, {str(HERE / 'benchmarks')!r});"
            f"import judge_cost; print(json.dumps(judge_cost.measure({formats!r}, {limit})))")
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tree, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{tree}: {done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--before", type=Path, help="another checkout, measured in turn with this one")
    parser.add_argument("--rounds", type=int, default=2, help="times each tree is measured (default 2)")
    parser.add_argument("--formats", default="hermes,qwen-tools", help="formats whose cells are judged")
    parser.add_argument("--quick", action="store_true", help="two answers, this tree once")
    args = parser.parse_args(argv)
    formats = args.formats.split(",")
    limit = 2 if args.quick else 0
    trees = [("after", HERE)] + ([("before", args.before.resolve())] if args.before and not args.quick else [])
    rounds = 1 if args.quick else args.rounds
    print(f"formats {', '.join(formats)}; per-char variants; {os.cpu_count()} cpus")
    print("| tree | answers | events | CPU s | µs per event | load before–after | verdicts |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for _ in range(rounds):
        for name, tree in trees:
            r = run_tree(tree, formats, limit)
            per = r["cpu"] / max(r["events"], 1) * 1e6
            print(f"| {name} | {r['answers']} | {r['events']} | {r['cpu']:.2f} | {per:.0f} | "
                  f"{r['load'][0]:.1f}–{r['load'][1]:.1f} | {r['digest']} |", flush=True)


if __name__ == "__main__":
    main()
