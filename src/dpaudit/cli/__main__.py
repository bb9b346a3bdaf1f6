"""``python -m dpaudit.cli``: the same as the ``dpaudit`` command."""

from dpaudit.cli import main

main()
