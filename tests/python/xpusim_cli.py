"""The CLI binary the Python tests compare the module with (XPUSIM_BIN); a test that needs it
is skipped when it is not set."""
import json
import os
import subprocess
import unittest

BIN = os.environ.get("XPUSIM_BIN")


def cli(*args):
    """stdout of `xpusim ARGS...`; an AssertionError with stderr when it exits non-zero."""
    if not BIN:
        raise unittest.SkipTest("XPUSIM_BIN not set")
    p = subprocess.run([BIN, *args], capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise AssertionError(f"xpusim {' '.join(args)}: exit {p.returncode}\n{p.stderr}")
    return p.stdout


def cli_json(*args):
    """The JSON document `xpusim ARGS...` prints."""
    return json.loads(cli(*args))
