#!/usr/bin/env python3
"""The local cluster's entry point: `python3 hack/local_cluster.py --help`. Standard library only, so it runs
before anything is installed; the code is the localcluster package beside it."""

import sys

from localcluster.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
