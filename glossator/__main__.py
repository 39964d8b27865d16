"""`python -m glossator`: the same as the `glossator` command."""

from glossator.cli import main

main()
