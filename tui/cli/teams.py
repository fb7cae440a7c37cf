"""``swarm-tui teams``: the built-in teams and the user's ([team.NAME] tables, or one team file)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from core.runtime.config import ConfigError
from core.runtime.config_file import load_settings
from core.runtime.teams import describe_teams, load_team_file

from .options import OneLineParser, fail


def main(argv: Sequence[str]) -> int:
    parser = OneLineParser(prog="swarm-tui teams", description="List the teams a run can use (--team NAME).")
    parser.add_argument(
        "--config", type=Path, help="config file (default: the user config dir's swarm-tui/config.toml)"
    )
    parser.add_argument("file", nargs="?", type=Path, help="a team file to check and show as well")
    args = parser.parse_args(list(argv))
    try:
        settings = load_settings(args.config)
        if args.file is not None:
            name, table = load_team_file(args.file)
            settings = replace(settings, teams={**settings.teams, name: table})
        print(describe_teams(settings))
    except ConfigError as exc:
        fail(str(exc))
    except BrokenPipeError:  # e.g. piped into head
        return 0
    return 0
