"""A Toil job as a Steward job file, and a Steward job's end as Toil's exit status
(steward.toil_mapping, the part of the Toil batch system that needs no Toil)."""

import unittest

from steward import toil_mapping
from steward.toil_mapping import job_spec, outcome

MIB = 1 << 20


def ended(state, exit_code=None, signal=None, reason=None, wall=2.5):
    usage = {"wallSeconds": wall, "signal": signal}
    attempt = {"number": 1, "exitCode": exit_code, "reason": reason, "usage": usage}
    return {"state": state, "tasks": [{"index": 0, "attempts": [attempt]}]}


class JobSpec(unittest.TestCase):
    def test_command_runs_with_bash_and_resources_are_whole_units(self):
        spec = job_spec("_toil_worker a b c", "CWLJob hello", 1.5, 300 * MIB + 1, 2048 * MIB, {"OMP_NUM_THREADS": "1"})
        self.assertEqual(spec["command"], ["bash", "-c", "_toil_worker a b c"])
        self.assertEqual(spec["resources"], {"cpus": 2, "memoryMb": 301})
        self.assertEqual(spec["requirements"], "host.diskFreeMb >= 2048.0")
        self.assertEqual(spec["env"], {"OMP_NUM_THREADS": "1"})
        self.assertEqual(spec["retry"], {"maxAttempts": 1})
        self.assertEqual(spec["name"], "toil-CWLJob hello")
        self.assertNotIn("qos", spec)

    def test_fractional_and_missing_cores_take_one_cpu(self):
        self.assertEqual(job_spec("x", "j", 0.1, 0, 0, {})["resources"], {"cpus": 1, "memoryMb": 0})
        self.assertEqual(job_spec("x", "j", 2.0, 0, 0, {})["resources"]["cpus"], 2)

    def test_disk_requirement_can_be_left_out_and_qos_given(self):
        spec = job_spec("x", "j", 1, MIB, 10 * MIB, {}, qos="high", disk_requirement=False)
        self.assertNotIn("requirements", spec)
        self.assertEqual(spec["qos"], "high")

    def test_environment_names_a_job_file_refuses_are_left_out(self):
        spec = job_spec("x", "j", 1, 0, 0, {"GOOD_1": "a", "1BAD": "b", "BAD-NAME": "c"})
        self.assertEqual(spec["env"], {"GOOD_1": "a"})

    def test_long_names_are_cut_to_the_limit(self):
        self.assertEqual(len(job_spec("x", "n" * 500, 1, 0, 0, {})["name"]), toil_mapping.NAME_LIMIT)


class Outcome(unittest.TestCase):
    def test_success(self):
        self.assertEqual(outcome(ended("succeeded", 0)), (0, "FINISHED", 2.5))

    def test_failure_keeps_the_exit_code(self):
        self.assertEqual(outcome(ended("failed", 3)), (3, "FAILED", 2.5))

    def test_a_signal_is_128_plus_its_number(self):
        self.assertEqual(outcome(ended("failed", None, signal=9))[0], 137)

    def test_memory_limit(self):
        self.assertEqual(outcome(ended("failed", 137, reason="memory limit reached"))[1], "MEMLIMIT")

    def test_cancelled_is_killed_and_never_zero(self):
        self.assertEqual(outcome(ended("cancelled", 0)), (255, "KILLED", 2.5))

    def test_no_attempt_is_unavailable(self):
        self.assertEqual(outcome({"state": "failed", "tasks": [{"attempts": []}]}), (255, "FAILED", None))


if __name__ == "__main__":
    unittest.main()
