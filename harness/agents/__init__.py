"""The agents tier: real coding agents (Claude Code, Codex CLI, OpenCode) run offline
against a proxy in front of the mock backend, and judged on what they did.

A shell layer over the core: ``pins.json`` names each agent's npm package and version,
``install`` puts them in a cache, ``agents`` holds one object per agent (how to run it
hermetically, its tool, how to read its JSON event stream), ``cases`` writes the
multi-step scenarios, ``runner`` plays them and ``judge`` decides.
"""

__all__ = ["agents", "base", "cases", "install", "judge", "runner"]
