"""``toolcall-conformance proxy``: run the reference proxy in front of an OpenAI-compatible upstream."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import click

from reference_proxy.config import (
    CONFIG_FILE_ENV,
    ENV_VARS,
    UPSTREAM_DIALECTS,
    ConfigError,
    ProxyConfig,
    load_config,
    parse_format_rules,
    python_log_level,
    to_env,
)


def _env_help(name: str) -> str:
    return f"[env {ENV_VARS[name]}]"


@click.command()
@click.option("--upstream", metavar="URL", help=f"Upstream base URL, e.g. http://127.0.0.1:9000/v1. {_env_help('upstream')}")
@click.option("--host", help=f"Address to listen on (default 127.0.0.1). {_env_help('host')}")
@click.option("--port", type=int, help=f"Port to listen on (default 8000). {_env_help('port')}")
@click.option(
    "--config",
    "config_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help=f"YAML file of settings (flags and environment win over it). [env {CONFIG_FILE_ENV}]",
)
@click.option("--api-key", help=f"Send this key upstream instead of the client's Authorization. {_env_help('api_key')}")
@click.option("--connect-timeout", type=float, help=f"Seconds to connect upstream (default 10). {_env_help('connect_timeout')}")
@click.option(
    "--read-timeout",
    type=float,
    help=f"Seconds any single upstream read may take before the request fails (default 300). {_env_help('read_timeout')}",
)
@click.option(
    "--body-timeout",
    type=float,
    help=f"Seconds a client may pause while sending its request body before it gets 408 (default 5). {_env_help('body_timeout')}",
)
@click.option(
    "--buffer-cap",
    type=int,
    help=f"Characters a possible tool-call marker may hold back before it is sent as text (default 65536). {_env_help('buffer_cap')}",
)
@click.option(
    "--xml-client-patterns",
    "--vtc-patterns",  # the old spelling
    "xml_client_patterns",
    metavar="LIST",
    help=f"Comma-separated User-Agent words of XML-reading clients (default cline,kilo,roo<3.37: a pattern name<version matches the versions below it; '' disables; "
    f"--vtc-patterns is the old spelling). {_env_help('xml_client_patterns')}",
)
@click.option(
    "--rescue-formats",
    metavar="LIST",
    help="Text formats whose tool calls are rescued, like vLLM's --tool-call-parser: 'auto' (every format; "
    "default), format ids ('hermes,glm'), or per model ('gpt-oss=gpt-oss;qwen3-coder=qwen-coder,hermes;*=auto', "
    f"the first pattern found in the request's model wins). {_env_help('rescue_formats')}",
)
@click.option(
    "--loop-guard",
    metavar="N|off",
    help=f"Answer by itself once a request holds more than N tool messages (default 20). {_env_help('loop_guard_max_tool_messages')}",
)
@click.option(
    "--system-to-user/--no-system-to-user",
    default=None,
    help=f"Move system messages into the first user message (default off). {_env_help('system_to_user')}",
)
@click.option(
    "--upstream-dialect",
    type=click.Choice(UPSTREAM_DIALECTS, case_sensitive=False),
    help="The API the upstream speaks: native (each client's own; default), or one of the others, to which "
    f"requests of another API are translated. {_env_help('upstream_dialect')}",
)
@click.option(
    "--log-level",
    type=click.Choice(["critical", "error", "warning", "info", "debug"], case_sensitive=False),
    help=f"Default info. {_env_help('log_level')}",
)
@click.option("--workers", type=click.IntRange(1), default=1, show_default=True,
              help="Worker processes (uvicorn's own): each serves requests on its own core; no state is shared.")
def proxy(
    upstream: str | None,
    host: str | None,
    port: int | None,
    config_file: Path | None,
    api_key: str | None,
    connect_timeout: float | None,
    read_timeout: float | None,
    body_timeout: float | None,
    buffer_cap: int | None,
    xml_client_patterns: str | None,
    rescue_formats: str | None,
    loop_guard: str | None,
    system_to_user: bool | None,
    log_level: str | None,
    upstream_dialect: str | None,
    workers: int,
) -> None:
    """Run the reference proxy: a streaming OpenAI-compatible proxy that rescues tool calls
    written as text into structured tool_calls (or Cline-style XML for XML-reading clients)."""
    cli: dict[str, Any] = {
        "upstream": upstream,
        "host": host,
        "port": port,
        "api_key": api_key,
        "connect_timeout": connect_timeout,
        "read_timeout": read_timeout,
        "body_timeout": body_timeout,
        "buffer_cap": buffer_cap,
        "system_to_user": system_to_user,
        "loop_guard_max_tool_messages": loop_guard,
        "log_level": log_level.lower() if log_level else None,
        "upstream_dialect": upstream_dialect.lower() if upstream_dialect else None,
    }
    if xml_client_patterns is not None:
        cli["xml_client_patterns"] = tuple(p.strip() for p in xml_client_patterns.split(",") if p.strip())
    try:
        if rescue_formats is not None:
            cli["rescue_formats"] = parse_format_rules("--rescue-formats", rescue_formats)
        config = load_config(cli, os.environ, config_file)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    serve_forever(config, workers=workers)


def _logging(config: ProxyConfig) -> None:
    logging.basicConfig(
        level=python_log_level(config), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    # One line per request is ours; httpx would add a second one for the upstream call.
    logging.getLogger("httpx").setLevel(max(logging.WARNING, python_log_level(config)))


def app_from_environment() -> Any:
    """The app of one worker process: its settings come from the environment its parent set."""
    from reference_proxy.app import create_app

    config = load_config({}, os.environ)
    _logging(config)
    return create_app(config)


def serve_forever(config: ProxyConfig, *, workers: int = 1) -> None:
    import uvicorn

    from harness.run.servers import listen_socket
    from reference_proxy.app import create_app

    _logging(config)
    features = ", ".join(sorted(config.features())) or "none"
    common: dict[str, Any] = dict(log_level=config.log_level, access_log=False, lifespan="on",
                                  timeout_graceful_shutdown=5)
    if workers > 1:
        click.echo(f"reference proxy on http://{config.host}:{config.port} -> {config.upstream} "
                   f"(features: {features}; {workers} worker processes)", err=True)
        # Each worker builds its own app from the settings resolved here, passed in the environment.
        os.environ.pop(CONFIG_FILE_ENV, None)
        os.environ.update(to_env(config))
        uvicorn.run("reference_proxy.cli:app_from_environment", factory=True, workers=workers, host=config.host,
                    port=config.port, **common)
        return
    # Bound before the banner: a busy port is one line of error, not a banner and a traceback.
    try:
        sock = listen_socket(config.host, config.port)
    except OSError as exc:
        raise click.ClickException(f"cannot listen on {config.host}:{config.port}: {exc.strerror or exc}") from None
    port = sock.getsockname()[1]
    click.echo(f"reference proxy on http://{config.host}:{port} -> {config.upstream} (features: {features})", err=True)
    server = uvicorn.Server(uvicorn.Config(create_app(config), **common))
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()

