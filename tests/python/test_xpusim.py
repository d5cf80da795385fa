"""Tests of the xpusim Python package (python/xpusim, python/module.cpp), run by ctest (label
python) with PYTHONPATH at the built package. Exits 77 (ctest: skipped) when the module was not
built, or when XPUSIM_REQUIRE_PANDAS=1 and pandas is missing (the run that tests DataFrames).
XPUSIM_BIN names the CLI binary whose JSON the results must match."""
import io
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from xpusim_cli import cli  # noqa: E402

try:
    import xpusim
except ImportError as e:  # built without pybind11: skipped, not passed
    print(f"xpusim module not importable ({e}); skipping")
    sys.exit(77)

try:
    import pandas as pd
    from pandas.api.types import is_numeric_dtype
except ImportError:
    pd = None
    if os.environ.get("XPUSIM_REQUIRE_PANDAS") == "1":
        print("pandas is not installed (Debian python3-pandas): skipped")
        sys.exit(77)

SMALL_REF = os.path.join(os.environ.get("XPUSIM_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")),
                         "tests", "python", "small_reference.csv")
STUDY = 'riseml_resnet50_published'


def csv_header(text):
    return text.splitlines()[0].split(",")


class PredictTest(unittest.TestCase):
    def test_issue_example_tpu_v2_8(self):
        r = xpusim.predict(model='resnet50', device='tpu_v2', count=8, system='cloud_tpu_v2-8',
                           batch=128, precision='bf16')
        self.assertIsInstance(r, dict)
        self.assertGreater(r['throughput_samples_per_s'], 0)
        self.assertGreater(r['step_time_s'], 0)
        # 8 cores x 128 per core in one step: throughput * step time is the global batch.
        self.assertAlmostEqual(r['throughput_samples_per_s'] * r['step_time_s'], 8 * 128, delta=1e-6 * 1024)

    def test_bad_batch_names_the_keyword(self):
        with self.assertRaises(xpusim.Error) as cm:
            xpusim.predict(model='resnet50', device='tpu_v2', count=8, batch=0)
        self.assertIsInstance(cm.exception, ValueError)
        self.assertTrue(str(cm.exception).startswith('batch: '), str(cm.exception))

    def test_unknown_model_lists_known(self):
        with self.assertRaises(xpusim.Error) as cm:
            xpusim.predict(model='no_such_model', device='v100_sxm2_16gb')
        self.assertIn('model: ', str(cm.exception))
        self.assertIn('resnet50', str(cm.exception))


class SameFieldsAsCliTest(unittest.TestCase):
    """Python results carry the CLI JSON's field names, schema_version and xpusim_version included."""

    def test_predict_keys_equal_cli_json(self):
        for kw, args in [
            (dict(model='resnet50', device='tpu_v2', count=8, system='cloud_tpu_v2-8', batch=128, precision='bf16'),
             ['--device', 'tpu_v2', '--count', '8', '--system', 'cloud_tpu_v2-8', '--model', 'resnet50',
              '--batch', '128', '--precision', 'bf16']),
            (dict(model='resnet50', device='p100_sxm2', count=8, batch=64),
             ['--device', 'p100_sxm2', '--count', '8', '--model', 'resnet50', '--batch', '64']),
        ]:
            with self.subTest(device=kw['device']):
                py = xpusim.predict(**kw)
                doc = json.loads(cli('predict', *args, '--format', 'json'))
                self.assertEqual(sorted(py), sorted(doc))
                self.assertEqual(py['schema_version'], doc['schema_version'])
                self.assertEqual(py['xpusim_version'], doc['xpusim_version'])
                self.assertEqual(py['xpusim_version'], xpusim.__version__)
                # The same prediction, not only the same names.
                self.assertEqual(py['step_time_s'], doc['step_time_s'])

    def test_graph_keys_equal_cli_json(self):
        py = xpusim.graph(model='resnet50', batch=32)
        doc = json.loads(cli('graph', '--model', 'resnet50', '--batch', '32', '--totals', '--format', 'json'))
        self.assertEqual(sorted(py), sorted(doc))
        self.assertEqual(py['ops'], [])
        self.assertEqual(py['flops_train_step'], doc['flops_train_step'])
        py_ops = xpusim.graph(model='resnet50', batch=32, ops=True)
        doc_ops = json.loads(cli('graph', '--model', 'resnet50', '--batch', '32', '--format', 'json'))
        self.assertEqual(len(py_ops['ops']), len(doc_ops['ops']))
        self.assertEqual(py_ops['ops'][0], doc_ops['ops'][0])
        all_ops = xpusim.graph(model='resnet50', batch=32, train=True)
        self.assertGreater(len(all_ops['ops']), len(py_ops['ops']))
        self.assertEqual(len(all_ops['ops']), all_ops['num_ops_train_step'])

    def test_documents_equal_cli_json_keys(self):
        self.assertEqual(sorted(xpusim.compare_document(STUDY)),
                         sorted(json.loads(cli('compare', STUDY, '--format', 'json'))))
        self.assertEqual(sorted(xpusim.validate_document(SMALL_REF)),
                         sorted(json.loads(cli('validate', '--reference', SMALL_REF, '--format', 'json'))))


class TablesTest(unittest.TestCase):
    """compare()/validate(): DataFrames with pandas (the CLI CSV's columns, numeric dtypes),
    lists of the JSON row dicts without it or with as_frame=False."""

    def test_as_frame_false_is_the_json_rows(self):
        rows = xpusim.compare(STUDY, as_frame=False)
        self.assertIsInstance(rows, list)
        self.assertEqual(rows, xpusim.compare_document(STUDY)['rows'])
        vrows = xpusim.validate(SMALL_REF, as_frame=False)
        self.assertEqual(vrows, xpusim.validate_document(SMALL_REF)['rows'])

    @unittest.skipIf(pd is not None, "pandas is importable: the default is a DataFrame")
    def test_default_without_pandas_is_a_list(self):
        self.assertIsInstance(xpusim.compare(STUDY), list)
        with self.assertRaises(ImportError):
            xpusim.compare(STUDY, as_frame=True)

    def check_frame(self, frame, rows, csv_text):
        self.assertIsInstance(frame, pd.DataFrame)
        self.assertEqual(len(frame), len(rows))
        self.assertEqual(sorted(frame.columns), sorted(csv_header(csv_text)))
        from_csv = pd.read_csv(io.StringIO(csv_text), float_precision="round_trip")
        for c in from_csv.columns:
            if is_numeric_dtype(from_csv[c]) and from_csv[c].dtype != bool:
                self.assertTrue(is_numeric_dtype(frame[c]), f"column {c} is {frame[c].dtype}, numeric in the CSV")
                self.assertEqual(frame[c].isna().tolist(), from_csv[c].isna().tolist(), c)
                self.assertEqual(frame[c].dropna().astype(float).tolist(), from_csv[c].dropna().astype(float).tolist(), c)
        self.assertIn('schema_version', frame.attrs)
        self.assertIn('xpusim_version', frame.attrs)

    @unittest.skipIf(pd is None, "pandas not importable")
    def test_compare_frame_matches_cli_csv(self):
        frame = xpusim.compare(STUDY)
        self.check_frame(frame, xpusim.compare_document(STUDY)['rows'], cli('compare', STUDY, '--format', 'csv'))
        self.assertTrue(is_numeric_dtype(frame['throughput_samples_per_s']))
        self.assertEqual(frame.attrs['study'], STUDY)

    @unittest.skipIf(pd is None, "pandas not importable")
    def test_validate_frame_matches_cli_csv(self):
        frame = xpusim.validate(SMALL_REF, as_frame=True)
        self.check_frame(frame, xpusim.validate_document(SMALL_REF)['rows'],
                         cli('validate', '--reference', SMALL_REF, '--format', 'csv'))
        self.assertEqual(frame['predicted'].dtype.kind, 'f')
        self.assertEqual(frame['error_pct'].dtype.kind, 'f')
        self.assertIn('summary', frame.attrs)


class GraphTest(unittest.TestCase):
    def test_totals_scale_with_batch(self):
        a = xpusim.graph(model='resnet50', batch=32)
        b = xpusim.graph(model='resnet50', batch=64)
        self.assertEqual(a['params'], b['params'])
        self.assertGreater(a['params'], 20_000_000)
        # Forward FLOPs are per sample times batch (the update does not scale, so forward only).
        self.assertAlmostEqual(b['flops_forward'] / a['flops_forward'], 2.0, places=6)


class InferenceTest(unittest.TestCase):
    def test_task_inference(self):
        kw = dict(model='resnet50', device='v100_sxm2_16gb', batch=64, precision='mixed_fp16')
        train = xpusim.predict(**kw)
        infer = xpusim.predict(task='inference', **kw)
        self.assertNotIn('task', train)
        self.assertEqual(infer['task'], 'inference')
        self.assertLess(infer['memory_bytes'], train['memory_bytes'])
        self.assertGreater(infer['throughput_samples_per_s'], train['throughput_samples_per_s'])
        g = xpusim.graph(model='resnet50', batch=32, task='inference')
        self.assertEqual(g['task'], 'inference')
        self.assertEqual(g['weight_grad_bytes'], 0)
        self.assertEqual(g['optimizer_state_bytes'], 0)
        with self.assertRaises(xpusim.Error) as cm:
            xpusim.predict(task='eval', **kw)
        self.assertTrue(str(cm.exception).startswith('task: '), str(cm.exception))


class CompareValidateTest(unittest.TestCase):
    def test_compare_published_study_has_rows(self):
        rows = xpusim.compare(STUDY, as_frame=False)
        self.assertGreater(len(rows), 1)
        self.assertTrue(all(r['throughput_samples_per_s'] > 0 for r in rows if r.get('throughput_samples_per_s')))

    def test_validate_reference_csv(self):
        csv = os.path.join(os.environ['XPUSIM_SOURCE_DIR'], 'tests', 'python', 'small_reference.csv')
        doc = xpusim.validate_document(csv)
        # Two RiseML V100 rows (tests/python/small_reference.csv), both predicted.
        self.assertEqual(len(doc['rows']), 2)
        for row in doc['rows']:
            self.assertEqual(row['status'], 'used', row)
            self.assertGreater(row['predicted'], 0)
            self.assertIsInstance(row['error_pct'], float)

    def test_validate_missing_file_is_error(self):
        with self.assertRaises(xpusim.Error):
            xpusim.validate('/nonexistent/reference.csv')


if __name__ == '__main__':
    unittest.main()
