"""Python at parity with the CLI (issue 36): plan(), list(), systolic(), calibrate() return the CLI's JSON
documents (compared with XPUSIM_BIN's output, numbers included), every public function's
docstring names each of its parameters, a misspelt keyword is a TypeError with a did-you-mean,
and bad values raise xpusim.FieldError naming the keyword. Run by ctest (label python); exits
77 (skipped) when the module was not built."""
import inspect
import os
import pydoc
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from xpusim_cli import cli_json  # noqa: E402

try:
    import xpusim
except ImportError as e:
    print(f"xpusim module not importable ({e}); skipping")
    sys.exit(77)

VOLATILE = ("xpusim_version", "schema_version")


class ParityTest(unittest.TestCase):
    def test_plan_equals_cli_json(self):
        py = xpusim.plan("mpt_125m", "hgx_h100_ib3200", gpus=8, global_batch=64, seq_len=2048, top=3)
        cli = cli_json("plan", "--model", "mpt_125m", "--cluster", "hgx_h100_ib3200", "--gpus", "8",
                       "--global-batch", "64", "--seq-len", "2048", "--top", "3", "--format", "json")
        self.assertEqual(py, cli)
        self.assertEqual(len(py["ranked"]), 3)
        self.assertGreater(py["ranked"][0]["tokens_per_s"], 0)

    def test_plan_fixed_degree_and_offer(self):
        py = xpusim.plan("mpt_125m", "hgx_h100_ib3200", gpus=8, global_batch=64, seq_len=2048, tp=2,
                         sequence_parallel=False, top=2)
        self.assertTrue(all(r["tp"] == 2 and r["sequence_parallel"] is False for r in py["ranked"]))
        cli = cli_json("plan", "--model", "mpt_125m", "--cluster", "hgx_h100_ib3200", "--gpus", "8",
                       "--global-batch", "64", "--seq-len", "2048", "--tp", "2", "--sequence-parallel", "false",
                       "--top", "2", "--format", "json")
        self.assertEqual(py, cli)

    def test_list_equals_cli_json(self):
        for kind in ("devices", "systems", "clusters", "studies", "models", "offers", "frameworks"):
            with self.subTest(kind=kind):
                py = xpusim.list(kind)
                cli = cli_json("list", kind, "--format", "json")
                self.assertEqual({k: v for k, v in py.items() if k not in VOLATILE},
                                 {k: v for k, v in cli.items() if k not in VOLATILE})
                self.assertGreater(len(py[kind]), 0)
        names = [d["name"] for d in xpusim.list("devices")["devices"]]
        self.assertIn("tpu_v2", names)

    def test_systolic_equals_cli_json(self):
        py = xpusim.systolic(model="resnet50", array_rows=32, array_cols=32, dataflow="os")
        cli = cli_json("systolic", "--model", "resnet50", "--array", "32x32", "--dataflow", "os", "--format", "json")
        strip = lambda d: {k: v for k, v in d.items() if k not in VOLATILE}  # noqa: E731
        self.assertEqual(strip(py), strip(cli))
        self.assertEqual(py["total_cycles"], sum(l["cycles"] for l in py["layers"]))


    def test_sweep_summary_equals_cli(self):
        import tempfile
        src = os.environ.get("XPUSIM_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
        small = os.path.join(src, "tests", "sweep", "small.yaml")
        with tempfile.TemporaryDirectory() as d:
            py = xpusim.sweep(small, os.path.join(d, "py.jsonl"))
            cli = cli_json("sweep", small, "-o", os.path.join(d, "cli.jsonl"), "--summary", "json")
            self.assertEqual(py, cli)
            with open(os.path.join(d, "py.jsonl")) as a, open(os.path.join(d, "cli.jsonl")) as b:
                self.assertEqual(a.read(), b.read())
        self.assertEqual(py["points"], 24)
        with self.assertRaises(xpusim.FieldError) as cm:
            xpusim.sweep(small, "rows.txt")
        self.assertEqual(cm.exception.field, "output")


class CalibrateRunTest(unittest.TestCase):
    SRC = os.environ.get("XPUSIM_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
    CSV = os.path.join(SRC, "tests", "python", "small_reference.csv")

    def test_calibrate_equals_cli_json(self):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "v100.yaml")
            py = xpusim.calibrate(reference=self.CSV, device="v100_sxm2_16gb", max_evaluations=30, out=out)
            cli = cli_json("calibrate", "--reference", self.CSV, "--device", "v100_sxm2_16gb",
                           "--max-evaluations", "30", "--format", "json")
            strip = lambda doc: {k: v for k, v in doc.items() if k not in VOLATILE}  # noqa: E731
            self.assertEqual(strip(py), strip(cli))
            self.assertEqual(py["rows_used"], 2)
            self.assertLessEqual(py["rms_log_error_after"], py["rms_log_error_before"])
            self.assertTrue(py["params"])
            with open(out) as f:
                overlay = f.read()
            # The overlay's apply hint is in Python's words, with the fitted values.
            self.assertIn('xpusim.predict(device="v100_sxm2_16gb", overrides=[', overlay)
            for key in py["params"]:
                self.assertIn(key, overlay)

    def test_calibrate_field_errors(self):
        with self.assertRaises(xpusim.FieldError) as cm:
            xpusim.calibrate(reference=self.CSV, device="v100_sxm2_16gb", leave_one_out="everything")
        self.assertEqual(cm.exception.field, "leave_one_out")
        with self.assertRaises(xpusim.FieldError) as cm:
            xpusim.calibrate(reference=self.CSV)
        self.assertEqual(cm.exception.field, "device")
        with self.assertRaises(xpusim.FieldError) as cm:
            xpusim.calibrate(reference=self.CSV, device="tpu_v2")  # no row of it in the CSV
        self.assertEqual(cm.exception.field, "device")
        with self.assertRaises(xpusim.FieldError) as cm:
            xpusim.calibrate(reference=self.CSV, device="v100_sxm2_16gb", max_evaluations=0)
        self.assertEqual(cm.exception.field, "max_evaluations")

    def test_calibrate_systems_scaling_equals_cli_json(self):
        # The CLI's --system and --objective scaling as keywords: one A100 PCIe ResNet-50 group
        # on server_pcie at 1, 2, 4 and 8 GPUs, its fields fitted on the scaling error alone.
        import csv
        import tempfile
        modern = os.path.join(self.SRC, "tests", "data", "reference", "modern_calibration.csv")
        with open(modern, newline="") as f:
            rows = list(csv.reader(f))
        head = rows[0]
        col = {name: i for i, name in enumerate(head)}
        group = [r for r in rows[1:] if r[col["setup"]] == "server_pcie" and r[col["device"]] == "a100_pcie_40gb"
                 and r[col["model"]] == "resnet50" and r[col["precision"]] == "mixed_fp16"]
        self.assertEqual(sorted(int(r[col["num_devices"]]) for r in group), [1, 2, 4, 8])
        with tempfile.TemporaryDirectory() as d:
            ref = os.path.join(d, "pcie.csv")
            with open(ref, "w", newline="") as f:
                csv.writer(f, lineterminator="\n").writerows([head] + group)
            py = xpusim.calibrate(reference=ref, systems=["server_pcie"], objective="scaling", max_evaluations=20)
            cli = cli_json("calibrate", "--reference", ref, "--system", "server_pcie", "--objective", "scaling",
                           "--max-evaluations", "20", "--format", "json")
            strip = lambda doc: {k: v for k, v in doc.items() if k not in VOLATILE}  # noqa: E731
            self.assertEqual(strip(py), strip(cli))
            self.assertIn("intra_host.allreduce_efficiency", py["params"])
            # The default objective fits the same fields to other values than the scaling one.
            plain = xpusim.calibrate(reference=ref, systems=["server_pcie"], max_evaluations=20)
            self.assertEqual(strip(plain), strip(cli_json("calibrate", "--reference", ref, "--system", "server_pcie",
                                                          "--max-evaluations", "20", "--format", "json")))
            self.assertNotEqual(plain["rms_log_error_after"], py["rms_log_error_after"])
            # Bad values: the same rules as the CLI's, the error naming the keyword.
            for kwargs, field in ((dict(systems=["server_pcie"], objective="fast"), "objective"),
                                  (dict(architectures=["ampere_ga100"], objective="scaling"), "objective"),
                                  (dict(systems=["no_such_system"]), "systems"),
                                  (dict(architectures=["no_such_arch"]), "architectures"),
                                  (dict(systems=["server_pcie"], device="a100_pcie_40gb"), "systems"),
                                  (dict(systems=["server_pcie"], out=os.path.join(d, "x.yaml")), "out")):
                with self.subTest(**{k: str(v) for k, v in kwargs.items()}):
                    with self.assertRaises(xpusim.FieldError) as cm:
                        xpusim.calibrate(reference=ref, max_evaluations=5, **kwargs)
                    self.assertEqual(cm.exception.field, field)

    def test_predict_global_batch(self):
        # Gradient accumulation: the same document as the CLI's, and a field error naming the keyword.
        py = xpusim.predict(model="resnet50", device="v100_sxm2_16gb", count=8, system="dgx1v_nvlink", batch=64,
                            precision="mixed_fp16", global_batch=2048)
        cli = cli_json("predict", "--model", "resnet50", "--device", "v100_sxm2_16gb", "--count", "8", "--system",
                       "dgx1v_nvlink", "--batch", "64", "--precision", "mixed_fp16", "--global-batch", "2048",
                       "--format", "json")
        self.assertEqual(py, cli)
        self.assertEqual(py["global_batch"], 2048)
        self.assertEqual(py["micro_batches"], 4)
        with self.assertRaises(xpusim.FieldError) as cm:
            xpusim.predict(model="resnet50", device="v100_sxm2_16gb", count=8, system="dgx1v_nvlink", batch=64,
                           global_batch=1000)
        self.assertEqual(cm.exception.field, "global_batch")

    def test_run_cpu(self):
        # Steps executed for real on the CPU backend: a small model, few steps.
        r = xpusim.run(model="tiny_transformer", backend="cpu", batch=4, steps=3, warmup=1, threads=2)
        self.assertEqual(r["engine"], "cpu")
        self.assertEqual(r["model"], "tiny_transformer")
        self.assertGreater(r["step_time_s"], 0)
        # throughput is the global batch over the measured step time.
        self.assertAlmostEqual(r["throughput_samples_per_s"], r["global_batch"] / r["step_time_s"], delta=1e-6 *
                               r["throughput_samples_per_s"])
        # The CLI's document has the same fields (times are measured, so they differ).
        cli = cli_json("run", "--backend", "cpu", "--model", "tiny_transformer", "--batch", "4", "--steps", "3",
                       "--warmup", "1", "--threads", "2", "--format", "json")
        self.assertEqual(sorted(r), sorted(cli))
        self.assertEqual(r["loss_first"], cli["loss_first"])  # same seed, same first loss

    def test_run_errors(self):
        with self.assertRaises(xpusim.FieldError) as cm:
            xpusim.run(model="tiny_transformer", backend="tpu")
        self.assertEqual(cm.exception.field, "backend")
        with self.assertRaises(xpusim.FieldError) as cm:
            xpusim.run(model="tiny_transformer", backend="cpu", steps=0)
        self.assertEqual(cm.exception.field, "steps")
        with self.assertRaises(xpusim.FieldError) as cm:
            xpusim.run(model="tiny_transformer", backend="cpu", gpus=0)
        self.assertEqual(cm.exception.field, "gpus")
        # cuda: measured where a CUDA build has a GPU; otherwise UnavailableError, nothing else.
        try:
            r = xpusim.run(model="tiny_transformer", backend="cuda", batch=4, steps=2, warmup=1)
        except xpusim.UnavailableError:
            pass
        else:
            self.assertGreater(r["step_time_s"], 0)

    def test_plan_prices_tpu_v5e_offer(self):
        # gcp_2026/tpu-v5litepod-4 spot: 0.9797 $/h for 4 chips = 0.244925 $ per chip-hour; the
        # v5e-256 slice is 256 chips: 62.7008 $/h.
        py = xpusim.plan("llama3_70b", "v5e-256", global_batch=256, seq_len=8192, top=1,
                         offer="gcp_2026/tpu-v5litepod-4", tier="spot")
        self.assertEqual(py["offer"]["tier"], "preemptible")
        self.assertAlmostEqual(py["offer"]["usd_per_gpu_h"], 0.244925, places=12)
        self.assertAlmostEqual(py["ranked"][0]["usd_per_h"], 62.7008, places=9)
        with self.assertRaises(xpusim.Error) as cm:
            xpusim.plan("llama3_70b", "v5e-256", global_batch=256, seq_len=8192, top=1,
                        offer="gcp_2026/tpu-v5litepod-4", tier="committed_1y")
        self.assertIn("has no reserved_1y price", str(cm.exception))

    def test_plan_cheapest_offer_matches_cli(self):
        # offer="cheapest" with the filters: the same document as `xpusim plan --offer cheapest`;
        # 256 v5e chips on spot = 64 x v5litepod-4 (0.9797) = 62.7008 < 256 x v5litepod-1 (0.24493).
        args = dict(global_batch=256, seq_len=8192, top=1, offer="cheapest", tier="spot", offer_provider="gcp",
                    offer_region="us-central1")
        py = xpusim.plan("llama3_70b", "v5e-256", **args)
        self.assertEqual(py["offer"]["id"], "gcp_2026/tpu-v5litepod-4")
        self.assertAlmostEqual(py["ranked"][0]["usd_per_h"], 62.7008, places=9)
        self.assertIn("provider gcp, region us-central1", py["offer"]["choice"])
        cli = cli_json("plan", "--model", "llama3_70b", "--cluster", "v5e-256", "--global-batch", "256", "--seq-len",
                       "8192", "--top", "1", "--offer", "cheapest", "--tier", "spot", "--offer-provider", "gcp",
                       "--offer-region", "us-central1", "--format", "json")
        self.assertEqual(py, cli)
        with self.assertRaises(xpusim.FieldError) as cm:
            xpusim.plan("llama3_70b", "v5e-256", global_batch=256, seq_len=8192, offer="cheapest", offer_provider="aws")
        self.assertEqual(cm.exception.field, "offer")
        self.assertIn("no price offer holds 256 x tpu_v5e", str(cm.exception))


class ConsoleScriptTest(unittest.TestCase):
    """`python -m xpusim` (what pip's `xpusim` console script runs, xpusim/_cli.py) from the
    package as the tests import it (the build tree): it finds BUILD/cli/xpusim with no
    XPUSIM_BIN, forwards the arguments, the output and the exit status."""

    def _run(self, *args):
        import subprocess
        env = {k: v for k, v in os.environ.items() if k != "XPUSIM_BIN"}
        return subprocess.run([sys.executable, "-m", "xpusim", *args], capture_output=True, text=True, env=env,
                              timeout=300)

    def test_forwards_to_the_cli(self):
        import json
        from xpusim import _cli
        saved = os.environ.pop("XPUSIM_BIN", None)
        try:
            exe = _cli.find_binary()
        finally:
            if saved is not None:
                os.environ["XPUSIM_BIN"] = saved
        self.assertIsNotNone(exe, "no xpusim binary found beside the package")
        self.assertTrue(os.access(exe, os.X_OK))
        p = self._run("list", "devices", "--format", "json")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads(p.stdout)["devices"], xpusim.list("devices")["devices"])
        p = self._run("--version")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(xpusim.__version__, p.stdout)
        p = self._run("predict", "--model", "resnet50", "--device", "a100")
        self.assertEqual(p.returncode, 2)
        self.assertIn("xpusim: error:", p.stderr)
        self.assertIn("did you mean", p.stderr)


class ErrorTest(unittest.TestCase):
    def test_misspelt_keyword_did_you_mean(self):
        with self.assertRaises(TypeError) as cm:
            xpusim.predict(model="resnet50", device="tpu_v2", bach=8)
        msg = str(cm.exception)
        self.assertIn("'bach'", msg)
        self.assertIn("did you mean", msg)
        self.assertIn("batch", msg.split("did you mean")[1])

    def test_misspelt_plan_keyword(self):
        with self.assertRaises(TypeError) as cm:
            xpusim.plan("mpt_125m", "hgx_h100_ib3200", gpus=8, global_bach=64)
        self.assertIn("global_batch", str(cm.exception).split("did you mean")[1])

    def test_field_error_names_keyword(self):
        with self.assertRaises(xpusim.FieldError) as cm:
            xpusim.predict(model="resnet50", device="tpu_v2", count=8, batch=0)
        self.assertEqual(cm.exception.field, "batch")
        self.assertIsInstance(cm.exception, xpusim.Error)
        self.assertIsInstance(cm.exception, ValueError)
        self.assertTrue(str(cm.exception).startswith("batch: "))
        with self.assertRaises(xpusim.FieldError) as cm:
            xpusim.plan("mpt_125m", "hgx_h100_ib3200", gpus=8, global_batch=64, seq_len=2048, sharding="zero9")
        self.assertEqual(cm.exception.field, "sharding")
        with self.assertRaises(xpusim.FieldError) as cm:
            xpusim.list("gadgets")
        self.assertEqual(cm.exception.field, "kind")

    def test_error_classes(self):
        self.assertEqual(xpusim.Error.__module__, "xpusim")
        self.assertTrue(issubclass(xpusim.FieldError, xpusim.Error))
        self.assertTrue(issubclass(xpusim.UnavailableError, xpusim.Error))
        self.assertTrue(issubclass(xpusim.UnavailableError, RuntimeError))


class DocsTest(unittest.TestCase):
    PUBLIC = ("predict", "graph", "plan", "list", "sweep", "systolic", "calibrate", "run", "compare", "validate",
              "compare_document", "validate_document")

    def test_help_documents_every_parameter(self):
        for name in self.PUBLIC:
            fn = getattr(xpusim, name)
            doc = inspect.getdoc(fn) or ""
            params = list(inspect.signature(fn).parameters)
            self.assertTrue(params, name)
            for p in params:
                with self.subTest(function=name, parameter=p):
                    # Named at the start of a line of the Parameters block (or in a "tp, pp" group).
                    self.assertRegex(doc, rf"(?m)^\s+([a-z_]+, )*{p}\b", f"{name}: {p} undocumented")

    def test_help_predict(self):
        text = pydoc.render_doc(xpusim.predict, renderer=pydoc.plaintext)
        for p in inspect.signature(xpusim.predict).parameters:
            self.assertIn(p, text.split("Parameters:")[1])
        self.assertIn("samples per device", text)

    def test_stub_matches_signatures(self):
        stub = os.path.join(os.path.dirname(xpusim.__file__), "__init__.pyi")
        self.assertTrue(os.path.isfile(stub))
        text = open(stub).read()
        for name in self.PUBLIC:
            for p in inspect.signature(getattr(xpusim, name)).parameters:
                with self.subTest(function=name, parameter=p):
                    line = [l for l in text.split("\ndef ") if l.startswith(name + "(")]
                    self.assertTrue(line, name)
                    self.assertRegex(line[0], rf"\b{p}:")


if __name__ == "__main__":
    unittest.main()
