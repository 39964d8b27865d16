"""The `glossator` subcommands that compose packages (the composition root's own)."""
