"""The job SDK's file protocol, the same as src/common/sdk/index.js: checkpoint folder, atomic writes,
the gang's .generation declaration, progress and requirements files, the stop request."""

import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest
from unittest import mock

from steward import job

ENV_NAMES = [
    "STEWARD_CHECKPOINT_DIR",
    "STEWARD_PROGRESS_FILE",
    "STEWARD_REQUIREMENTS_FILE",
    "STEWARD_RESTARTED",
    "STEWARD_NODE_RANK",
    "STEWARD_NODE_COUNT",
    "STEWARD_NODES_FILE",
    "STEWARD_COORDINATOR",
    "STEWARD_TASK_PARAM",
]


class JobFiles(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="steward-py-")
        self.checkpoints = os.path.join(self.dir, "checkpoint")
        environ = {name: value for name, value in os.environ.items() if name not in ENV_NAMES}
        environ.update(
            STEWARD_CHECKPOINT_DIR=self.checkpoints,
            STEWARD_PROGRESS_FILE=os.path.join(self.dir, "notes", "progress"),
            STEWARD_REQUIREMENTS_FILE=os.path.join(self.dir, "notes", "requirements"),
        )
        patcher = mock.patch.dict(os.environ, environ, clear=True)
        patcher.start()
        self.addCleanup(patcher.stop)

    def read(self, *path):
        with open(os.path.join(self.dir, *path), "rb") as file:
            return file.read()

    def test_a_first_run_has_no_checkpoint_and_is_not_restarted(self):
        self.assertIsNone(job.load_checkpoint())
        self.assertIsNone(job.load_checkpoint("other.bin"))
        self.assertFalse(job.restarted())
        os.environ["STEWARD_RESTARTED"] = "1"
        self.assertTrue(job.restarted())

    def test_save_and_load_json_bytes_and_text(self):
        job.save_checkpoint({"step": 3, "values": [1.5, 2]})
        self.assertEqual(json.loads(self.read("checkpoint", "state.json")), {"step": 3, "values": [1.5, 2]})
        self.assertEqual(job.load_checkpoint(), {"step": 3, "values": [1.5, 2]})
        job.save_checkpoint(b"\x00\x01raw", "grid.bin")
        self.assertEqual(job.load_checkpoint("grid.bin"), b"\x00\x01raw")
        job.save_checkpoint("plain text", "note.txt")
        self.assertEqual(job.load_checkpoint("note.txt"), b"plain text")

    def test_a_save_is_atomic_and_leaves_no_temporary(self):
        job.save_checkpoint({"step": 1})
        renames = []
        real_replace = os.replace

        def replace(source, target):
            # At the rename the new state is whole in the temporary file, beside the old one.
            with open(source, "rb") as file:
                renames.append((os.path.basename(source), os.path.basename(target), file.read()))
            with open(target, "rb") as file:
                self.assertEqual(json.loads(file.read()), {"step": 1})
            real_replace(source, target)

        with mock.patch("os.replace", replace):
            job.save_checkpoint({"step": 2})
        self.assertEqual(renames, [(f"state.json.{os.getpid()}.tmp", "state.json", b'{"step": 2}')])
        self.assertEqual(sorted(os.listdir(self.checkpoints)), ["state.json"])

    def test_a_gang_rank_declares_its_generation_and_a_save_takes_it_back(self):
        job.save_checkpoint({"iteration": 10})
        job.checkpoint_generation(10)
        self.assertEqual(self.read("checkpoint", ".generation"), b"10")
        job.save_checkpoint({"iteration": 20})
        self.assertFalse(os.path.exists(os.path.join(self.checkpoints, ".generation")))
        job.checkpoint_generation(20)
        self.assertEqual(self.read("checkpoint", ".generation"), b"20")
        for wrong in (0, -1, 1.5, True, "3"):
            with self.assertRaises(TypeError):
                job.checkpoint_generation(wrong)

    def test_progress_is_a_fraction_clamped_to_0_1(self):
        job.progress(0.25)
        self.assertEqual(self.read("notes", "progress"), b"0.25")
        job.progress(7)
        self.assertEqual(float(self.read("notes", "progress")), 1.0)
        job.progress(-1)
        self.assertEqual(float(self.read("notes", "progress")), 0.0)
        for wrong in (float("nan"), float("inf"), "0.5", None):
            with self.assertRaises(TypeError):
                job.progress(wrong)
        del os.environ["STEWARD_PROGRESS_FILE"]
        job.progress(0.5)  # outside Steward: nowhere to write, no error

    def test_requirements_are_written_as_they_are(self):
        job.set_requirements('host.labels.zone == "b"')
        self.assertEqual(self.read("notes", "requirements"), b'host.labels.zone == "b"')
        with self.assertRaises(TypeError):
            job.set_requirements(42)

    def test_the_checkpoint_folder_outside_steward(self):
        del os.environ["STEWARD_CHECKPOINT_DIR"]
        self.assertEqual(job.checkpoint_dir(), os.path.join(os.getcwd(), ".steward-checkpoint"))

    def test_gang(self):
        self.assertEqual(
            job.gang(), {"rank": 0, "count": 1, "coordinator": None, "nodes": [], "nodes_file": None}
        )
        nodes = os.path.join(self.dir, "nodes")
        with open(nodes, "w") as file:
            file.write("10.0.0.1 slots=1 # h1 rank 0\n10.0.0.2 slots=1 # h2 rank 1\n")
        os.environ.update(
            STEWARD_NODE_RANK="1",
            STEWARD_NODE_COUNT="2",
            STEWARD_NODES_FILE=nodes,
            STEWARD_COORDINATOR="10.0.0.1:4000",
        )
        self.assertEqual(
            job.gang(),
            {
                "rank": 1,
                "count": 2,
                "coordinator": "10.0.0.1:4000",
                "nodes": ["10.0.0.1", "10.0.0.2"],
                "nodes_file": nodes,
            },
        )


STOP_SCRIPT = textwrap.dedent(
    """
    import sys, time
    from steward import job
    mode = sys.argv[1]
    if mode == "callback":
        def stop():
            job.save_checkpoint({"saved": True})
            print("saved", flush=True)
            sys.exit(0)
        job.on_stop(stop)
        print("ready", flush=True)
        while True:
            time.sleep(0.01)
    else:
        print(job.stop_requested(), flush=True)
        print("ready", flush=True)
        while not job.stop_requested():
            time.sleep(0.01)
        print("polled", flush=True)
    """
)


class StopRequest(unittest.TestCase):
    def run_until_sigterm(self, mode):
        folder = tempfile.mkdtemp(prefix="steward-py-stop-")
        env = dict(os.environ, STEWARD_CHECKPOINT_DIR=folder)
        child = subprocess.Popen(
            [sys.executable, "-c", STOP_SCRIPT, mode], stdout=subprocess.PIPE, env=env, text=True
        )
        lines = []
        while True:
            line = child.stdout.readline().strip()
            lines.append(line)
            if line == "ready":
                break
        time.sleep(0.05)
        child.send_signal(signal.SIGTERM)
        out, _ = child.communicate(timeout=10)
        return child.returncode, lines + out.split(), folder

    def test_on_stop_runs_the_callback_at_sigterm(self):
        code, lines, folder = self.run_until_sigterm("callback")
        self.assertEqual(code, 0)
        self.assertEqual(lines[-1], "saved")
        with open(os.path.join(folder, "state.json")) as file:
            self.assertEqual(json.load(file), {"saved": True})

    def test_stop_requested_turns_true_at_sigterm_instead_of_killing(self):
        code, lines, _ = self.run_until_sigterm("poll")
        self.assertEqual(code, 0)
        self.assertEqual(lines, ["False", "ready", "polled"])


class TaskParams(unittest.TestCase):
    CASES = [
        # (STEWARD_TASK_PARAM or None, task_param(), params())
        (None, None, {}),
        ("case-1.dat", "case-1.dat", {}),
        ("", "", {}),
        ('{"seed":7,"in-file":"a.dat","fast":true}', '{"seed":7,"in-file":"a.dat","fast":true}',
         {"seed": 7, "in-file": "a.dat", "fast": True}),
        ("[1, 2]", "[1, 2]", {}),
        ("{not json", "{not json", {}),
    ]

    def test_table(self):
        for value, text, mapping in self.CASES:
            environ = {name: v for name, v in os.environ.items() if name != "STEWARD_TASK_PARAM"}
            if value is not None:
                environ["STEWARD_TASK_PARAM"] = value
            with self.subTest(value=value), mock.patch.dict(os.environ, environ, clear=True):
                self.assertEqual(job.task_param(), text)
                self.assertEqual(job.params(), mapping)


if __name__ == "__main__":
    unittest.main()
