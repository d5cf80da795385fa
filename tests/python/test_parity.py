"""Python at parity with the CLI (issue 36): plan(), list(), systolic() return the CLI's JSON
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
        for kind in ("devices", "systems", "clusters", "studies", "models", "offers"):
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
    PUBLIC = ("predict", "graph", "plan", "list", "sweep", "systolic", "compare", "validate", "compare_document",
              "validate_document")

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
