"""xpusim: accelerator simulator and cost model for ML training (Python front end).

The compiled module (xpusim._core, pybind11, python/module.cpp) makes the same library calls as
the CLI; this file adds what is easier in Python: finding the installed configs, and the tables
of compare()/validate() as pandas DataFrames.

Results carry the field names of the CLI's `--format json` documents (docs/outputs.md),
schema_version and xpusim_version included:
  predict(...)            dict, the document of `xpusim predict --format json`
  graph(..., ops=False)   dict, the document of `xpusim graph --totals --format json`
                          (ops=True: `xpusim graph --format json`, the forward ops; train=True: every op)
  compare(study)          the rows of `xpusim compare STUDY --format csv`
  validate(csv_path)      the rows of `xpusim validate --reference CSV --format csv`
compare()/validate() return a pandas DataFrame when pandas is importable (as_frame=None), with
the CSV's columns (nested fields as dotted names, e.g. utilization.mxu) and numeric dtypes for
numeric fields, the rest of the document in DataFrame.attrs; a list of the JSON row dicts
otherwise or with as_frame=False. compare_document()/validate_document() return the whole
JSON document as a dict.
"""
import os as _os
from pathlib import Path as _Path

from ._core import (Error, UnavailableError, __version__, config_dir, set_config_dir,  # noqa: F401
                    predict, graph, _compare_document, _validate_document)


def _find_installed_configs():
    """The configs of an installed package: xpusim/configs inside the package (pip install),
    else PREFIX/share/xpusim/configs above it (cmake --install puts the package under
    PREFIX/lib/pythonX.Y/site-packages). None in the build tree: the library then falls back to
    the source tree's configs/ it was compiled with."""
    here = _Path(__file__).resolve().parent
    if (here / "configs").is_dir():
        return here / "configs"
    for parent in here.parents:
        candidate = parent / "share" / "xpusim" / "configs"
        if candidate.is_dir():
            return candidate
    return None


if not _os.environ.get("XPUSIM_CONFIG_DIR"):
    _configs = _find_installed_configs()
    if _configs is not None:
        set_config_dir(str(_configs))


def compare_document(study):
    """The JSON document of `xpusim compare STUDY --format json` as a dict."""
    return _compare_document(study)


def validate_document(csv_path, *, framework=""):
    """The JSON document of `xpusim validate --reference CSV --format json` as a dict."""
    return _validate_document(csv_path, framework=framework)


def compare(study, *, as_frame=None):
    """Runs a comparison study (a name under configs/studies/ or a YAML path): one row per option
    and target. See the module doc for as_frame."""
    return _table(compare_document(study), as_frame)


def validate(csv_path, *, framework="", as_frame=None):
    """Validates predictions against a reference CSV: one row per reference row. See the module
    doc for as_frame."""
    return _table(validate_document(csv_path, framework=framework), as_frame)


def _pandas(as_frame):
    if as_frame is False:
        return None
    try:
        import pandas
    except ImportError:
        if as_frame:
            raise
        return None
    return pandas


def _is_table(v):
    """An array of objects (or an empty array): rows of another table (common/records.hpp)."""
    return isinstance(v, list) and all(isinstance(e, dict) for e in v)


def _flatten(record, prefix="", out=None):
    """A record's columns as the CLI's CSV names them (common/records.hpp): nested objects as
    dotted names, arrays of objects left out (other tables), arrays of scalars kept as lists."""
    out = {} if out is None else out
    for key, value in record.items():
        if isinstance(value, dict):
            _flatten(value, prefix + key + ".", out)
        elif not _is_table(value):
            out[prefix + key] = value
    return out


def _table(doc, as_frame):
    rows = doc["rows"]
    pandas = _pandas(as_frame)
    if pandas is None:
        return rows
    flat = [_flatten(r) for r in rows]
    columns = []
    for r in flat:
        columns.extend(c for c in r if c not in columns)
    frame = pandas.DataFrame.from_records(flat, columns=columns)
    for c in frame.columns:
        values = frame[c].dropna()
        # All missing: no type to infer; read as pandas reads the CSV's empty column (float NaN).
        if values.empty:
            frame[c] = frame[c].astype("float64")
        # Numbers (ints mixed with floats or missing values): one numeric dtype, NaN for missing.
        elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            frame[c] = pandas.to_numeric(frame[c])
    frame.attrs = {k: v for k, v in doc.items() if k != "rows"}
    return frame
