"""Tests of the xpusim Python module (python/module.cpp), run by ctest (label python) with
PYTHONPATH at the built module. Exits 77 (ctest: skipped) when the module was not built."""
import os
import sys
import unittest

try:
    import xpusim
except ImportError as e:  # built without pybind11: skipped, not passed
    print(f"xpusim module not importable ({e}); skipping")
    sys.exit(77)


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
        doc = xpusim.compare('riseml_resnet50_published')
        self.assertIsInstance(doc, dict)
        lists = [v for v in doc.values() if isinstance(v, list) and v and isinstance(v[0], dict)]
        self.assertTrue(lists, f"no list of rows in {sorted(doc)}")

    def test_validate_reference_csv(self):
        csv = os.path.join(os.environ['XPUSIM_SOURCE_DIR'], 'tests', 'python', 'small_reference.csv')
        doc = xpusim.validate(csv)
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
