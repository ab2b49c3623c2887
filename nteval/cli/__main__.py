"""``python -m nteval.cli``: the ``nteval`` command."""
from . import main

main(prog_name="nteval")
