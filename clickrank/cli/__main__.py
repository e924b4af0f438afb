"""``python -m clickrank.cli``: the ``clickrank`` command."""

from . import main

if __name__ == "__main__":
    main()
