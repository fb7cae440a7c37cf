"""The command-line faces: argument parsing, headless runs, the subcommands. Never imports Textual
(pyproject.toml holds it by contract); ``tui.entry`` opens the screens a command asks for."""
