"""bench/kernel_trace.py: the account of a search step's phases and parts from a haloex-kernel-trace CSV of known
timestamps (run by ctest: python3 -m unittest)."""
import csv
import os
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "bench"))
import kernel_trace  # noqa: E402


def search_step(t0, correlation):
    """One search step at t0 (ns): migrate (a kernel, then a 90 µs synchronisation, then a buffer grown: a free and
    an allocation, 12 µs) and pair search (a kernel and a
    copy, a 540 µs synchronisation) with its part "grid and counts"; the kernels and copy carry the correlation of
    the launch calls inside their phase."""
    c = correlation
    return [
        ("range", "search step", t0, t0 + 1_000_000, 0, c),
        ("range", "migrate", t0, t0 + 300_000, 0, c + 1),
        ("range", "pair search", t0 + 300_000, t0 + 1_000_000, 0, c + 2),
        ("range", "grid and counts", t0 + 300_000, t0 + 900_000, 0, c + 3),
        ("runtime", "cudaLaunchKernel_v7000", t0 + 10_000, t0 + 15_000, 1, c + 10),
        ("kernel", "wrapAndClassifyKernel", t0 + 50_000, t0 + 150_000, 7, c + 10),
        ("runtime", "cudaStreamSynchronize_v3020", t0 + 160_000, t0 + 250_000, 1, c + 11),
        ("runtime", "cudaFree_v3020", t0 + 251_000, t0 + 259_000, 1, c + 15),
        ("runtime", "cudaMalloc_v3020", t0 + 260_000, t0 + 264_000, 1, c + 16),
        ("runtime", "cudaGraphLaunch_v10000", t0 + 310_000, t0 + 320_000, 1, c + 12),
        ("kernel", "searchKernel<2>", t0 + 320_000, t0 + 520_000, 7, c + 12),
        ("runtime", "cudaMemcpyAsync_v3020", t0 + 330_000, t0 + 331_000, 1, c + 13),
        ("memcpy", "copy kind 2 16 B", t0 + 530_000, t0 + 540_000, 7, c + 13),
        ("runtime", "cudaStreamSynchronize_v3020", t0 + 340_000, t0 + 880_000, 1, c + 14),
    ]


def write(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["kind", "name", "start_ns", "end_ns", "stream", "correlation"])
        w.writerows(rows)


class AccountTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.tmp.name, "trace.rank0.csv")
        # The first search step (left out) has a longer kernel: a mean over both would show it.
        first = search_step(0, 100)
        first[5] = ("kernel", "wrapAndClassifyKernel", 50_000, 290_000, 7, 110)
        write(self.path, first + search_step(5_000_000, 200))

    def tearDown(self):
        self.tmp.cleanup()

    def test_phases_and_parts_of_the_search_steps_after_the_first(self):
        s = kernel_trace.summarize(kernel_trace.read_trace(self.path))
        self.assertEqual(s["search_steps"], 1)
        total = s["total"]
        self.assertAlmostEqual(total["wall_us"], 1000.0)
        self.assertAlmostEqual(total["gpu_busy_us"], 100.0 + 200.0 + 10.0)
        self.assertAlmostEqual(total["blocking_us"], 90.0 + 540.0)
        self.assertEqual((total["kernels"], total["copies_and_memsets"]), (2, 1))
        self.assertEqual(list(s["phases"]), ["migrate", "pair search"])
        migrate = s["phases"]["migrate"]["account"]
        self.assertAlmostEqual(migrate["gpu_busy_us"], 100.0)
        self.assertAlmostEqual(migrate["blocking_us"], 90.0)
        self.assertEqual(migrate["kernels"], 1)
        self.assertEqual((migrate["allocations"], migrate["allocation_us"]), (2, 12.0))
        # Host time in CUDA calls: launch 5, synchronisation 90, free 8, allocation 4 µs; the rest is host work.
        self.assertAlmostEqual(migrate["runtime_us"], 5.0 + 90.0 + 8.0 + 4.0)
        self.assertEqual(s["phases"]["migrate"]["calls"],
                         {"cudaStreamSynchronize": [1.0, 90.0], "cudaFree": [1.0, 8.0], "cudaLaunchKernel": [1.0, 5.0],
                          "cudaMalloc": [1.0, 4.0]})
        pair = s["phases"]["pair search"]
        self.assertAlmostEqual(pair["account"]["wall_us"], 700.0)
        self.assertEqual((pair["account"]["kernels"], pair["account"]["copies_and_memsets"]), (1, 1))
        self.assertEqual(pair["account"]["allocations"], 0)
        part = pair["parts"]["grid and counts"]
        self.assertAlmostEqual(part["wall_us"], 600.0)
        self.assertAlmostEqual(part["gpu_busy_us"], 210.0)
        self.assertAlmostEqual(part["blocking_us"], 540.0)
        self.assertEqual(s["kernel_us_per_search_step"], {"searchKernel<2>": 200.0, "wrapAndClassifyKernel": 100.0})
        text = kernel_trace.report(self.path, s)
        self.assertIn("calls: cudaStreamSynchronize 1.0x 90.0", text)
        self.assertIn("200.0  searchKernel<2>", text)

    def test_normal_steps_by_kind_after_the_first_ten(self):
        # Twelve graph steps 100 µs apart (the first ten left out): a graph launch whose two kernels run 3-8 and
        # 10-14 µs after the step's start, and one step without a graph whose kernel its launch call started.
        rows = []
        for k in range(12):
            t0, c = 1_000_000 + 100_000 * k, 1000 + k
            first = 5_000 if k < 11 else 7_000  # the last step's first kernel is longer
            rows += [("range", "MD step (CUDA graph)", t0, t0 + 2_000, 0, c),
                     ("runtime", "cudaGraphLaunch_v10000", t0 + 500, t0 + 1_500, 1, c),
                     ("kernel", "forceKernel", t0 + 3_000, t0 + 3_000 + first, 7, c),
                     ("kernel", "updateKernel", t0 + 10_000, t0 + 14_000, 7, c)]
        rows += [("range", "MD step", 5_000_000 + 100_000 * k, 5_000_000 + 100_000 * k + 9_000, 0, 3000 + k)
                 for k in range(11)]
        rows += [("runtime", "cudaLaunchKernel_v7000", 5_000_000 + 100_000 * k + 100, 5_000_000 + 100_000 * k + 900,
                  1, 3000 + k) for k in range(11)]
        rows += [("kernel", "leapfrogKernel", 5_000_000 + 100_000 * k + 2_000, 5_000_000 + 100_000 * k + 4_000, 7,
                  3000 + k) for k in range(11)]
        path = os.path.join(self.tmp.name, "steps.csv")
        write(path, rows)
        steps = kernel_trace.normal_steps(kernel_trace.read_trace(path))
        graph = steps["MD step (CUDA graph)"]
        self.assertEqual((graph["steps"], graph["kernels"], graph["copies_and_memsets"]), (2, 2, 0))
        self.assertAlmostEqual(graph["span_us"], 11.0)
        self.assertAlmostEqual(graph["busy_us"], (5.0 + 7.0) / 2 + 4.0)
        self.assertAlmostEqual(graph["idle_us"], 11.0 - ((5.0 + 7.0) / 2 + 4.0))
        self.assertEqual(graph["kernel_us"], {"forceKernel": 6.0, "updateKernel": 4.0})
        # Steps 10 and 11 are sampled and follow each other: step 10's update ends 14 µs after its start, step
        # 11's first kernel starts 103 µs after it.
        self.assertEqual(graph["gap_to_next"]["pairs"], 1)
        self.assertAlmostEqual(graph["gap_to_next"]["median_us"], 89.0)
        self.assertIn("gap to the next step of this kind", kernel_trace.steps_report(steps))
        plain = steps["MD step"]
        self.assertNotIn("gap_to_next", plain)  # one sampled step: no pair
        self.assertEqual((plain["steps"], plain["kernels"]), (1, 1))
        self.assertAlmostEqual(plain["span_us"], 2.0)
        self.assertAlmostEqual(plain["idle_us"], 0.0)
        self.assertIn("MD step (CUDA graph)", kernel_trace.steps_report(steps))

    def test_no_gap_across_a_search_step(self):
        # Twelve graph steps as above, with a search step between the two sampled ones: no pair to measure.
        rows = [("range", "search step", 2_050_000, 2_090_000, 0, 99)]
        for k in range(12):
            t0, c = 1_000_000 + 100_000 * k, 1000 + k
            rows += [("range", "MD step (CUDA graph)", t0, t0 + 2_000, 0, c),
                     ("runtime", "cudaGraphLaunch_v10000", t0 + 500, t0 + 1_500, 1, c),
                     ("kernel", "forceKernel", t0 + 3_000, t0 + 8_000, 7, c)]
        path = os.path.join(self.tmp.name, "steps-search.csv")
        write(path, rows)
        graph = kernel_trace.normal_steps(kernel_trace.read_trace(path))["MD step (CUDA graph)"]
        self.assertEqual(graph["steps"], 2)
        self.assertNotIn("gap_to_next", graph)

    def test_a_kernel_launched_twice_in_a_step_counts_twice_and_the_timeline_keeps_both(self):
        # Eleven two-rank-like graph steps: the same force kernel on two streams (4 µs on stream 9 from the
        # step's first work, 10 µs on stream 7), then an update; the last step runs the update first (another order).
        rows = []
        for k in range(12):
            t0, c = 1_000_000 + 100_000 * k, 1000 + k
            rows += [("range", "MD step (CUDA graph)", t0, t0 + 2_000, 0, c),
                     ("runtime", "cudaGraphLaunch_v10000", t0 + 500, t0 + 1_500, 1, c),
                     ("kernel", "forceKernel", t0 + 3_000, t0 + 13_000, 7, c),
                     ("kernel", "forceKernel", t0 + 4_000, t0 + 8_000, 9, c),
                     ("kernel", "updateKernel", t0 + (14_000 if k < 11 else 2_000), t0 + (16_000 if k < 11 else 2_500),
                      7, c)]
        path = os.path.join(self.tmp.name, "twice.csv")
        write(path, rows)
        graph = kernel_trace.normal_steps(kernel_trace.read_trace(path))["MD step (CUDA graph)"]
        self.assertEqual(graph["kernels"], 3)
        self.assertAlmostEqual(graph["kernel_us"]["forceKernel"], 14.0)
        timeline = graph["timeline"]
        self.assertEqual((timeline["steps"], timeline["other_order_steps"]), (1, 1))
        self.assertEqual([(i["name"], i["stream"]) for i in timeline["items"]],
                         [("forceKernel", "7"), ("forceKernel", "9"), ("updateKernel", "7")])
        self.assertEqual([(i["start_us"], i["end_us"]) for i in timeline["items"]],
                         [(0.0, 10.0), (1.0, 5.0), (11.0, 13.0)])
        self.assertIn("in start order", kernel_trace.steps_report({"MD step (CUDA graph)": graph}))

    def test_start_skew_pairs_each_kernel_with_the_other_ranks_nearest(self):
        # Rank 0 starts fusedForward at 0, 100, 200 µs; rank 1 at 3, 95, 260 µs, and another kernel in between.
        def trace(starts):
            return kernel_trace.Trace([{"kind": "kernel", "name": "fusedForward<Vec3>", "start": s * 1000,
                                        "end": s * 1000 + 5000, "stream": "1", "correlation": i}
                                       for i, s in enumerate(starts)]
                                      + [{"kind": "kernel", "name": "gatherKernel", "start": 50_000, "end": 51_000,
                                          "stream": "1", "correlation": 99}])
        skew = kernel_trace.start_skew(trace([0, 100, 200]), trace([3, 95, 260]), "fusedForward")
        self.assertEqual(skew["count"], 3)
        self.assertAlmostEqual(skew["median_us"], 3.0)
        self.assertAlmostEqual(skew["p10_us"], -5.0)
        self.assertAlmostEqual(skew["p90_us"], 60.0)
        self.assertIsNone(kernel_trace.start_skew(trace([0]), trace([1]), "reverse"))
        with self.assertRaises(SystemExit):
            kernel_trace.main(["one.csv", "--skew", "fusedForward"])

    def test_busy_time_is_a_union_clipped_to_the_range(self):
        self.assertEqual(kernel_trace.union_within([(0, 10), (5, 20), (30, 40)], 8, 35), 12 + 5)
        self.assertEqual(kernel_trace.union_within([], 0, 10), 0)

    def test_a_trace_without_ranges_says_what_to_set(self):
        path = os.path.join(self.tmp.name, "bare.csv")
        write(path, [row for row in search_step(0, 1) if row[0] != "range"])
        s = kernel_trace.summarize(kernel_trace.read_trace(path))
        self.assertEqual(s["search_steps"], 0)
        self.assertIn("NVTX_INJECTION64_PATH", kernel_trace.report(path, s))

    def test_a_file_that_is_not_a_trace_is_refused(self):
        path = os.path.join(self.tmp.name, "other.csv")
        with open(path, "w") as f:
            f.write("a,b\n1,2\n")
        with self.assertRaises(SystemExit) as e:
            kernel_trace.main([path])
        self.assertIn("not a haloex-kernel-trace CSV", str(e.exception))


if __name__ == "__main__":
    unittest.main()
