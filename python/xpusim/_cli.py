"""The `xpusim` console script that `pip install` puts on PATH (and `python -m xpusim`): runs the
command-line program with the same arguments, exit status and output. The CLI is the compiled
binary (cli/), not a second implementation in Python, so the two cannot disagree.

Where the binary is looked for, first match wins:
  1. $XPUSIM_BIN (an explicit path);
  2. xpusim/bin/xpusim inside the package (the wheel built by python/setup.py ships it there,
     with the engine plugins beside it);
  3. PREFIX/bin/xpusim above the package (`cmake --install` puts the package under
     PREFIX/lib/pythonX.Y/site-packages and the binary under PREFIX/bin);
  4. BUILD/cli/xpusim for the package assembled in a build tree (BUILD/python/xpusim).
PATH is not searched: the first `xpusim` there is this script itself.
The binary reads the configs the package carries (xpusim/configs) unless XPUSIM_CONFIG_DIR is set.
"""
import os
import sys
from pathlib import Path


def find_binary():
    """The path of the xpusim CLI binary, or None (the search order is the module docstring's)."""
    env = os.environ.get("XPUSIM_BIN")
    if env:
        return env
    here = Path(__file__).resolve().parent
    candidates = [here / "bin" / "xpusim"]
    candidates += [parent.parent / "bin" / "xpusim" for parent in here.parents if parent.name == "lib"]
    candidates.append(here.parent.parent / "cli" / "xpusim")
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    return None


def main(argv=None):
    """Replaces this process with the CLI binary (argv: the arguments, default sys.argv[1:]).
    Returns 2 with an `xpusim: error:` line when no binary is found."""
    args = sys.argv[1:] if argv is None else list(argv)
    exe = find_binary()
    if exe is None:
        sys.stderr.write("xpusim: error: the xpusim program was not found next to the Python package "
                         "(set XPUSIM_BIN to its path, or install the package built by python/setup.py)\n")
        return 2
    env = dict(os.environ)
    configs = Path(__file__).resolve().parent / "configs"
    if not env.get("XPUSIM_CONFIG_DIR") and configs.is_dir():
        env["XPUSIM_CONFIG_DIR"] = str(configs)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(exe, [exe] + args, env)
    return 0  # not reached: execve replaces the process or raises OSError


if __name__ == "__main__":
    sys.exit(main())
