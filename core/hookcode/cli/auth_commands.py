"""``hookcode auth``: log in to a provider (store its API key), list, log out.

Secrets are never printed: ``auth list`` shows where a credential comes from, not what it is.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import typer

from hookcode.cli.state import fail, print_json
from hookcode.errors import HookcodeError

if TYPE_CHECKING:
    from hookcode.cli.state import CliState


def register(app: typer.Typer, state: CliState) -> None:
    auth_app = typer.Typer(help="Provider credentials: login, list, logout.", no_args_is_help=True)
    app.add_typer(auth_app, name="auth")

    def runtime() -> Any:
        try:
            return state.runtime()
        except HookcodeError as exc:
            raise fail(str(exc)) from None

    def methods(rt: Any) -> dict[str, list[Any]]:
        found: dict[str, list[Any]] = {}
        for _plugin, items in rt.plugins.collect("auth", config=rt.config):
            for method in items if isinstance(items, list | tuple) else [items]:
                found.setdefault(method.provider, []).append(method)
        return found

    @auth_app.command("login")
    def login(
        provider: str = typer.Argument(..., help="Provider id (anthropic, openai, ...)."),
        key_stdin: bool = typer.Option(
            False, "--key-stdin", help="Read the API key from stdin instead of prompting."
        ),
    ) -> None:
        """Store an API key for PROVIDER in <data dir>/auth.json (mode 0600)."""
        rt = runtime()
        known = set(methods(rt)) | set(rt.providers())
        if provider not in known:
            names = ", ".join(sorted(known)) or "none installed"
            raise fail(f"unknown provider '{provider}'; known providers: {names}")
        if key_stdin or not sys.stdin.isatty():
            key = sys.stdin.readline()
        else:
            import getpass

            key = getpass.getpass(f"API key for {provider}: ")
        try:
            rt.credentials.set(provider, key)
        except HookcodeError as exc:
            raise fail(str(exc)) from None
        typer.echo(f"stored a key for {provider} in {rt.credentials.path}")

    @auth_app.command("list")
    def list_(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
        """Where each provider's credential comes from (never the secret itself)."""
        rt = runtime()
        try:
            stored = rt.credentials.stored()
        except HookcodeError as exc:
            raise fail(str(exc)) from None
        table = methods(rt)
        rows = []
        for provider in sorted(set(table) | set(stored)):
            env_vars = [v for m in table.get(provider, []) for v in m.env]
            found = rt.credentials.lookup(provider, env_vars)
            rows.append(
                {
                    "provider": provider,
                    "source": found.source if found else None,
                    "methods": [
                        {"type": m.type, "label": m.label, "env": m.env}
                        for m in table.get(provider, [])
                    ],
                }
            )
        if as_json:
            print_json(rows)
            return
        if not rows:
            typer.echo("No providers with credentials. Install a provider plugin.")
            return
        for row in rows:
            env = ", ".join(v for m in row["methods"] for v in m["env"])
            source = row["source"] or "not set"
            typer.echo(f"{row['provider']}: {source}" + (f"  (env: {env})" if env else ""))

    @auth_app.command("logout")
    def logout(provider: str = typer.Argument(..., help="Provider id.")) -> None:
        """Remove the stored key of PROVIDER."""
        rt = runtime()
        if not rt.credentials.remove(provider):
            raise fail(f"no stored key for '{provider}' (see `hookcode auth list`)")
        typer.echo(f"removed the stored key for {provider}")
