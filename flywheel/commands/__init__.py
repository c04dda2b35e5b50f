"""CLI subcommands. Each module: `register(subparsers)`; handlers return an exit code."""
