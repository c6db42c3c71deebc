"""``python -m specformer``: the ``specformer`` command (:mod:`specformer.runner.cli`)."""

import sys

from specformer.runner.cli import main

if __name__ == "__main__":
    sys.exit(main())
