"""``python -m nteval``: the same command line as ``nteval``."""
from .cli import main

if __name__ == "__main__":
    main(prog_name="nteval")
