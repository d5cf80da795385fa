"""xpusim: accelerator simulator and cost model for ML training (Python front end).

The compiled module (xpusim._core, pybind11, python/module.cpp) makes the same library calls as
the CLI; this file adds what is easier in Python: finding the installed configs, keyword
checks with a did-you-mean, docstrings with units, and the tables of compare()/validate() as
pandas DataFrames.

Results carry the field names of the CLI's `--format json` documents (docs/outputs.md),
schema_version and xpusim_version included (plan() prints as the CLI's plan, without them):
  predict(...)            dict, the document of `xpusim predict --format json`
  graph(..., ops=False)   dict, the document of `xpusim graph --totals --format json`
                          (ops=True: `xpusim graph --format json`, the forward ops; train=True: every op)
  plan(...)               dict, the document of `xpusim plan --format json`
  list(kind)              dict, the document of `xpusim list KIND --format json`
  sweep(sweep, output)    dict, the summary of `xpusim sweep SWEEP -o OUTPUT --summary json`
  systolic(...)           dict, the document of `xpusim systolic --format json`
  calibrate(reference=...) dict, the document of `xpusim calibrate --format json`
  run(model=..., backend=...) dict, the document of `xpusim run --format json` (steps run for real)
  compare(study)          the rows of `xpusim compare STUDY --format csv`
  validate(csv_path)      the rows of `xpusim validate --reference CSV --format csv`
compare()/validate() return a pandas DataFrame when pandas is importable (as_frame=None), with
the CSV's columns (nested fields as dotted names, e.g. utilization.mxu) and numeric dtypes for
numeric fields, the rest of the document in DataFrame.attrs; a list of the JSON row dicts
otherwise or with as_frame=False. compare_document()/validate_document() return the whole
JSON document as a dict.

Errors: xpusim.Error (a ValueError) for bad input, with subclasses xpusim.FieldError (one
keyword's value is bad; .field names the keyword) and xpusim.UnavailableError (also a
RuntimeError: an engine or device this build lacks). A misspelt keyword raises TypeError
naming it, with the closest keywords ("did you mean batch?").
"""
import builtins as _builtins
import functools as _functools
import inspect as _inspect
import os as _os
import warnings as _warnings
from pathlib import Path as _Path

from . import _core
from ._core import (Error, FieldError, UnavailableError, __version__, config_dir, set_config_dir)  # noqa: F401

__all__ = ["Error", "FieldError", "UnavailableError", "__version__", "config_dir", "set_config_dir", "predict",
           "graph", "plan", "list", "sweep", "systolic", "calibrate", "run", "compare", "validate", "compare_document",
           "validate_document"]


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


def _keywords(fn):
    """Checks the keywords of a call against fn's own parameters before calling it: a misspelt
    one raises TypeError naming it with the closest names (common/suggest.hpp's did_you_mean),
    not Python's or pybind11's generic message. help() still shows fn's signature (__wrapped__)."""
    sig = _inspect.signature(fn)
    known = [p.name for p in sig.parameters.values()
             if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]

    @_functools.wraps(fn)
    def checked(*args, **kwargs):
        for k in kwargs:
            if k not in known:
                hint = _core._did_you_mean(k, known)
                raise TypeError(f"{fn.__name__}() got an unexpected keyword argument '{k}'"
                                + (f"; {hint}" if hint else "")
                                + f" (keywords: {', '.join(known)})")
        return fn(*args, **kwargs)
    return checked


@_keywords
def predict(*, model, device, count=1, system="", batch=32, precision="fp32", framework=None,
            data="synthetic", engine="", task="train", overrides=(), global_batch=0):
    """Predicts one training (or inference) step, as `xpusim predict --format json`.

    Parameters:
      model      zoo name (configs/models/), model YAML or .onnx path
      device     device name (configs/devices/) or YAML path
      count      devices (count, >= 1); data parallel across them
      system     system name (configs/systems/); "" = the device's default host
      batch      samples per device per step (samples, >= 1)
      precision  fp32 | mixed_fp16 | mixed_bf16 | bf16 | fp16 | fp8 (fp16 is mixed_fp16)
      framework  framework profile (configs/frameworks/); None = the device's default
      data       synthetic | real (real: the host's input pipeline is priced)
      engine     engine name (analytical, tpu_systemc, cpu, cuda); "" = the device's engine
      task       train | infer
      overrides  KEY=VALUE strings on the device YAML (the CLI's --set), framework.KEY=VALUE
      global_batch  samples per optimizer step over all devices (samples); a multiple of
                 batch x devices, the rest gradient accumulation; 0 = one micro-batch per step
    Returns: dict, the StepReport document (times in s, bytes in bytes, rates per s, power in W).
    Raises: FieldError naming the keyword; Error for other bad input; UnavailableError.
    """
    return _core.predict(model=model, device=device, count=count, system=system, batch=batch,
                         precision=precision, framework=framework, data=data, engine=engine, task=task,
                         overrides=_builtins.list(overrides), global_batch=global_batch)


@_keywords
def graph(*, model, batch=32, precision="fp32", optimizer="", task="train", ops=False, train=False):
    """The op graph of one step, as `xpusim graph [--totals] --format json`.

    Parameters:
      model      zoo name, model YAML or .onnx path
      batch      samples per step (samples, >= 1)
      precision  fp32 | mixed_fp16 | mixed_bf16 | bf16 | fp16 | fp8
      optimizer  sgd_momentum | adam; "" = the model's
      task       train | infer
      ops        True: list the forward ops (each with its FLOPs and bytes); False: totals only
      train      True (with ops): every op of the training step, backward and optimizer included
    Returns: dict with totals (FLOPs in flop, bytes in bytes, parameters as a count) and ops.
    """
    return _core.graph(model=model, batch=batch, precision=precision, optimizer=optimizer, task=task, ops=ops,
                       train=train)


@_keywords
def plan(model, cluster, *, gpus=0, global_batch, seq_len=0, device="", precision="mixed_bf16", framework="",
         overrides=(), top=10, offer="", tier="", tokens=0.0, goodput=1.0, tp=0, pp=0, virtual_stages=0, cp=0,
         ep=0, micro_batch=0, sharding="", recompute="", sequence_parallel=None, tp_across_nodes=False,
         offer_provider="", offer_region=""):
    """Ranks the parallel configurations of a decoder on a cluster, as `xpusim plan --format json`.

    Parameters:
      model              decoder: zoo name or YAML with an llm shape
      cluster            cluster (configs/clusters/), YAML path, or TPU slice (v5e-256, ...)
      gpus               GPUs of the job (count); 0 = a TPU slice's chips (required on GPU clusters)
      global_batch       sequences per optimizer step (sequences, >= 1)
      seq_len            tokens per sequence (tokens); 0 = the model's learned positions
      device             device of the cluster's nodes; "" = the cluster's
      precision          mixed_bf16 | mixed_fp16 | bf16 | fp8
      framework          framework profile (llm_foundry, megatron_lm, ...); "" = neutral
      overrides          KEY=VALUE strings on the device YAML, framework.KEY=VALUE, cluster.KEY=VALUE
      top                configurations returned in "ranked" (count, >= 1)
      offer              price offer (configs/pricing/, e.g. aws_2025/p5.48xlarge): adds USD/h, USD/Mtoken;
                         "cheapest" = the lowest USD/h of the offers that hold the job in whole nodes
      tier               pricing tier of the offer; "" = its first (on_demand for cheapest)
      offer_provider     offer="cheapest" only: only this provider's offers (aws, gcp, ...); "" = any
      offer_region       offer="cheapest" only: only offers in this region; "" = any
      tokens             tokens to train (tokens); 0 = 20 per parameter
      goodput            share of wall time that trains (fraction, 0.01 to 1)
      tp, pp, cp, ep     fix the tensor / pipeline / context / expert-parallel degree (count); 0 = searched
      virtual_stages     fix the interleaved chunks per pipeline stage (count); 0 = searched
      micro_batch        fix the micro-batch (sequences); 0 = searched
      sharding           fix ZeRO / FSDP: none | zero1 | zero2 | zero3; "" = searched
      recompute          fix recomputation: none | selective | full | selective_offloaded; "" = searched
      sequence_parallel  fix sequence parallelism (bool); None = searched
      tp_across_nodes    allow tensor parallelism beyond one node (bool)
    Returns: dict (memory in bytes, times in s, throughput in tokens/s, prices in USD, train.days in days).
    """
    return _core.plan(model=model, cluster=cluster, gpus=gpus, global_batch=global_batch, seq_len=seq_len,
                      device=device, precision=precision, framework=framework,
                      overrides=_builtins.list(overrides), top=top, offer=offer, tier=tier, tokens=float(tokens),
                      goodput=float(goodput), tp=tp, pp=pp, virtual_stages=virtual_stages, cp=cp, ep=ep,
                      micro_batch=micro_batch, sharding=sharding, recompute=recompute,
                      sequence_parallel=sequence_parallel, tp_across_nodes=tp_across_nodes,
                      offer_provider=offer_provider, offer_region=offer_region)


@_keywords
def list(kind, *, catalog="", region=""):  # noqa: A001 (xpusim.list mirrors `xpusim list`)
    """What can be named, as `xpusim list KIND --format json`.

    Parameters:
      kind     devices | systems | clusters | offers | studies | models
      catalog  offers only: a SkyPilot vms.csv path instead of configs/pricing/
      region   offers only: only this region ("" = all; with a catalog, each instance's cheapest)
    Returns: dict {kind: [rows], schema_version, xpusim_version}; offers' prices in USD per hour,
    age_days in days. Prices older than a year also raise a UserWarning per catalog and date.
    """
    doc, warnings = _core.list(kind, catalog=catalog, region=region)
    for w in warnings:
        _warnings.warn(w, UserWarning, stacklevel=2)
    return doc


@_keywords
def sweep(sweep, output, *, jobs=1, resume=False):
    """Runs a design-space sweep, as `xpusim sweep SWEEP -o OUTPUT --summary json`.

    Parameters:
      sweep   sweep YAML path, or a name under configs/sweeps/
      output  row file, one row per point: a path ending in .csv or .jsonl (written)
      jobs    worker processes on this machine (count, >= 1; forked)
      resume  keep the rows already in output and run only the others (bool)
    Returns: dict, the summary (points, Pareto front, best point per objective); the rows are in output.
    """
    return _core.sweep(str(sweep), str(output), jobs=jobs, resume=resume)


@_keywords
def systolic(*, topology="", model="", array_rows=128, array_cols=128, dataflow="ws"):
    """SCALE-Sim-compatible cycles per layer on one systolic array, as `xpusim systolic --format json`.

    Parameters:
      topology    SCALE-Sim topology CSV path (give this or model)
      model       zoo model: its forward convolutions and dense layers at batch 1 (give this or topology)
      array_rows  rows of the array (processing elements, 1 to 65536)
      array_cols  columns of the array (processing elements, 1 to 65536)
      dataflow    ws | os | is (weight, output or input stationary)
    Returns: dict with layers (cycles in cycles, utilization as a fraction, macs as a count) and totals.
    """
    return _core.systolic(topology=str(topology), model=model, array_rows=array_rows, array_cols=array_cols,
                          dataflow=dataflow)


@_keywords
def calibrate(*, reference, device="", framework="", architectures=(), systems=(), objective="", leave_one_out="",
              out="", overrides=(), max_evaluations=300, progress=False):
    """Fits efficiency constants to reference rows, as `xpusim calibrate --format json`.

    Give one of device, framework, architectures or systems (or none of them with leave_one_out="study").
    Parameters:
      reference        reference CSV path (columns: /work/shared/reference/README.md)
      device           fit this device's `calibrate:` constants (configs/devices/) on its rows
      framework        instead: fit this framework profile's `calibrate:` constants on its rows
      architectures    instead: GPU architectures (configs/architectures/) fitted as one shared set
      systems          instead: systems (configs/systems/) whose `calibrate:` fields (dotted, e.g.
                       intra_host.allreduce_efficiency) are fitted as one shared set on every row
                       that runs on them (the CLI's --system)
      objective        "" or "log_error": ln(predicted/reference) per row; "scaling": each
                       multi-device row's log error less its 1-device row's (device, framework
                       or systems fits; for constants that act only between devices)
      leave_one_out    "" | model | study | architecture: refit without each model (study: each
                       source of the CSV; architecture: each generation) and report its error
      out              write the fitted values as a YAML overlay to this path ("" = none)
      overrides        KEY=VALUE strings on the device YAML before fitting (the CLI's --set)
      max_evaluations  objective evaluations per fit (count, >= 1)
      progress         progress lines on stderr (bool)
    Returns: dict: params {KEY: {initial, fitted}} (in the YAML key's units), rms_log_error_before/
    _after (natural log, dimensionless), mape_pct_before/_after (percent), rows_used (count), rows
    (each row's prediction) and, with leave_one_out, the held-out errors (percent).
    Raises: FieldError naming the keyword (device, framework, systems, objective, leave_one_out, out, ...); Error.
    """
    return _core.calibrate(reference=str(reference), device=device, framework=framework,
                           architectures=_builtins.list(architectures), systems=_builtins.list(systems),
                           objective=objective, leave_one_out=leave_one_out, out=str(out),
                           overrides=_builtins.list(overrides), max_evaluations=max_evaluations, progress=progress)


@_keywords
def run(*, model, backend, batch=32, steps=10, warmup=2, precision="fp32", gpus=1, threads=0, seed=1,
        optimizer="", task="train", input_shapes=(), progress=False):
    """Runs training steps (or inference passes) for real and times them, as `xpusim run --format json`.

    Parameters:
      model         zoo name, model YAML or .onnx path
      backend       cpu | cuda (cuda raises UnavailableError without a CUDA build and GPU)
      batch         samples per device per step (samples, >= 1)
      steps         timed steps (count, >= 1)
      warmup        untimed warm-up steps before them (count, >= 0)
      precision     fp32 | mixed_fp16 | mixed_bf16 | bf16 | fp16 | fp8
      gpus          cuda: GPUs in data parallel (count, >= 1)
      threads       cpu: threads (count; 0 = all cores)
      seed          random seed for weights and data (integer)
      optimizer     sgd_momentum | adam; "" = the model's recipe
      task          train (one training step) | inference (one forward pass)
      input_shapes  ONNX models: NAME=DIMxDIM... shapes of dynamic inputs
      progress      progress lines on stderr (bool)
    Returns: dict, the StepReport document with predict()'s fields, measured: step_time_s (s, mean
    of the timed steps), throughput_samples_per_s (samples/s).
    Raises: FieldError naming the keyword; UnavailableError when the backend is absent.
    """
    return _core.run(model=model, backend=backend, batch=batch, steps=steps, warmup=warmup, precision=precision,
                     gpus=gpus, threads=threads, seed=seed, optimizer=optimizer, task=task,
                     input_shapes=_builtins.list(input_shapes), progress=progress)


@_keywords
def compare_document(study):
    """The JSON document of `xpusim compare STUDY --format json` as a dict.

    Parameters:
      study  study name (configs/studies/) or YAML path
    """
    return _core._compare_document(study)


@_keywords
def validate_document(csv_path, *, framework=""):
    """The JSON document of `xpusim validate --reference CSV --format json` as a dict.

    Parameters:
      csv_path   reference CSV path (columns: /work/shared/reference/README.md)
      framework  framework profile for every row; "" = each row's own
    """
    return _core._validate_document(csv_path, framework=framework)


@_keywords
def compare(study, *, as_frame=None):
    """Runs a comparison study: one row per option and target (times in s, prices in USD).

    Parameters:
      study     study name (configs/studies/) or YAML path
      as_frame  True: a pandas DataFrame; False: a list of row dicts; None: a DataFrame when pandas imports
    """
    return _table(compare_document(study), as_frame)


@_keywords
def validate(csv_path, *, framework="", as_frame=None):
    """Validates predictions against a reference CSV: one row per reference row.

    Parameters:
      csv_path   reference CSV path
      framework  framework profile for every row; "" = each row's own
      as_frame   True: a pandas DataFrame; False: a list of row dicts; None: a DataFrame when pandas imports
    """
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
    return isinstance(v, _builtins.list) and all(isinstance(e, dict) for e in v)


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
